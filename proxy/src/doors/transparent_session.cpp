#include "doors/transparent_session.hpp"

#include "doors/dns_view.hpp"
#include "doors/original_destination.hpp"
#include "pipeline/policy_answer.hpp"
#include "pipeline/target_step.hpp"

#include "netbox/policy/decide_request.hpp"

namespace netbox::proxy {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// How the capture door answers: plain HTTP gets what every proxied request gets, a
// status and X-Netbox-Reason; anything else a reset. Nothing is said once connected: the
// agent believes it reached its destination.
DoorAnswer capture_answer(bool plain_http) { return plain_http ? http_answer({}) : DoorAnswer{}; }

}  // namespace

TransparentSession::TransparentSession(DoorServices& rt, Worker& w, tcp::socket s, ClientSlot slot)
    : rt_(rt), worker_(w), client_(std::move(s)), timer_(client_.get_executor()), exchange_(rt) {
  conn_.slot = std::move(slot);
  rt_.counters.active_connections.fetch_add(1);
}

TransparentSession::~TransparentSession() { rt_.counters.active_connections.fetch_sub(1); }

void TransparentSession::start() {
  open_agent_connection(rt_, client_, conn_.slot, DoorKind::capture, [self = shared_from_this()](AgentConnection c) {
    self->conn_ = std::move(c);
    self->take_destination();
  });
}

// The adapter: the original destination, the name a synthetic address stands for, and
// the agent's first message make the target.
void TransparentSession::take_destination() {
  conn_.bind(exchange_);
  exchange_.begin();
  exchange_.request(true, "");
  exchange_.kind("transparent");

  const auto dst = original_destination(client_);
  auto view = rt_.dns_view_of(conn_.who.netns ? netns_key(conn_.who.netns) : conn_.peer.address());
  if (!dst) {
    exchange_.target("", 0, {});
    return refuse({403, Outcome::error, {}, "request", "the connection's original destination is unknown", {}});
  }
  if (view && view->is_synthetic(dst->address())) {
    auto name = view->hold(dst->address());
    if (!name) {
      exchange_.target(dst->address().to_string(), dst->port(), {});
      return refuse(refusal_of(policy::Decision::refused("dns", dst->address().to_string() +
                                                                    " stands for no name now (its DNS answer expired); "
                                                                    "look the name up again"),
                               403));
    }
    // Released once this connection is decided (by the step too, which keeps a copy).
    held_ = std::shared_ptr<void>(nullptr, [view, a = dst->address()](void*) { view->release(a); });
    name_ = *name;
  }
  const std::string host = name_.empty() ? dst->address().to_string() : name_;
  exchange_.target(host, dst->port(), {});
  auto parsed = policy::parse_host(host);
  if (!parsed) return refuse({403, Outcome::error, {}, "host", parsed.error.message, {}});
  host_ = *parsed.host;
  port_ = dst->port();
  exchange_.host(host_.name);
  read_first_flight(client_, timer_, conn_.profile->limits.header_timeout,
                    agent_must_speak_first(port_, policy::inspects(*conn_.profile, host_.name, port_)),
                    [self = shared_from_this()](FirstFlight f) { self->hand_over(std::move(f)); });
}

void TransparentSession::hand_over(FirstFlight f) {
  const bool plain_http = f.kind == FirstFlight::Kind::http;
  DoorTarget target{"transparent", host_, port_, host_.name + ":" + std::to_string(port_), std::move(f),
                    {}, "the name this address was looked up as", !name_.empty(), held_};
  std::make_shared<TargetStep>(rt_, worker_, std::move(client_), std::move(conn_), std::move(exchange_),
                               std::move(target), capture_answer(plain_http))
      ->start();
}

// Before the agent's first message nothing is known of its protocol: a reset, which its
// program sees at once as "connection refused/reset".
void TransparentSession::refuse(const Refusal& r) {
  exchange_.refuse(r, r.reason);
  boost::system::error_code ignored;
  client_.set_option(asio::socket_base::linger(true, 0), ignored);
  client_.close(ignored);
}

}  // namespace netbox::proxy
