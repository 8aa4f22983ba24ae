// Part of http_session.cpp: the decision on a request's head.
namespace netbox::proxy {

// A request to the proxy door: its absolute-form (or CONNECT) target names the host.
template <class Stream>
void HttpSession<Stream>::take_proxy_target() {
  auto& target = rq_.target;
  if (is_connect() && rq_.had_body) {
    note_target(rq_.req.target(), true);
    return refuse({400, Outcome::error, what(), "request", "a CONNECT request has no body", {}}, true);
  }
  target = is_connect() ? parse_connect_target(rq_.req.target()) : parse_absolute_target(rq_.req.target());
  if (!target.error.empty()) {
    exchange_.target(target.host, target.port, {});
    return refuse({400, Outcome::error, what(), "request", target.error, {}}, true);
  }
  exchange_.target(target.host, target.port, target.path);
  auto parsed = policy::parse_host(target.host);
  if (!parsed) {
    return refuse({400, Outcome::error, what(), "host", "the host '" + target.host + "' is not valid: " +
                                                                 parsed.error.message, {}}, true);
  }
  rq_.host = *parsed.host;
  exchange_.host(rq_.host.name);
  if (is_connect()) return hand_on_connect();
  if (refused_upgrade() || tripped()) return;
  admit();
}

// A CONNECT's target goes to the step every door hands its target to (target_step.hpp),
// as a SOCKS5 request's does: admission, the row, then a 200 and a blind tunnel (its
// first message checked for fronting) or an inspected one, or a refusal in HTTP. Its
// bytes are opaque by its protocol. The agent's connection is the step's from here on.
template <class Stream>
void HttpSession<Stream>::hand_on_connect() {
  if constexpr (!kTls) {
    stream_.expires_never();
    // Bytes the agent sent after the CONNECT head (a pipelined TLS hello) start its first message.
    std::string early(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    buffer_.consume(buffer_.size());
    DoorTarget target{{}, rq_.host, rq_.target.port, what(), std::nullopt, std::move(early),
                      "the host the CONNECT request named", false, nullptr, true};
    std::make_shared<TargetStep>(impl_, worker_, stream_.release_socket(),
                                 std::move(static_cast<AgentConnection&>(link_)), std::move(exchange_),
                                 std::move(target), http_answer("HTTP/1.1 200 Connection Established\r\n\r\n", rq_.req.version()))
        ->start();
  }
}

// A credential's placeholder on its way to a host not listed for it (credentials.hpp).
// Every HTTP request of every door passes here once its host is known: the proxy door's,
// a captured connection's, a SOCKS5 one's and an inspected one's (a FixedDestination).
// The content rules read the same head next (content_rules.hpp): a known secret format.
template <class Stream>
bool HttpSession<Stream>::tripped() {
  std::optional<Refusal> r;
  if (link_.who.tripwire)
    r = link_.who.tripwire->check_request(rq_.host.name, rq_.target.port, rq_.req, rq_.target.path_and_query);
  if (!r)
    r = secrets_in_head(impl_.guardians, exchange_, *link_.profile, link_.who.agent, rq_.host.name, rq_.target, rq_.req);
  if (!r) return false;
  r->what = what();
  refuse(std::move(*r), !rq_.keep_alive);
  return true;
}

// An Upgrade is carried only to a WebSocket (then the request is decided as any other);
// any other one is refused here, on every door, rather than stripped into a request the
// agent did not send. (A CONNECT, which names no protocol to switch to, never comes here.)
template <class Stream>
bool HttpSession<Stream>::refused_upgrade() {
  auto up = check_upgrade(rq_.req, rq_.had_body);
  rq_.upgrade = up.ask == UpgradeAsk::websocket;
  if (!up.refused) return false;
  up.refused->what = what();
  refuse(std::move(*up.refused), true);
  return true;
}

// The destination is the connection's: the target must be origin-form, the Host header
// the admitted name. The connection's admission stands for each request (its addresses,
// decision and cap slot); `rules` still decide each one, in act_on.
template <class Stream>
void HttpSession<Stream>::take_fixed_target() {
  const auto& scope = link_.fixed->scope;
  rq_.host = scope.host;
  const auto& host = rq_.host;
  const std::string_view target = rq_.req.target();
  exchange_.target(host.name, scope.port, target.substr(0, target.find('?')), true);
  exchange_.host(host.name);
  if (is_connect() || target.empty() || target.front() != '/')
    return refuse({400, Outcome::error, what(), "request",
                   "this connection goes to " + authority(host.name, scope.port) +
                       " already: requests on it have an origin-form target (\"/path\")",
                   {}},
                  true);
  // A literal has no other name to disagree with.
  if (!host.is_ip()) {
    std::vector<std::string_view> values;
    for (auto [it, end] = rq_.req.equal_range(http::field::host); it != end; ++it) values.push_back(it->value());
    if (auto no = check_host_headers(values, host)) {
      no->what = what();
      return refuse(std::move(*no), true);
    }
  }
  rq_.target = Target{host.name, scope.port, std::string(target), std::string(target.substr(0, target.find('?'))), {}};
  if (refused_upgrade() || tripped()) return;
  Admitted yes;
  yes.decision = scope.decision;
  yes.endpoints = scope.endpoints;
  // The agent's budgets and rates (AgentGuard): the first request stands on the
  // connection's admission, each later one is admitted again; every one is metered.
  const auto guard = impl_.guardians.of(link_.who.agent);
  if (auto no = link_.requests > 1 ? guard->admit(host.name, scope.port, std::chrono::steady_clock::now()) : std::nullopt) {
    no->what = what();
    return refuse(std::move(*no), !rq_.keep_alive);
  }
  yes.meter = guard->meter(host.name, scope.port);
  act_on(std::move(yes));
}

template <class Stream>
void HttpSession<Stream>::admit() {
  decide(admission_, worker_, impl_.counters, rq_.host, rq_.target.port,
         [self = this->shared_from_this()](AdmissionResult r) { self->act_on(std::move(r)); });
}

template <class Stream>
void HttpSession<Stream>::act_on(AdmissionResult result) {
  if (auto* no = std::get_if<Refused>(&result)) {
    exchange_.refused(*no);
    no->refusal.what = what();
    return refuse(std::move(no->refusal), !rq_.keep_alive, std::move(no->error));
  }
  auto& yes = std::get<Admitted>(result);
  if (auto no = apply_request_rules(yes)) {
    exchange_.refused(*no);
    no->refusal.what = what();
    return refuse(std::move(no->refusal), !rq_.keep_alive);
  }
  // From here on the row is open: a refusal completes it as error.
  open_row(impl_, exchange_, yes, rq_.allowed, rq_.host.name, link_.who.agent, stream_.get_executor(),
           [self = this->shared_from_this()](std::string unaudited) {
             if (unaudited.empty()) return self->forward();
             self->refuse_unaudited(std::move(unaudited));
           });
}

// The host is let through; the policy still decides the request (`rules`,
// policy/decide_request.hpp). A request goes with the canonical path it matched.
template <class Stream>
std::optional<Refused> HttpSession<Stream>::apply_request_rules(Admitted& yes) {
  const auto& profile = *link_.profile;
  auto& target = rq_.target;
  const policy::Admitted at{rq_.host.name, target.port, yes.decision};
  // Every door reaches this loop, and the loop reads bodies: a rule's body checks are
  // applied (RequestRelay holds the body for rq_.gate), never refused for want of them.
  auto r = policy::decide_request(profile, at, rq_.req.method_string(), target.path_and_query,
                                  policy::BodyChecks::caller_checks);
  rq_.body_rule = r.body_rule;
  if (!r.refused() && !r.path.empty()) {
    target.path_and_query = std::move(r.path_and_query);
    target.path = std::move(r.path);
    exchange_.target(rq_.host.name, target.port, target.path);
  }
  return take_decision(yes, std::move(r.decision), r.status);
}

}  // namespace netbox::proxy
