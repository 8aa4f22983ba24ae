#include "transparent_session.hpp"

#include <unistd.h>

#include "netbox/tls/client_hello.hpp"

#include "netbox/proxy/endpoint.hpp"

#include "netbox/policy/decide_request.hpp"

#include "accept_loop.hpp"
#include "agent_sockets.hpp"
#include "audit_room.hpp"
#include "admission_steps.hpp"
#include "client_identity.hpp"
#include "denial.hpp"
#include "http_session.hpp"
#include "inspected_tunnel.hpp"
#include "original_destination.hpp"
#include "policy_answer.hpp"
#include "tunnel.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/write.hpp>

#include <cctype>
#include <sstream>

namespace netbox::proxy {

namespace asio = boost::asio;
namespace ip = boost::asio::ip;
using tcp = ip::tcp;

TransparentSession::TransparentSession(ProxyRuntime& rt, Worker& w, tcp::socket s, ClientSlot slot)
    : rt_(rt),
      worker_(w),
      client_(std::move(s)),
      timer_(client_.get_executor()),
      slot_(std::move(slot)),
      admission_(rt.own, rt.caps, rt.counters, rt.guardians),
      exchange_(rt) {
  rt_.counters.active_connections.fetch_add(1);
}

TransparentSession::~TransparentSession() {
  rt_.counters.active_connections.fetch_sub(1);
  if (held_ && view_) view_->release(*held_);
}

void TransparentSession::start() {
  // Back pressure, as on every door: the connection's row waits for room, and so does the agent.
  if (!audit_room_or_wait(*rt_.writer, client_.get_executor(), [self = shared_from_this()] { self->start(); }))
    return;
  boost::system::error_code ec;
  const auto peer = client_.remote_endpoint(ec);
  if (ec) return reset();
  auto who = identify_client(rt_, client_, "capture");
  if (!who) return;  // on an agent's own listener, from none of its addresses
  who_ = std::move(*who);
  policy_ = rt_.current_policy();
  profile_ = who_.profile.empty() ? &policy_->base : &policy_->profile_for(who_.profile);
  admission_.bind(*policy_, *profile_, who_);
  peer_text_ = endpoint_text(peer);
  exchange_.connection(who_.agent, peer_text_, rt_.metric_label(who_), who_.origin);
  exchange_.begin();
  exchange_.request(true, "");
  exchange_.kind("transparent");

  const auto dst = original_destination(client_);
  view_ = rt_.dns_view_of(who_.netns ? netns_key(who_.netns) : peer.address());
  if (!dst) {
    exchange_.target("", 0, {});
    return refuse({403, Outcome::error, {}, "request", "the connection's original destination is unknown", {}});
  }
  original_ = *dst;
  if (view_ && view_->is_synthetic(dst->address())) {
    auto name = view_->hold(dst->address());
    if (!name) {
      exchange_.target(dst->address().to_string(), dst->port(), {});
      return refuse({403, Outcome::deny, {}, "dns",
                     dst->address().to_string() + " stands for no name now (its DNS answer expired); look the name up "
                                                  "again",
                     {}});
    }
    held_ = dst->address();
    name_ = *name;
  }
  const std::string host = name_.empty() ? dst->address().to_string() : name_;
  exchange_.target(host, dst->port(), {});
  auto parsed = policy::parse_host(host);
  if (!parsed) return refuse({403, Outcome::error, {}, "host", parsed.error.message, {}});
  host_ = *parsed.host;
  exchange_.host(host_.name);
  inspected_ = policy::inspects(*profile_, host_.name, dst->port());
  read_first_flight(client_, timer_, profile_->limits.header_timeout,
                    agent_must_speak_first(original_.port(), inspected_),
                    [self = shared_from_this()](FirstFlight f) { self->judge_first_flight(std::move(f)); });
}

void TransparentSession::judge_first_flight(FirstFlight f) {
  flight_ = f.kind;
  if (!f.error.empty())
    return refuse({403, Outcome::error, {}, "request", "the connection sent no complete first message in time", {}},
                  std::move(f.error));
  // Fronting: a TLS hello or a Host header naming another host than the one this
  // address was looked up as (a literal is checked for a whole head only).
  if (auto no = check_first_flight(f, host_, "the name this address was looked up as")) return refuse(*no);
  early_ = std::move(f.bytes);
  admit();
}

void TransparentSession::admit() {
  decide(admission_, worker_, rt_.counters, host_, original_.port(),
         [self = shared_from_this()](AdmissionResult r) { self->act_on(std::move(r)); });
}

void TransparentSession::act_on(AdmissionResult result) {
  if (auto* no = std::get_if<Refused>(&result)) {
    exchange_.refused(*no);
    return refuse(no->refusal, std::move(no->error));
  }
  auto& yes = std::get<Admitted>(result);
  // As for CONNECT: a blind tunnel to a host some rule names would carry requests no
  // rule could check; an inspected host's requests, and plain HTTP's, are decided inside.
  auto t = policy::decide_tunnel(*profile_, {host_.name, original_.port(), yes.decision},
                                 flight_ == Flight::http ? policy::Carried::plain_http : policy::Carried::opaque);
  if (auto no = take_decision(yes, std::move(t.decision), t.status)) {
    exchange_.refused(*no);
    return refuse(no->refusal);
  }
  decided_outcome_ = yes.outcome;
  decided_ = yes.decision;
  // A row the store did not take is no connection (the agent sees a reset).
  open_row(rt_, exchange_, yes, allowed_, host_.name, who_.agent, client_.get_executor(),
           [self = shared_from_this()](std::string unaudited) {
             if (!unaudited.empty()) return self->reset();
             self->go_on();
           });
}

void TransparentSession::go_on() {
  if (flight_ == Flight::http) return start_requests();
  if (inspected_) return start_inspection();
  dial_admitted(rt_, worker_, allowed_, profile_->limits,
                [self = shared_from_this()](DialResult r) { self->on_dialed(std::move(r)); });
}

void TransparentSession::on_dialed(DialResult r) {
  if (r.failure != DialFailure::none) {
    rt_.counters.upstream_errors.fetch_add(1);
    exchange_.finish(std::nullopt, r.error, true);
    return reset();
  }
  exchange_.dialled(r.endpoint.address().to_string());
  exchange_.client_slot = std::move(slot_);
  exchange_.settle();
  // The tunnel answers nothing: the agent believes it is connected to its destination.
  auto t = std::make_shared<Tunnel>(rt_, std::move(client_), std::move(r.socket), std::move(early_), std::move(exchange_),
                                    profile_->limits.idle_timeout);
  t->start(false);
}

// The host is inspected: netbox terminates the agent's TLS, exactly as for an inspected
// CONNECT (inspected_tunnel.hpp), with nothing answered first: the agent believes it
// reached its destination. The ClientHello read here is the tunnel's first bytes.
void TransparentSession::start_inspection() {
  // The policy guard lets `inspect` in only with a CA; never a blind tunnel instead.
  if (!rt_.inspector) {
    const std::string why = "netbox has no CA loaded to inspect " + host_.name;
    exchange_.finish(503, why, true);
    return reset();
  }
  exchange_.client_slot = std::move(slot_);
  InspectionScope scope{policy_, profile_, host_, original_.port(), allowed_, decided_outcome_, decided_,
                        who_.agent, peer_text_, rt_.metric_label(who_), who_.tripwire, !name_.empty()};
  auto t = std::make_shared<InspectedTunnel>(rt_, worker_, std::move(client_), std::string(), std::move(early_),
                                             std::move(exchange_), std::move(scope));
  t->start();
}

// Plain HTTP: the connection's row opens under the admission, and each request inside is
// read, decided with `rules` and forwarded by the proxy's own request loop, one row each
// (http_session.hpp, FixedDestination), starting with the head already read.
void TransparentSession::start_requests() {
  FixedDestination fixed{"transparent",
                         {policy_, profile_, host_, original_.port(), std::move(allowed_), decided_outcome_,
                          std::move(decided_), who_.agent, peer_text_, rt_.metric_label(who_), who_.tripwire, !name_.empty()},
                         std::move(exchange_), std::move(early_), std::nullopt};
  std::make_shared<ClientSession>(rt_, worker_, std::move(client_), std::move(slot_), std::move(fixed))->start();
}

void TransparentSession::refuse(const Refusal& r, std::string error) {
  exchange_.refuse(r, error.empty() ? r.reason : std::move(error));
  if (flight_ != Flight::http) return reset();
  // Plain HTTP gets the answer every proxied request gets: a status and X-Netbox-Reason.
  Refusal shown = r;
  shown.what = host_.name + ":" + std::to_string(original_.port());
  const auto res = make_refusal(shown, 11, false);
  std::ostringstream out;
  out << res;
  answer_ = std::make_shared<std::string>(out.str());
  asio::async_write(client_, asio::buffer(*answer_), [self = shared_from_this()](boost::system::error_code,
                                                                                  std::size_t) {
    boost::system::error_code ignored;
    self->client_.shutdown(tcp::socket::shutdown_send, ignored);
    self->client_.close(ignored);
  });
}

// A reset, not a close: the agent's program sees "connection refused/reset" at once.
void TransparentSession::reset() {
  boost::system::error_code ignored;
  client_.set_option(asio::socket_base::linger(true, 0), ignored);
  client_.close(ignored);
}

TransparentListener::TransparentListener(ProxyRuntime& rt, Worker& w, const ip::address& host, unsigned short port)
    : rt_(rt), worker_(w), acceptor_(w.ioc) {
  try {
    const tcp::endpoint ep(host, port);
    acceptor_.open(ep.protocol());
    acceptor_.bind(ep);
    acceptor_.listen();
    bound_ = acceptor_.local_endpoint();
  } catch (const boost::system::system_error& e) {
    throw std::runtime_error("cannot listen for captured connections on " + host.to_string() + ": " +
                             e.code().message());
  }
  rt_.protect(bound_);  // never a destination, like every listener
  protected_ = true;
}

TransparentListener::TransparentListener(ProxyRuntime& rt, Worker& w, int fd) : rt_(rt), worker_(w), acceptor_(w.ioc) {
  try {
    acceptor_.assign(socket_family(fd) == AF_INET6 ? tcp::v6() : tcp::v4(), fd);
    bound_ = acceptor_.local_endpoint();
  } catch (const boost::system::system_error& e) {
    ::close(fd);
    throw std::runtime_error("the agent's capture socket: " + e.code().message());
  }
}

void TransparentListener::start() {
  asio::post(worker_.ioc, [self = shared_from_this()] { self->accept(); });
}

void TransparentListener::stop() {
  if (protected_) {
    rt_.own.remove(bound_);
    rt_.publish_endpoints();
  }
  // At once on its own thread (see DnsView::stop), else posted there.
  asio::dispatch(worker_.ioc, [self = shared_from_this()] {
    boost::system::error_code ignored;
    self->acceptor_.close(ignored);
  });
}

void TransparentListener::accept() {
  accept_with_backoff(rt_, acceptor_, "capture", shared_from_this(), [this](tcp::socket s) {
    boost::system::error_code peer_ec;
    const auto peer = s.remote_endpoint(peer_ec);
    auto slot = acquire_client_slot(rt_, s, peer.address());
    if (peer_ec || !slot.slot) {
      rt_.counters.client_connections_refused.fetch_add(1);
      boost::system::error_code ignored;
      s.set_option(asio::socket_base::linger(true, 0), ignored);
      s.close(ignored);
      return;
    }
    boost::system::error_code ignored;
    s.set_option(tcp::no_delay(true), ignored);
    hand_over(std::move(s), std::move(slot.slot));
  });
}

// One acceptor, but the sessions take the io threads in turn, as the other listeners'
// SO_REUSEPORT acceptors spread theirs: on one thread, every captured connection of an
// agent would share one core while its CONNECTs use them all. The socket moves to the
// chosen worker's context on that worker's thread (only it may touch its sockets).
void TransparentListener::hand_over(tcp::socket s, ClientSlot slot) {
  Worker& w = *rt_.workers[next_worker_++ % rt_.workers.size()];
  if (&w == &worker_)
    return std::make_shared<TransparentSession>(rt_, worker_, std::move(s), std::move(slot))->start();
  boost::system::error_code ec;
  const auto protocol = s.local_endpoint(ec).protocol();
  const int fd = ec ? -1 : s.release(ec);
  if (ec || fd < 0) return;  // `s` closes itself; the agent sees the connection reset
  // Shared, since a posted handler is copied; the slot moves into the session once.
  auto held = std::make_shared<ClientSlot>(std::move(slot));
  asio::post(w.ioc, [self = shared_from_this(), &w, protocol, fd, held] {
    tcp::socket moved(w.ioc);
    boost::system::error_code e;
    moved.assign(protocol, fd, e);
    if (e) {
      ::close(fd);
      return;
    }
    std::make_shared<TransparentSession>(self->rt_, w, std::move(moved), std::move(*held))->start();
  });
}

}  // namespace netbox::proxy
