#pragma once
// The agent's request head, checked byte by byte before Beast parses it, and the one
// place the request parser is set up (the session and tests/fuzz/fuzz_http_request.cpp
// both use it).
//
// Beast 1.81 alone is lenient where a proxy must not be: it unfolds obs-fold lines (so
// "Transfer-Encoding:\r\n chunked" reads as chunked), accepts two equal Content-Lengths
// and "Content-Length: 5, 5", takes "Chunked" and "identity, chunked" as chunked but
// "chunked, identity" as not, honours Transfer-Encoding on HTTP/1.0, and after a bare-LF
// line waits for a CRLFCRLF that never comes. Another parser on the path may read any of
// these differently, so netbox refuses them all with 400 and forwards only framing that
// has one reading.
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace netbox::proxy {

inline constexpr std::size_t kHeaderLimit = 64 * 1024;       // whole head; 431 above it
inline constexpr std::size_t kMaxHeaderFields = 100;         // header lines; 431 above it
inline constexpr std::size_t kMaxTargetLength = 8 * 1024;    // request target; 414 above it
inline constexpr std::uint64_t kRequestBodyLimit = 64ull * 1024 * 1024;  // 413 above it
// What a stream's read buffer may hold, agent's or upstream's: a whole head, or one read
// of body beyond what the parser took. Beast's limits count neither chunk extensions nor
// trailers (body_limit only the chunks' data), so an agent or an upstream sending one
// without end grew the buffer until the shared proxy ran out of memory; past this a read
// fails with http::error::buffer_overflow.
inline constexpr std::size_t kReadBufferLimit = kHeaderLimit + 64 * 1024;

// The session's parser streams the body in pieces (buffer_body), so no body is ever held
// whole and none is read before the request is decided; RequestParser keeps the body in
// a string (tests/fuzz). Both parse the same bytes the same way: only where the body's
// bytes go differs.
using StreamingRequestParser = boost::beast::http::request_parser<boost::beast::http::buffer_body>;
using RequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

// Header and body limits for a fresh parser of one agent request.
template <class Body>
void prepare_request_parser(boost::beast::http::request_parser<Body>& parser) {
  parser.header_limit(kHeaderLimit);
  parser.body_limit(kRequestBodyLimit);
}

struct HeadProblem {
  unsigned status = 400;  // 400, 414 or 431
  std::string reason;     // a sentence for X-Netbox-Reason and the audit row
};

class RequestHeadCheck {
 public:
  enum class State { need_more, complete, refused };

  // `bytes` is everything received for this request so far, from its first byte; only
  // what was not scanned before is looked at. Once complete or refused, the answer stays.
  State scan(std::string_view bytes);

  std::size_t head_size() const { return pos_; }  // when complete: up to the blank line
  const HeadProblem& problem() const { return problem_; }
  // From the request line, for the audit row of a refused request (empty if not seen).
  const std::string& method() const { return method_; }
  const std::string& target() const { return target_; }

 private:
  State refuse(unsigned status, std::string reason);
  State end_of_line(std::string_view line);
  State request_line(std::string_view line);
  State header_line(std::string_view line);
  State check_field(std::string_view line);
  State end_of_head();

  State state_ = State::need_more;
  std::size_t pos_ = 0;         // bytes scanned
  std::size_t line_start_ = 0;
  std::size_t lines_ = 0;       // complete lines so far, the request line included
  bool after_cr_ = false;
  bool http10_ = false;
  unsigned content_lengths_ = 0;
  unsigned transfer_encodings_ = 0;
  std::string method_;
  std::string target_;
  // A header line is judged when the next one starts, so that a folded continuation is
  // reported as the fold it is, not as the odd value it leaves behind.
  std::string pending_field_;
  HeadProblem problem_;
};

// Whether a request's method is one of `set`: the proxy's method lists (handled,
// idempotent, body-consuming) read as lists.
constexpr bool verb_in(boost::beast::http::verb v, std::initializer_list<boost::beast::http::verb> set) {
  for (auto x : set)
    if (x == v) return true;
  return false;
}

// The methods netbox forwards (or tunnels, CONNECT); any other gets 405.
constexpr bool handled_method(boost::beast::http::verb v) {
  using enum boost::beast::http::verb;
  return verb_in(v, {get, head, post, put, delete_, patch, options, connect});
}

// RFC 9110 9.2.2: a request that may be sent again when its connection closed before
// the answer. Any other (POST, PATCH) may have had its effect already: never resent.
constexpr bool idempotent(boost::beast::http::verb v) {
  using enum boost::beast::http::verb;
  return verb_in(v, {get, head, options, trace, put, delete_});
}

// Methods whose body every server reads. After any other request with a body (GET,
// DELETE, OPTIONS ...), an upstream may have left the body unread, to be taken as the
// next request on the connection.
constexpr bool consumes_body(boost::beast::http::verb v) {
  using enum boost::beast::http::verb;
  return verb_in(v, {post, put, patch});
}

// A plain-language reason for a Beast parse error of the request (head or body).
std::string describe_request_error(const boost::beast::error_code& ec);

}  // namespace netbox::proxy
