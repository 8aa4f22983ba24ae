#include "pipeline/target_step.hpp"

#include "netbox/proxy/endpoint.hpp"

#include "http/http_session.hpp"
#include "inspect/inspected_tunnel.hpp"
#include "pipeline/admission_steps.hpp"
#include "pipeline/denial.hpp"
#include "pipeline/policy_answer.hpp"
#include "upstream/tunnel.hpp"

#include "netbox/policy/decide_request.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/http/write.hpp>

#include <sstream>

namespace netbox::proxy {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

DoorAnswer http_answer(std::string connected, unsigned version) {
  return {std::move(connected), [version](const Snag& s) {
            std::ostringstream out;
            out << make_refusal(s.refusal, version ? version : 11, false);
            return out.str();
          }};
}

TargetStep::TargetStep(DoorServices& rt, Worker& worker, tcp::socket client, AgentConnection conn, Exchange exchange,
                       DoorTarget target, DoorAnswer answer)
    : rt_(rt),
      worker_(worker),
      client_(std::move(client)),
      timer_(client_.get_executor()),
      conn_(std::move(conn)),
      admission_(rt.own, rt.caps, rt.counters, rt.guardians),
      exchange_(std::move(exchange)),
      target_(std::move(target)),
      answer_(std::move(answer)) {
  conn_.bind(admission_, exchange_);
  rt_.counters.active_connections.fetch_add(1);
}

TargetStep::~TargetStep() { rt_.counters.active_connections.fetch_sub(1); }

void TargetStep::start() {
  if (const auto& f = target_.flight) {
    if (!f->error.empty())
      return refuse({403, Outcome::error, {}, "request", "the connection sent no complete first message in time", {}},
                    f->error);
    // Fronting: a TLS hello or a Host header naming another host than the target.
    if (auto no = check_first_flight(*f, target_.host, target_.as)) return refuse(*no, {});
    target_.early = std::move(target_.flight->bytes);  // relayed first once admitted
  }
  decide(admission_, worker_, rt_.counters, target_.host, target_.port,
         [self = shared_from_this()](AdmissionResult r) { self->act_on(std::move(r)); });
}

void TargetStep::act_on(AdmissionResult result) {
  if (auto* no = std::get_if<Refused>(&result)) {
    exchange_.refused(*no);
    // A name that does not resolve is unreachable; any other refusal is the ruleset's or netbox's.
    const bool unresolved = !no->error.empty() && no->refusal.outcome == Outcome::error;
    return refuse(no->refusal, std::move(no->error), DialFailure::none, unresolved);
  }
  auto& yes = std::get<Admitted>(result);
  if (target_.flight || target_.opaque) {
    // A blind tunnel to a host some rule names would carry requests no rule could check;
    // an inspected host's requests, and plain HTTP's, are decided inside.
    auto t = policy::decide_tunnel(*conn_.profile, {target_.host.name, target_.port, yes.decision},
                                   plain_http() ? policy::Carried::plain_http : policy::Carried::opaque);
    if (auto no = take_decision(yes, std::move(t.decision), t.status)) {
      exchange_.refused(*no);
      return refuse(no->refusal, {});
    }
  }
  decided_ = yes.decision;
  // Fail closed, as on the HTTP listener: a row the store did not take is no connection.
  open_row(rt_, exchange_, yes, allowed_, target_.host.name, conn_.who.agent, client_.get_executor(),
           [self = shared_from_this()](std::string unaudited) {
             if (unaudited.empty()) return self->go_on();
             const Refusal no{503, Outcome::error, self->target_.what, "audit", unaudited, {}};
             self->answer({no});  // the row is complete already (note_unaudited)
           });
}

void TargetStep::go_on() {
  if (plain_http()) return start_requests();
  if (policy::inspects(*conn_.profile, target_.host.name, target_.port)) return start_inspection();
  dial_admitted(rt_, worker_, allowed_, conn_.profile->limits,
                [self = shared_from_this()](DialResult r) { self->on_dialed(std::move(r)); });
}

void TargetStep::on_dialed(DialResult r) {
  if (r.failure != DialFailure::none) {
    rt_.counters.upstream_errors.fetch_add(1);
    return refuse({http_status(r.failure), Outcome::error, target_.what, {}, r.error, {}}, r.error, r.failure);
  }
  exchange_.dialled(address_text(r.endpoint.address()));
  if (target_.flight) return start_tunnel(std::move(r.socket), std::move(target_.early));
  dialled_.emplace(std::move(r));
  send_connected();
}

// The door's "connected", then the agent's first message says what it speaks (first_flight.hpp).
void TargetStep::send_connected() {
  out_ = answer_.connected;
  asio::async_write(client_, asio::buffer(out_), [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
    if (ec) {
      self->exchange_.finish(std::nullopt, "answering the agent failed: " + ec.message(), true);
      return self->close();
    }
    read_first_flight(self->client_, self->timer_, self->conn_.profile->limits.header_timeout,
                      agent_must_speak_first(self->target_.port, false),
                      [self](FirstFlight f) { self->on_first_flight(std::move(f)); }, std::move(self->target_.early));
  });
}

void TargetStep::on_first_flight(FirstFlight f) {
  if (!f.error.empty()) {
    exchange_.finish(std::nullopt, std::move(f.error), true);
    return close();
  }
  if (f.kind == FirstFlight::Kind::http && !target_.opaque) {
    target_.early = std::move(f.bytes);
    return start_requests();
  }
  // A blind tunnel to a host some rule names would carry requests no rule could check (an
  // inspected host never gets here; a CONNECT to such a host was refused before its 200).
  auto no = check_first_flight(f, target_.host, target_.as);
  auto tunnel =
      policy::decide_tunnel(*conn_.profile, {target_.host.name, target_.port, decided_}, policy::Carried::opaque);
  if (!no && tunnel.refused()) no = refusal_of(tunnel.decision, tunnel.status);
  if (no) {
    exchange_.overrule(no->outcome, no->rule, no->reason);
    exchange_.finish(no->status, no->reason);
    return reset();
  }
  // Report mode: the row shows what the rules would have refused (a CONNECT's says so already).
  if (tunnel.decision.rule != decided_.rule)
    exchange_.overrule(outcome_of(tunnel.decision.verdict), tunnel.decision.rule, tunnel.decision.reason);
  start_tunnel(std::move(dialled_->socket), std::move(f.bytes));
}

// Plain HTTP: each request inside is read, decided with `rules` and forwarded by the
// proxy's own request loop, one row each under the connection's (http_session.hpp,
// FixedDestination), starting with the bytes already read and, after a SOCKS5 reply,
// over the connection just dialled.
void TargetStep::start_requests() {
  FixedDestination fixed{std::move(target_.kind),
                         InspectionScope::of(conn_, target_.host, target_.port, std::move(allowed_),
                                             std::move(decided_), target_.name_from_address),
                         std::move(exchange_), std::move(target_.early), std::move(dialled_)};
  std::make_shared<ClientSession>(rt_, worker_, std::move(client_), std::move(conn_), std::move(fixed))->start();
}

// The host is inspected: netbox answers "connected" itself (if the door does) and
// terminates the agent's TLS, exactly as for an inspected CONNECT (inspected_tunnel.hpp).
void TargetStep::start_inspection() {
  // The policy guard lets `inspect` in only with a CA; never a blind tunnel instead.
  if (!rt_.inspector) {
    const std::string why = "netbox has no CA loaded to inspect " + target_.host.name;
    return refuse({503, Outcome::error, target_.what, {}, why, {}}, why);
  }
  exchange_.client_slot = std::move(conn_.slot);
  auto scope = InspectionScope::of(conn_, target_.host, target_.port, allowed_, decided_, target_.name_from_address);
  std::make_shared<InspectedTunnel>(rt_, worker_, std::move(client_), std::move(answer_.connected),
                                    std::move(target_.early), std::move(exchange_), std::move(scope))
      ->start();
}

void TargetStep::start_tunnel(tcp::socket upstream, std::string first) {
  exchange_.client_slot = std::move(conn_.slot);  // the agent's connection lives on in the tunnel
  exchange_.settle();  // dialled: whatever happens next, the tunnel was allowed
  std::make_shared<Tunnel>(rt_, std::move(client_), std::move(upstream), std::move(first), std::move(exchange_),
                           conn_.profile->limits.idle_timeout)
      ->start();
}

void TargetStep::refuse(const Refusal& r, std::string error, DialFailure dial, bool unresolved) {
  Refusal shown = r;
  shown.what = target_.what;
  exchange_.refuse(shown, error.empty() ? r.reason : std::move(error));
  answer({shown, dial, unresolved});
}

void TargetStep::answer(const Snag& s) {
  out_ = answer_.refused ? answer_.refused(s) : std::string();
  if (out_.empty()) return reset();
  timer_.expires_after(std::chrono::seconds(30));  // an agent that does not read its answer
  timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec) self->reset();
  });
  asio::async_write(client_, asio::buffer(out_), [self = shared_from_this()](boost::system::error_code, std::size_t) {
    self->timer_.cancel();
    self->close();
  });
}

void TargetStep::close() {
  boost::system::error_code ignored;
  client_.shutdown(tcp::socket::shutdown_send, ignored);
  client_.close(ignored);
}

// A reset, not a close: the agent's program sees "connection refused/reset" at once.
void TargetStep::reset() {
  boost::system::error_code ignored;
  client_.set_option(asio::socket_base::linger(true, 0), ignored);
  client_.close(ignored);
}

}  // namespace netbox::proxy
