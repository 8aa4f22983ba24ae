// Part of http_session.cpp: the admitted request's way out. An upstream connection (a
// pooled one to a checked address, or a new one: upstream_link.hpp), the request head
// and body going up (RequestRelay), then the answer coming back (ResponseRelay). (A
// CONNECT is TargetStep's, which makes its Tunnel or InspectedTunnel: target_step.hpp.)
namespace netbox::proxy {

template <class Stream>
void HttpSession<Stream>::forward() {
  if constexpr (!kTls) {
    if (link_.fixed && link_.fixed->dialled) {  // the connection its front door made already
      auto r = std::move(*link_.fixed->dialled);
      link_.fixed->dialled.reset();
      UpstreamConnected<false> c{std::nullopt, r.endpoint, 0, {}};
      c.stream.emplace(std::move(r.socket));
      return on_connected(std::move(c));
    }
  }
  if (take_pooled()) return send_upstream();
  connect_upstream();
}

// A pooled connection to one of the checked addresses, if there is one.
template <class Stream>
bool HttpSession<Stream>::take_pooled() {
  if (link_.pool_scope.empty()) return false;
  for (const auto& ep : rq_.allowed) {
    upstream_key(rq_.pool_key, link_.pool_scope, ep, rq_.host.name, kTls, impl_);
    if (!proxy::take_pooled(*worker_.pool, rq_.pool_key, upstream_)) continue;
    rq_.reused_upstream = true;
    if (ep != rq_.allowed.front()) exchange_.dialled(address_text(ep.address()));
    return true;
  }
  return false;
}

template <class Stream>
void HttpSession<Stream>::connect_upstream() {
  rq_.reused_upstream = false;
  connect_upstream_to<kTls>(impl_, worker_, rq_.allowed, link_.profile->limits, rq_.host.name,
                            [self = this->shared_from_this()](UpstreamConnected<kTls> r) {
                              self->on_connected(std::move(r));
                            });
}

template <class Stream>
void HttpSession<Stream>::on_connected(UpstreamConnected<kTls> r) {
  if (r.failure_status) {
    impl_.counters.upstream_errors.fetch_add(1);
    return upstream_failed(r.failure_status, r.error);
  }
  exchange_.dialled(address_text(r.endpoint.address()));
  upstream_key(rq_.pool_key, link_.pool_scope, r.endpoint, rq_.host.name, kTls, impl_);
  if constexpr (kTls) upstream_ = std::move(r.stream);
  else upstream_.emplace(std::move(*r.stream));
  send_upstream();
}

template <class Stream>
void HttpSession<Stream>::send_upstream() {
  auto& req = rq_.req;
  if constexpr (kTls) {
    // The secret goes into the head written upstream, nowhere else: not the row, nor a
    // log line. The answer must come back uncompressed, so that it can be searched for it.
    const auto& wire = link_.who.tripwire;
    if (wire && !inject_credentials(wire->credentials(), rq_.host.name, rq_.target.port, req).empty()) {
      req.erase(http::field::accept_encoding);
      // A part of an echo of the request (a byte range of it) could hold a piece of the
      // secret too short to be found, and the next range the next piece: whole answers only.
      req.erase(http::field::range);
      req.erase(http::field::if_range);
      rq_.redaction.emplace(wire->credentials(), rq_.host.name, rq_.target.port);
    }
  }
  BodyFraming framing;
  RequestBody body;
  body.present = rq_.had_body;
  if (rq_.had_body) {
    body.chunked = parser_->chunked();
    framing.kind = body.chunked ? BodyFraming::Kind::chunked : BodyFraming::Kind::length;
    if (!body.chunked) framing.length = parser_->content_length().value_or(0);
  }
  body.expect_continue = std::exchange(rq_.expect_continue, false);
  body.meter = &exchange_.meter;
  if (link_.who.tripwire) {
    body.tripwire = link_.who.tripwire.get();
    body.host = &rq_.host.name;
    body.port = rq_.target.port;
  }
  if (rq_.had_body) body.scan = body_secret_scan(impl_.guardians, *link_.profile, link_.who.agent, rq_.host.name);
  if (rq_.body_rule) {
    rq_.gate.emplace(*rq_.body_rule, link_.profile->mode, req);
    body.gate = &*rq_.gate;
  }
  auto& head = body_.head();
  head.clear();
  append_forwarded_request(head, req, rq_.target.path_and_query, host_header(rq_.host.name, rq_.target.port, kTls ? 443 : 80),
                           framing);
  if (rq_.upgrade) head.insert(head.size() - 2, kUpgradeFields);  // before the blank line
  body_.start(*upstream_, *parser_, body, link_.profile->limits.idle_timeout, exchange_.bytes_up,
              this->shared_from_this());
}

template <class Stream>
void HttpSession<Stream>::on_body_sent(RequestBodyResult r) {
  using Kind = RequestBodyResult::Kind;
  switch (r.kind) {
    case Kind::sent:
      if (rq_.gate) {
        // A body the check let go is a plain allow, or a report (report mode): the row says so.
        const auto& d = rq_.gate->result().decision;
        if (!d.plain_allow()) exchange_.overrule(outcome_of(d.verdict), d.rule, d.reason);
        exchange_.note_body(rq_.gate->calls());
      }
      return relay_response();
    case Kind::body_refused:
      return body_refused();
    case Kind::agent_failed:
      return request_body_failed(r.ec);
    case Kind::upstream_failed:
      return upstream_write_failed(r.ec);
    case Kind::tripped:
      // The upstream connection got nothing of the body and is dropped; the row, open
      // since admission, becomes the deny the agent is answered.
      upstream_.reset();
      exchange_.overrule(r.refusal->outcome, r.refusal->rule, r.refusal->reason);
      r.refusal->what = what();
      return refuse(std::move(*r.refusal), true);
  }
}

// The row, open since admission, becomes the deny; the agent gets the check's answer in
// its protocol (a JSON-RPC error with the ids of its calls, a git report git prints).
// The upstream connection got nothing and is dropped.
template <class Stream>
void HttpSession<Stream>::body_refused() {
  upstream_.reset();
  const policy::BodyCheck& c = rq_.gate->result();
  exchange_.overrule(outcome_of(c.decision.verdict), c.decision.rule, c.decision.reason);
  exchange_.note_body(rq_.gate->calls());
  refuse({c.status, outcome_of(c.decision.verdict), what(), c.decision.rule, c.decision.reason, {}}, !rq_.keep_alive);
}

// Reading the agent's body failed after the request was admitted. The upstream has part
// of a request and is never used again; the agent gets an answer if it still listens.
template <class Stream>
void HttpSession<Stream>::request_body_failed(beast::error_code ec) {
  reset_upstream(upstream_);
  if (ec == http::error::body_limit)
    return refuse({413, Outcome::error, what(), "request", "the request body is larger than 64 MiB", {}}, true);
  if (ec == beast::error::timeout && body_.below_min_rate())
    return refuse({408, Outcome::error, what(), "request",
                   "the request body arrived slower than " + std::to_string(body_.kMinBodyRate) +
                       " bytes/s on average once limits.idle_timeout_ms had passed: netbox ends a body that trickles",
                   {}}, true);
  if (ec == beast::error::timeout)
    return refuse({408, Outcome::error, what(), "request",
                   "the request body stopped arriving for " +
                       std::to_string(link_.profile->limits.idle_timeout.count()) + " ms",
                   {}}, true);
  if (ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::error::broken_pipe)
    return refuse({400, Outcome::error, what(), "request", "the request ended before its body was complete", {}}, true);
  refuse({400, Outcome::error, what(), "request", describe_request_error(ec), {}}, true);
}

// A reused connection that closed before answering may be dialled afresh and the request
// sent again, but only if that cannot do twice what the agent asked once.
template <class Stream>
bool HttpSession<Stream>::may_resend() const {
  return rq_.reused_upstream && !body_.started() && idempotent(rq_.req.method());
}

template <class Stream>
void HttpSession<Stream>::upstream_write_failed(beast::error_code ec) {
  if (may_resend()) {
    upstream_.reset();
    return connect_upstream();  // the pooled connection had gone stale: dial afresh
  }
  impl_.counters.upstream_errors.fetch_add(1);
  upstream_.reset();
  if (ec == beast::error::timeout) return upstream_failed(504, "sending the request upstream timed out");
  std::string why = "sending the request upstream failed: " + ec.message();
  if (rq_.reused_upstream) why += not_resent();
  upstream_failed(502, std::move(why));
}

template <class Stream>
void HttpSession<Stream>::relay_response() {
  relay_.start(*upstream_,
               {rq_.req.method(), rq_.req.version(), rq_.keep_alive, rq_.reused_upstream, may_resend(),
                rq_.redaction ? &*rq_.redaction : nullptr, rq_.upgrade, &exchange_.meter},
               link_.profile->limits.idle_timeout, exchange_.bytes_down, this->shared_from_this());
}

// The exchange ends: pool the upstream connection if it is clean, complete the row, and
// read the agent's next request (or close).
template <class Stream>
void HttpSession<Stream>::on_relayed(RelayResult r) {
  if (r.resend) {
    upstream_.reset();
    exchange_.bytes_up = 0;  // only its head went (may_resend): the row counts the request once
    return connect_upstream();
  }
  if (r.answer) {  // nothing went to the agent: netbox answers
    upstream_.reset();
    if (r.unanswered) r.error += not_resent();
    return upstream_failed(r.answer, std::move(r.error));
  }
  if (r.upgraded) return start_upgraded();
  rq_.keep_alive = r.keep_alive;
  // After a body the upstream may have left unread (a GET's, or any before an error
  // answer), the connection may still hold it, to be read as the next request: closed.
  const bool body_consumed = !rq_.had_body || (consumes_body(rq_.req.method()) && r.status < 400);
  if (r.reusable && body_consumed && !link_.pool_scope.empty()) put_pooled(*worker_.pool, rq_.pool_key, upstream_);
  upstream_.reset();
  const bool clean = r.error.empty();
  exchange_.finish(r.status, std::move(r.error));
  if (!clean && r.started) return abort_client();
  if (!clean || !rq_.keep_alive) return close_client();
  read_request();
}

// The 101 went to the agent: from here on the connection carries WebSocket frames both
// ways, relayed unread, until one side ends it or it idles; the handshake's row gets the
// bytes and is completed with its 101 then.
template <class Stream>
void HttpSession<Stream>::start_upgraded() {
  std::string to_upstream(static_cast<const char*>(buffer_.data().data()), buffer_.size());
  buffer_.clear();
  buffer_.shrink_to_fit();
  parser_.reset();
  upgraded_.start(*upstream_, relay_.take_early(), std::move(to_upstream), link_.profile->limits.idle_timeout,
                  exchange_.bytes_up, exchange_.bytes_down, exchange_.meter, this->shared_from_this());
}

template <class Stream>
void HttpSession<Stream>::on_upgraded_end(std::string error) {
  upstream_.reset();
  exchange_.finish(101, std::move(error));
  close_client();
}

}  // namespace netbox::proxy
