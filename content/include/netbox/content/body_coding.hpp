#pragma once
// A request body as the server will read it: the Content-Encoding an agent put on it
// taken off (gzip, deflate), with a bound, so that body rules check what the server acts
// on and a small compressed body cannot make the proxy hold an unbounded one (a body
// bomb). Codings netbox does not read are refused, never passed unchecked.
#include <cstddef>
#include <string>
#include <string_view>
#include <variant>

namespace netbox::content {

struct CodingRefusal {
  std::string reason;
  bool too_large = false;  // it decodes (or is) past the limit; else it cannot be decoded
};

// `coding` is the Content-Encoding header's value ("" or "identity": the body as is).
// One coding only: gzip (x-gzip), deflate (a zlib stream, or raw deflate as some clients
// send). The decoded body is at most `limit` bytes; a larger one is refused.
std::variant<std::string, CodingRefusal> decode_body(std::string_view coding, std::string_view body,
                                                     std::size_t limit);

}  // namespace netbox::content
