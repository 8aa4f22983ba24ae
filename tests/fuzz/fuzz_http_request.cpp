// An agent's request head as the proxy reads it (proxy/src/http/http_session.cpp,
// ClientSession::read_request/take_head): Beast's request_parser with the session's
// header and body limits, then the target (absolute-form, or authority-form for CONNECT),
// then the host normaliser and the name decision, then the hop-by-hop header strip
// applied before forwarding. Invariants (a violation aborts):
//  - the bytes read in small pieces (as TCP delivers them) are accepted as the same
//    request, ending at the same byte, as read at once, or refused both ways: a request
//    is never read two ways, and a pipelined next request starts at one place;
//  - a parsed message never has both a chunked Transfer-Encoding and a Content-Length;
//  - a usable target has a host and a port 1-65535, an origin-form path starting with
//    '/' and no fragment, and its authority() reads back as the same host and port;
//  - a bracketed host is an IPv6 literal, never a name (an open finding, see below);
//  - after strip_hop_by_hop no Connection, Transfer-Encoding, TE, Upgrade, Keep-Alive,
//    Trailer or Proxy-* field, nor any field Connection named, is left.
#include "http/headers.hpp"
#include "http/request_head.hpp"
#include "pipeline/target.hpp"

#include "netbox/policy/decide.hpp"
#include "netbox/policy/host.hpp"
#include "netbox/policy/load.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <boost/beast/http/string_body.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace http = boost::beast::http;
using Request = http::request<http::string_body>;

[[noreturn]] void violated(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_http_request invariant: %s\n  %s\n", what, detail.c_str());
  std::abort();
}

struct Reading {
  boost::beast::error_code ec;  // the parse error, if any
  bool complete = false;        // header and body read
  std::size_t consumed = 0;     // where the next pipelined request would start
  std::optional<Request> request;
};

// Feeds `bytes` in pieces of at most `piece` bytes; whatever the parser does not
// consume stays in front of the next piece, like the session's flat_buffer.
Reading read_request(std::string_view bytes, std::size_t piece) {
  netbox::proxy::RequestParser parser;
  netbox::proxy::prepare_request_parser(parser);  // the session's set-up (request_head.cpp)
  parser.eager(true);
  Reading r;
  std::size_t start = 0;      // first byte not yet consumed
  std::size_t available = 0;  // bytes delivered so far
  while (!parser.is_done()) {
    available = std::min(bytes.size(), available + piece);
    auto n = parser.put(boost::asio::buffer(bytes.data() + start, available - start), r.ec);
    start += n;
    if (r.ec == http::error::need_more) {
      r.ec = {};
      if (available == bytes.size()) break;  // the agent stopped sending: the session would time out
      continue;
    }
    if (r.ec) break;
    // A partial chunk body is consumed without need_more: stop once all input is used.
    if (start == bytes.size() || (n == 0 && available == bytes.size())) break;
  }
  r.complete = parser.is_done();
  r.consumed = start;
  if (parser.is_header_done()) {
    if (parser.chunked() && parser.get().count(http::field::content_length) > 0)
      violated("chunked and Content-Length both accepted", std::string(parser.get().target()));
    r.request = parser.release();
  }
  return r;
}

std::string describe(const Reading& r) {
  std::string s = r.ec ? "error '" + r.ec.message() + "'" : std::string("ok");
  s += r.complete ? ", complete" : ", incomplete";
  if (r.request) {
    s += ", " + std::string(r.request->method_string()) + " " + std::string(r.request->target());
    s += ", body " + std::to_string(r.request->body().size()) + " bytes, " + std::to_string(r.consumed) + " consumed";
  }
  return s;
}

bool accepted(const Reading& r) { return !r.ec && r.complete && r.request; }

// A request accepted one way must be accepted the other way too, as the same request.
// Refusals may differ: Beast rejects a bare-LF head at once when it arrives whole ("bad
// version"), but in pieces it waits for a CRLFCRLF that never comes, so the session
// closes it at the read timeout instead; either way nothing is forwarded.
bool same_reading(const Reading& a, const Reading& b) {
  if (!accepted(a) && !accepted(b)) return true;
  if (accepted(a) != accepted(b)) return false;
  const Request& x = *a.request;
  const Request& y = *b.request;
  return a.consumed == b.consumed && x.method_string() == y.method_string() && x.target() == y.target() &&
         x.version() == y.version() && x.body() == y.body();
}

const netbox::policy::Profile& fixture_profile() {
  static const netbox::policy::Policy p = netbox::policy::parse_policy(R"({
    "version": 1,
    "allow": ["example.com", "*.example.org", "203.0.113.0/24"],
    "deny": ["*.evil.example.org"],
    "internal": { "allow": ["127.0.0.1/32"] }
  })", "fuzz-fixture.json");
  return p.base;
}

void check_target(const netbox::proxy::Target& t, bool connect, std::string_view raw) {
  if (!t.error.empty()) return;
  const std::string where(raw);
  if (t.host.empty()) violated("usable target without a host", where);
  if (t.port == 0) violated("usable target with port 0", where);
  if (!connect) {
    if (t.path_and_query.empty() || t.path_and_query.front() != '/') violated("path does not start with '/'", where);
    if (t.path_and_query.find('#') != std::string::npos) violated("fragment forwarded upstream", where);
    if (t.path_and_query.compare(0, t.path.size(), t.path) != 0) violated("path is not a prefix of path_and_query", where);
    if (t.path.find('?') != std::string::npos) violated("query left in the audit path", where);
  }
}

