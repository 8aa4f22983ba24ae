#pragma once
// One inspected request to its upstream over a verified TLS connection: an idle one from
// the worker's pool (upstream_pool.hpp: same agent, address, port, host name and trust
// store), or a new one: dial the addresses admission let through, handshake with SNI and
// the host's name verified against the trust store (system roots plus --upstream-ca),
// TLS 1.2+, ALPN http/1.1. Send the request; read the whole answer. A certificate the
// trust store refuses ends it with 502 and OpenSSL's reason (expired, hostname mismatch,
// unknown issuer): never a silent pass. The connection goes back to the pool only after
// a complete answer that allows keep-alive and leaves nothing unread; a pooled connection
// that closed before any answer is replaced by a new dial when the request may be sent
// again (idempotent, like plain HTTP). Everything is asynchronous; one timer ends the
// exchange after idle_timeout of silence (no byte read or written), however long an
// answer that keeps arriving streams.
#include "dialer.hpp"
#include "inspector.hpp"
#include "upstream_pool.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace netbox::proxy {

struct UpstreamAnswer {
  std::optional<boost::beast::http::response<boost::beast::http::string_body>> response;
  std::optional<std::uint64_t> content_length;  // as the upstream framed it (for HEAD)
  std::string transfer_codings;  // still on the body once de-chunked ("gzip"): remaining_transfer_codings
  unsigned failure_status = 0;  // 502, 503 or 504 when there is no response
  std::string error;            // why, for the agent and the row
  std::string address;          // the address dialled
};

struct UpstreamTlsRequest {
  std::vector<boost::asio::ip::tcp::endpoint> endpoints;
  std::string host;          // for SNI and verification: a name or an IP literal
  std::string bytes;         // the request, head and body, as it goes upstream
  bool head = false;         // a HEAD: the answer has no body whatever its framing says
  bool may_resend = false;   // idempotent: sent again on a new connection if a pooled one had closed
  bool may_pool = false;     // the upstream reads all of the request (no body, or a method that has one)
  UpstreamPool* pool = nullptr;  // the worker's; none: one connection per request
  std::string pool_scope;        // UpstreamPool::scope of the agent
  DialLimits dial;
  std::chrono::milliseconds idle_timeout;  // the longest silence, after the dial
  std::uint64_t body_limit;
};

void fetch_over_tls(boost::asio::io_context& ioc, Inspector& inspector, UpstreamTlsRequest request,
                    std::function<void(UpstreamAnswer)> done);

}  // namespace netbox::proxy
