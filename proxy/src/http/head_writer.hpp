#pragma once
// HTTP/1.1 heads written as one flat text, for the forwarding path.
//
// Beast's serializer walks a message as a chain of small buffers (one per field name,
// separator and value) and hands them to the socket piece by piece; for a proxy that
// forwards tens of thousands of small messages a second that walk cost more CPU than the
// parsing. Here a head is appended to a string the session keeps (its capacity is reused
// from one request to the next) and goes out with the body in one gather write.
#include <boost/beast/http/message.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace netbox::proxy {

// How the request body goes upstream: none, a known length, or chunked (the agent's
// chunks, re-framed as the proxy relays them).
struct BodyFraming {
  enum class Kind { none, length, chunked } kind = Kind::none;
  std::uint64_t length = 0;
};

// The request as the upstream gets it: `req` without its hop-by-hop fields (HopByHop),
// X-Netbox-* fields, Expect (netbox answers it itself, once the request is admitted),
// Host and its own framing; then origin-form `target`, HTTP/1.1, Host `host`, and the
// framing `body` (Content-Length: 0 for a bodiless method that expects a body, as Beast's
// prepare_payload would give it).
void append_forwarded_request(std::string& out, const boost::beast::http::request_header<>& req,
                              std::string_view target, std::string_view host, BodyFraming body);

// The status line and fields of `res` as they stand (the caller has already removed the
// hop-by-hop fields and set its own framing and Connection).
void append_response_head(std::string& out, const boost::beast::http::response_header<>& res);

// The size line that opens a chunk of `size` bytes (chunked transfer coding).
void append_chunk_size(std::string& out, std::size_t size);

}  // namespace netbox::proxy