void check_stripped(const Request& original) {
  Request copy = original;
  std::vector<std::string> named;
  for (auto it = original.find(http::field::connection);
       it != original.end() && it->name() == http::field::connection; ++it)
    for (auto token : http::token_list(it->value())) named.emplace_back(token);
  netbox::proxy::strip_hop_by_hop(copy);
  for (const auto& f : copy) {
    const auto name = f.name_string();
    for (auto hop : {"connection", "transfer-encoding", "te", "upgrade", "keep-alive", "trailer"})
      if (boost::beast::iequals(name, hop)) violated("hop-by-hop field forwarded", std::string(name));
    if (name.size() >= 6 && boost::beast::iequals(name.substr(0, 6), "proxy-"))
      violated("Proxy-* field forwarded", std::string(name));
    for (const auto& n : named)
      if (boost::beast::iequals(name, n)) violated("field named in Connection forwarded", std::string(name));
  }
}

// The session's byte-level head check (request_head.cpp) must not depend on how the bytes
// arrive, and a head it passes must have exactly one framing when Beast reads it.
netbox::proxy::RequestHeadCheck::State scan_in_pieces(std::string_view bytes, std::size_t piece,
                                                      netbox::proxy::RequestHeadCheck& check) {
  using State = netbox::proxy::RequestHeadCheck::State;
  State st = State::need_more;
  for (std::size_t end = std::min(piece, bytes.size()); st == State::need_more; end = std::min(end + piece, bytes.size())) {
    st = check.scan(bytes.substr(0, end));
    if (end == bytes.size()) break;
  }
  return st;
}

void check_head(std::string_view bytes, const Reading& whole) {
  using State = netbox::proxy::RequestHeadCheck::State;
  netbox::proxy::RequestHeadCheck at_once, in_pieces;
  const State a = at_once.scan(bytes);
  const State b = scan_in_pieces(bytes, 3, in_pieces);
  if (a != b || (a == State::complete && at_once.head_size() != in_pieces.head_size()) ||
      (a == State::refused && at_once.problem().status != in_pieces.problem().status))
    violated("head check differs at once and in pieces", std::string(bytes.substr(0, 200)));
  if (a != State::complete || !accepted(whole)) return;
  const Request& req = *whole.request;
  std::size_t lengths = 0, encodings = 0;
  for (const auto& f : req) {
    if (f.name() == http::field::content_length) ++lengths;
    if (f.name() == http::field::transfer_encoding) {
      ++encodings;
      if (f.value() != "chunked") violated("head check passed a Transfer-Encoding other than chunked", std::string(f.value()));
    }
  }
  if (lengths > 1 || encodings > 1 || (lengths && encodings))
    violated("head check passed ambiguous framing", std::string(bytes.substr(0, 200)));
  if (encodings && req.version() != 11) violated("head check passed Transfer-Encoding on HTTP/1.0", std::string(bytes.substr(0, 200)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const Reading whole = read_request(bytes, bytes.size() + 1);
  const Reading pieces = read_request(bytes, 7);
  if (!same_reading(whole, pieces))
    violated("read at once and in pieces differ", describe(whole) + " vs " + describe(pieces));

  check_head(bytes, whole);
  if (!accepted(whole)) return 0;
  const Request& req = *whole.request;
  check_stripped(req);
  if (!netbox::proxy::handled_method(req.method())) return 0;  // 405

  const bool connect = req.method() == http::verb::connect;
  const auto raw_target = req.target();
  const auto t = connect ? netbox::proxy::parse_connect_target(raw_target)
                         : netbox::proxy::parse_absolute_target(raw_target);
  check_target(t, connect, raw_target);
  if (!t.error.empty()) return 0;  // 400 with the reason

  const auto parsed = netbox::policy::parse_host(t.host);
  if (!parsed) return 0;  // 400: the host is not valid
  const auto& host = *parsed.host;
  std::string_view auth = raw_target;
  if (!connect) auth = auth.substr(7, auth.substr(7).find_first_of("/?#"));  // after "http://"
  // RFC 3986 allows brackets only around an IP literal; "[example.com]" is read by
  // other parsers as an error, so taking it as a name is reading a request two ways.
  if (auth.find('[') != std::string_view::npos && !host.is_ip())
    violated("a bracketed host was read as a name", std::string(raw_target));

  // The authority netbox writes (Host header, audit) reads back as the same destination.
  const auto back = netbox::proxy::parse_connect_target(netbox::proxy::authority(t.host, t.port));
  if (!back.error.empty() || back.host != t.host || back.port != t.port)
    violated("authority() does not read back", netbox::proxy::authority(t.host, t.port));

  const auto d = netbox::policy::decide_name(fixture_profile(), host, t.port);
  if (d.verdict == netbox::policy::Verdict::deny && d.reason.empty())
    violated("deny without a reason", std::string(raw_target));
  return 0;
}
