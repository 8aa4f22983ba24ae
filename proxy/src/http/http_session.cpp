// The request loop (http_session.hpp), for both of its streams: the plain one of the
// HTTP proxy door and of captured and SOCKS5 connections, and the TLS one of inspected
// connections. Its parts are in the .ipp files included below, compiled here once, with
// the two instantiations.
#include "http/http_session.hpp"

#include "netbox/proxy/endpoint.hpp"

#include "pipeline/admission_steps.hpp"
#include "pipeline/audit_room.hpp"
#include "pipeline/client_tokens.hpp"
#include "inspect/credentials.hpp"
#include "doors/first_flight.hpp"
#include "http/head_writer.hpp"
#include "http/headers.hpp"
#include "pipeline/policy_answer.hpp"
#include "pipeline/target_step.hpp"
#include "upstream/tunnel.hpp"
#include "http/upgraded_request.hpp"

#include "netbox/audit/printable.hpp"
#include "netbox/tokens/proxy_credential.hpp"
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
HttpSession<Stream>::HttpSession(DoorServices& impl, Worker& worker, tcp::socket socket, ClientSlot slot)
  requires(!kTls)
    : impl_(impl),
      worker_(worker),
      stream_(std::move(socket)),
      admission_(impl.own, impl.caps, impl.counters, impl.guardians),
      exchange_(impl),
      body_(stream_, buffer_, pieces_, [this](RequestBodyResult r) { on_body_sent(std::move(r)); }),
      relay_(stream_, pieces_, impl.counters, [this](RelayResult r) { on_relayed(std::move(r)); }),
      upgraded_(stream_, [this](std::string error) { on_upgraded_end(std::move(error)); }) {
  link_.slot = std::move(slot);
  impl_.counters.active_connections.fetch_add(1);
}

template <class Stream>
HttpSession<Stream>::HttpSession(DoorServices& impl, Worker& worker, tcp::socket socket, AgentConnection connection,
                                 FixedDestination fixed)
  requires(!kTls)
    : HttpSession(impl, worker, std::move(socket), ClientSlot()) {
  static_cast<AgentConnection&>(link_) = std::move(connection);
  link_.fixed.emplace(std::move(fixed));
}

template <class Stream>
HttpSession<Stream>::HttpSession(DoorServices& impl, Worker& worker, tcp::socket socket, AgentConnection connection,
                                 std::optional<policy::Decision> refused)
  requires(!kTls)
    : HttpSession(impl, worker, std::move(socket), ClientSlot()) {
  static_cast<AgentConnection&>(link_) = std::move(connection);
  link_.bridged = true;
  link_.refused_identity = std::move(refused);
}

template <class Stream>
HttpSession<Stream>::HttpSession(DoorServices& impl, Worker& worker, Stream stream, FixedDestination fixed)
  requires(kTls)
    : impl_(impl),
      worker_(worker),
      stream_(std::move(stream)),
      admission_(impl.own, impl.caps, impl.counters, impl.guardians),
      exchange_(impl),
      body_(stream_, buffer_, pieces_, [this](RequestBodyResult r) { on_body_sent(std::move(r)); }),
      relay_(stream_, pieces_, impl.counters, [this](RelayResult r) { on_relayed(std::move(r)); }),
      upgraded_(stream_, [this](std::string error) { on_upgraded_end(std::move(error)); }) {
  // Who the agent is, and under which policy, was settled by the door that admitted the
  // connection; its slot is the connection row's.
  const auto& scope = fixed.scope;
  link_.who.agent = scope.agent;
  link_.who.tripwire = scope.tripwire;
  link_.who.origin = fixed.connection.origin();  // the process its door found (attribution.hpp)
  link_.peer_text = scope.client_addr;
  link_.metric_label = scope.metric_label;
  link_.policy = scope.policy;
  link_.profile = scope.profile;
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

// A connection a door opened and admitted starts at once; the HTTP listener's is opened
// here, as every door's is (agent_connection.hpp).
template <class Stream>
void HttpSession<Stream>::start() {
  if (link_.fixed || link_.bridged) return bind_connection();
  if constexpr (!kTls) {
    open_agent_connection(impl_, stream_.socket(), link_.slot, DoorKind::http,
                          [self = this->shared_from_this()](AgentConnection c) {
                            static_cast<AgentConnection&>(self->link_) = std::move(c);
                            self->bind_connection();
                          });
  }
}

template <class Stream>
void HttpSession<Stream>::bind_connection() {
  boost::system::error_code ec;
  if (!link_.bridged) link_.peer = beast::get_lowest_layer(stream_).socket().remote_endpoint(ec);
  // Without the agent's address (its connection already gone) no key can name the agent.
  if (!ec) link_.pool_scope = UpstreamPool::scope(link_.who.agent, link_.peer.address());
  if (link_.fixed) {  // bytes its door read already
    const auto& early = link_.fixed->early;
    buffer_.commit(asio::buffer_copy(buffer_.prepare(early.size()), asio::buffer(early)));
    link_.fixed->early.clear();
  }
  link_.bind(admission_, exchange_);
  read_request();
}

}  // namespace netbox::proxy

#include "http/http_session_heads.ipp"
#include "http/http_session_decide.ipp"
#include "http/http_session_forward.ipp"
#include "http/http_session_close.ipp"

namespace netbox::proxy {

template class HttpSession<boost::beast::tcp_stream>;
template class HttpSession<AgentTlsStream>;

}  // namespace netbox::proxy
