#pragma once
// The upstream side of the request loop (http_session.hpp), plain or TLS: the stream
// type, how it is held, how it is pooled and how a new one is made. Plain: a dial of the
// admitted addresses. TLS (an inspected connection): the same dial, then a handshake with
// SNI and the host's name verified against the trust store (system roots plus
// --upstream-ca), TLS 1.2+, ALPN http/1.1; a certificate the trust store refuses ends it
// with 502 and OpenSSL's reason (expired, hostname mismatch, unknown issuer), never a
// silent pass. Pooled connections are kept per agent, address, port and host name (and,
// for TLS, trust store) by the worker's UpstreamPool.
#include "base/door_services.hpp"
#include "upstream/upstream_pool.hpp"

#include "netbox/policy/policy.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace netbox::proxy {

template <bool Tls>
struct UpstreamLink;

template <>
struct UpstreamLink<false> {
  using Stream = boost::beast::tcp_stream;
  using Holder = std::optional<boost::beast::tcp_stream>;
};

template <>
struct UpstreamLink<true> {
  using Stream = UpstreamPool::TlsStream;
  using Holder = std::unique_ptr<UpstreamPool::TlsStream>;
};

// A new upstream connection, or why there is none.
template <bool Tls>
struct UpstreamConnected {
  typename UpstreamLink<Tls>::Holder stream;
  boost::asio::ip::tcp::endpoint endpoint;  // the address connected (or last tried)
  unsigned failure_status = 0;              // 502, 503 or 504 when there is no stream
  std::string error;
};

// The pool key of a connection to `ep` for `host` (`tls`: verified against the inspector's
// trust store).
void upstream_key(std::string& out, std::string_view scope, const boost::asio::ip::tcp::endpoint& ep,
                  std::string_view host, bool tls, DoorServices& rt);
bool take_pooled(UpstreamPool& pool, const std::string& key, UpstreamLink<false>::Holder& into);
bool take_pooled(UpstreamPool& pool, const std::string& key, UpstreamLink<true>::Holder& into);
void put_pooled(UpstreamPool& pool, const std::string& key, UpstreamLink<false>::Holder& from);
void put_pooled(UpstreamPool& pool, const std::string& key, UpstreamLink<true>::Holder& from);
// Closes the connection with a reset, not a FIN: an upstream that got part of a request
// must not take it for a whole one.
void reset_upstream(UpstreamLink<false>::Holder& s);
void reset_upstream(UpstreamLink<true>::Holder& s);

// A new connection to one of `to` (the admitted addresses, in order), under the profile's
// limits; `done` runs from a completion handler.
void connect_plain(DoorServices& rt, Worker& worker, const std::vector<boost::asio::ip::tcp::endpoint>& to,
                   const policy::Limits& limits, std::function<void(UpstreamConnected<false>)> done);
void connect_tls(DoorServices& rt, Worker& worker, const std::vector<boost::asio::ip::tcp::endpoint>& to,
                 const policy::Limits& limits, const std::string& host,
                 std::function<void(UpstreamConnected<true>)> done);

template <bool Tls, class Done>
void connect_upstream_to(DoorServices& rt, Worker& worker, const std::vector<boost::asio::ip::tcp::endpoint>& to,
                         const policy::Limits& limits, const std::string& host, Done done) {
  if constexpr (Tls) connect_tls(rt, worker, to, limits, host, std::move(done));
  else connect_plain(rt, worker, to, limits, std::move(done));
}

}  // namespace netbox::proxy
