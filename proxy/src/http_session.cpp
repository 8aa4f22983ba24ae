// The request loop (http_session.hpp), for both of its streams: the plain one of the
// HTTP proxy door and of captured and SOCKS5 connections, and the TLS one of inspected
// connections. Its parts are in the .ipp files included below, compiled here once, with
// the two instantiations.
#include "http_session.hpp"

#include "admission_steps.hpp"
#include "audit_room.hpp"
#include "client_identity.hpp"
#include "credentials.hpp"
#include "first_flight.hpp"
#include "head_writer.hpp"
#include "headers.hpp"
#include "policy_answer.hpp"
#include "tunnel.hpp"
#include "upgraded_request.hpp"

#include "netbox/audit/printable.hpp"
#include "netbox/policy/decide_request.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

namespace netbox::proxy {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

template <class Stream>
HttpSession<Stream>::HttpSession(ProxyRuntime& impl, Worker& worker, tcp::socket socket, ClientSlot slot,
                                 std::optional<FixedDestination> fixed)
  requires(!kTls)
    : impl_(impl),
      worker_(worker),
      slot_(std::move(slot)),
      stream_(std::move(socket)),
      admission_(impl.own, impl.caps, impl.counters, impl.guardians),
      exchange_(impl),
      body_(stream_, buffer_, pieces_, [this](RequestBodyResult r) { on_body_sent(std::move(r)); }),
      relay_(stream_, pieces_, impl.counters, [this](RelayResult r) { on_relayed(std::move(r)); }),
      upgraded_(stream_, [this](std::string error) { on_upgraded_end(std::move(error)); }) {
  if (fixed) link_.fixed.emplace(std::move(*fixed));
  impl_.counters.active_connections.fetch_add(1);
}

template <class Stream>
HttpSession<Stream>::HttpSession(ProxyRuntime& impl, Worker& worker, Stream stream, FixedDestination fixed)
  requires(kTls)
    : impl_(impl),
      worker_(worker),
      stream_(std::move(stream)),
      admission_(impl.own, impl.caps, impl.counters, impl.guardians),
      exchange_(impl),
      body_(stream_, buffer_, pieces_, [this](RequestBodyResult r) { on_body_sent(std::move(r)); }),
      relay_(stream_, pieces_, impl.counters, [this](RelayResult r) { on_relayed(std::move(r)); }),
      upgraded_(stream_, [this](std::string error) { on_upgraded_end(std::move(error)); }) {
  link_.fixed.emplace(std::move(fixed));
  impl_.counters.active_connections.fetch_add(1);
}

template <class Stream>
HttpSession<Stream>::~HttpSession() {
  impl_.counters.active_connections.fetch_sub(1);
  // The connection's row is complete when the agent's connection ends; its requests' rows
  // carry the bytes. An inspected tunnel's row has the 200 its CONNECT was answered.
  if (link_.fixed) link_.fixed->connection.finish(kTls ? std::optional<int>(200) : std::nullopt);
}

template <class Stream>
void HttpSession<Stream>::start() {
  boost::system::error_code ec;
  auto& socket = beast::get_lowest_layer(stream_).socket();
  link_.peer = socket.remote_endpoint(ec);
  if (!ec) link_.peer_text = authority(canonical_address(link_.peer.address()).to_string(), link_.peer.port());
  if constexpr (kTls) {
    // Who the agent is was settled by the door that admitted the connection.
    const auto& scope = link_.fixed->scope;
    link_.who.agent = scope.agent;
    link_.who.tripwire = scope.tripwire;
    link_.peer_text = scope.client_addr;
    exchange_.connection(scope.agent, scope.client_addr, scope.metric_label, link_.fixed->connection.origin());
  } else {
    // Identity and policy are fixed per connection: a reload applies to new connections.
    auto who = identify_client(impl_, socket, link_.fixed ? "capture" : "http");
    if (!who) return;  // on an agent's own listener, from none of its addresses
    link_.who = std::move(*who);
    exchange_.connection(link_.who.agent, link_.peer_text, impl_.metric_label(link_.who), link_.who.origin);
  }
  // Without the agent's address (its connection already gone) no key can name the agent.
  if (!ec) link_.pool_scope = UpstreamPool::scope(link_.who.agent, link_.peer.address());
  bind_connection();
  read_request();
}

// The policy the connection starts under decides its requests; a FixedDestination's is
// the one its connection was admitted under.
template <class Stream>
void HttpSession<Stream>::bind_connection() {
  if (link_.fixed) {
    link_.policy = link_.fixed->scope.policy;
    link_.profile = link_.fixed->scope.profile;
    const auto& early = link_.fixed->early;
    buffer_.commit(asio::buffer_copy(buffer_.prepare(early.size()), asio::buffer(early)));
    link_.fixed->early.clear();
  } else {
    link_.policy = impl_.current_policy();
    link_.profile = link_.who.profile.empty() ? &link_.policy->base : &link_.policy->profile_for(link_.who.profile);
  }
  admission_.bind(*link_.policy, *link_.profile, link_.who);
}

}  // namespace netbox::proxy

#include "http_session_heads.ipp"
#include "http_session_decide.ipp"
#include "http_session_forward.ipp"
#include "http_session_close.ipp"

namespace netbox::proxy {

template class HttpSession<boost::beast::tcp_stream>;
template class HttpSession<AgentTlsStream>;

}  // namespace netbox::proxy
