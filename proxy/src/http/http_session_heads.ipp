// Part of http_session.cpp: reading request heads and the keep-alive loop.
namespace netbox::proxy {

template <class Stream>
void HttpSession<Stream>::read_request() {
  // Back pressure: while the audit queue is full, nothing more is read from this client
  // (each request makes a row), so a flood slows its sender down instead of losing rows
  // or having others refused. A failing store says there is room: insert() then refuses.
  if (!audit_room_or_wait(*impl_.writer, stream_.get_executor(), [self = this->shared_from_this()] { self->read_request(); }))
    return;
  rq_ = ActiveRequest{};
  parser_.emplace();
  prepare_request_parser(*parser_);
  if (buffer_.size() > 0) {  // a pipelined request is (partly) here: its head timer starts now
    rq_.head_deadline = std::chrono::steady_clock::now() + link_.profile->limits.header_timeout;
    return check_head();
  }
  read_head_bytes(true);
}

// Between requests a keep-alive agent may stay quiet for idle_timeout_ms; from the first
// byte of a request on, its whole head must arrive by head_deadline (header_timeout_ms),
// so a client trickling bytes (slowloris) cannot hold a connection open for ever.
template <class Stream>
void HttpSession<Stream>::read_head_bytes(bool first) {
  auto& timed = beast::get_lowest_layer(stream_);
  if (first) timed.expires_after(link_.profile->limits.idle_timeout);
  else timed.expires_at(rq_.head_deadline);
  stream_.async_read_some(buffer_.prepare(beast::read_size(buffer_, kHeaderLimit + 1)),
                          beast::bind_front_handler(&HttpSession::on_head_bytes, this->shared_from_this(), first));
}

template <class Stream>
void HttpSession<Stream>::on_head_bytes(bool first, beast::error_code ec, std::size_t bytes) {
  if (ec) {
    // Nothing to answer: the agent went away, stayed idle, or did not finish its head in
    // time (the timed-out stream is closed already: the row says why).
    if (ec == beast::error::timeout && !first) return head_timed_out();
    return close_client();
  }
  buffer_.commit(bytes);
  if (first) rq_.head_deadline = std::chrono::steady_clock::now() + link_.profile->limits.header_timeout;
  check_head();
}

// A head that kept trickling past header_timeout_ms from its first byte, however short
// the pauses between its bytes: the connection is closed (the stream's timer closed it),
// and a row says what was read of it and why it ended.
template <class Stream>
void HttpSession<Stream>::head_timed_out() {
  impl_.log.write(log_event::header_timeout, {{log_key::client, link_.peer_text},
                                              {log_key::agent, link_.who.agent},
                                              {log_key::received, std::to_string(buffer_.size())}});
  exchange_.begin();
  const auto& check = rq_.head_check;
  const bool connect = check.method() == "CONNECT";
  note_request(connect, check.method(), true);
  note_target(check.target(), connect);
  const auto limit = std::to_string(link_.profile->limits.header_timeout.count());
  exchange_.refuse({408, Outcome::error, {}, "limits.header_timeout_ms",
                    "the request head did not arrive whole within " + limit +
                        " ms of its first byte (limits.header_timeout_ms): netbox bounds a head's total time, not "
                        "only the pauses between its bytes",
                    {}},
                   "header timeout after " + std::to_string(buffer_.size()) + " bytes");
  close_client();
}

template <class Stream>
void HttpSession<Stream>::check_head() {
  const auto data = buffer_.data();
  switch (rq_.head_check.scan({static_cast<const char*>(data.data()), data.size()})) {
    case RequestHeadCheck::State::refused:
      return refuse_head(rq_.head_check.problem());
    case RequestHeadCheck::State::need_more:
      return read_head_bytes(false);
    case RequestHeadCheck::State::complete:
      break;
  }
  // The whole head is in buffer_: Beast parses it from there, here and now (an
  // async_read_header would only post the same parse through the io_context).
  beast::error_code ec;
  const std::size_t used = parser_->put(buffer_.data(), ec);
  buffer_.consume(used);
  if (!ec && !parser_->is_header_done()) ec = http::error::partial_message;  // the check said complete
  // The decision is taken on the head alone: a body stays unread (in the socket, or the
  // part that came with the head in buffer_) until its request is admitted.
  take_head(ec);
}

template <class Stream>
void HttpSession<Stream>::refuse_head(const HeadProblem& p) {
  exchange_.begin();
  const auto& check = rq_.head_check;
  const bool connect = check.method() == "CONNECT";
  note_request(connect, check.method(), true);
  note_target(check.target(), connect);
  // What does not even start like an HTTP/1.1 request, first in an inspected tunnel, is
  // no request: the tunnel carries something else.
  if (kTls && link_.requests == 0 && check.method().empty()) return refuse_not_http(p.reason);
  std::string what = check.method() + " " + check.target().substr(0, 256);
  refuse({p.status, Outcome::error, check.method().empty() ? std::string() : what, "request", p.reason, {}}, true);
}

// The tunnel's first bytes inside TLS are not an HTTP/1.1 request: the tunnel carries
// something else, and its row says so.
template <class Stream>
void HttpSession<Stream>::refuse_not_http(std::string why) {
  const auto& scope = link_.fixed->scope;
  const std::string reason = "netbox inspects " + authority(scope.host.name, scope.port) +
                             ": only HTTP/1.1 requests go through this tunnel, and what the agent sent inside "
                             "TLS is not HTTP/1.1 (" + why + ")";
  const auto no = policy::Decision::refused("inspect", reason);
  link_.fixed->connection.overrule(outcome_of(no.verdict), no.rule, no.reason);
  refuse(refusal_of(no, 400), true);
}

// The destination of a refused request, as far as it can be read, for its audit row:
// escaped, since a target refused before Beast parsed it may hold any byte.
template <class Stream>
void HttpSession<Stream>::note_target(std::string_view target, bool connect) {
  if (link_.fixed) {
    const auto q = target.find('?');
    return exchange_.target(link_.fixed->scope.host.name, link_.fixed->scope.port, target.substr(0, q), true);
  }
  const auto t = connect ? parse_connect_target(target) : parse_absolute_target(target);
  exchange_.target(t.host, t.port, t.path, true);
}

template <class Stream>
void HttpSession<Stream>::note_request(bool connect, std::string_view method, bool escape) {
  exchange_.request(connect, method, escape);
  if (!link_.fixed) return;
  exchange_.kind(link_.fixed->kind);
  exchange_.parent(link_.fixed->connection.row());
}

template <class Stream>
bool HttpSession<Stream>::is_connect() const {
  return rq_.req.method() == http::verb::connect;
}

template <class Stream>
std::string HttpSession<Stream>::what() const {
  const auto& req = rq_.req;
  if (!kTls) return std::string(req.method_string()) + " " + std::string(req.target());
  const auto& scope = link_.fixed->scope;
  return std::string(req.method_string()) + " https://" + host_header(scope.host.name, scope.port, 443) +
         std::string(req.target());
}

template <class Stream>
void HttpSession<Stream>::take_head(beast::error_code ec) {
  exchange_.begin();
  if (ec) return refuse_unparsed(ec);
  ++link_.requests;
  // The head moves out; the parser stays, to read the body if the request is admitted.
  auto& req = rq_.req;
  req = std::move(parser_->get().base());
  if (!take_client_token()) return;
  note_request(is_connect(), req.method_string());
  rq_.keep_alive = !is_connect() && parser_->keep_alive() && !impl_.is_stopping();
  rq_.had_body = !parser_->is_done();
  rq_.expect_continue =
      rq_.had_body && req.version() >= 11 && beast::iequals(req[http::field::expect], "100-continue");
  if (!handled_method(req.method())) {
    if (link_.fixed) note_target(req.target(), false);
    return refuse({405, Outcome::error, what(), "method",
                   "netbox does not forward the method " + std::string(req.method_string()), {}}, !rq_.keep_alive);
  }
  if (link_.fixed) return take_fixed_target();
  take_proxy_target();
}

template <class Stream>
bool HttpSession<Stream>::take_client_token() {
  if (link_.identity_settled) return token_still_holds();
  link_.identity_settled = true;
  if (link_.refused_identity) return refuse_credential(std::move(*link_.refused_identity)), false;
  if (kTls || link_.fixed || !impl_.client_tokens || !link_.who.is_anonymous()) return token_still_holds();
  // A header that holds no token we read is a bad credential, never "none sent".
  const auto header = rq_.req[http::field::proxy_authorization];
  const auto token = tokens::token_from_proxy_authorization(header);
  auto v = impl_.client_tokens->identify(token ? *token : header.empty() ? "" : "?", *link_.policy);
  if (!v.who) return refuse_credential(policy::Decision::refused("client_token", std::move(v.why))), false;
  if (v.who->is_anonymous()) return true;
  link_.become(std::move(*v.who), impl_);
  link_.token = std::move(v.held);
  link_.bind(admission_, exchange_);
  exchange_.begin();  // this request's row is the token's agent's
  link_.pool_scope = UpstreamPool::scope(link_.who.agent, link_.peer.address());
  return true;
}

// A later request on a connection a token identified (here or at a SOCKS5 door): the token
// is checked again, so one revoked or expired since stops here, whatever the keep-alive.
// A client certificate likewise: taken out of the book, or past its end, it stops here.
template <class Stream>
bool HttpSession<Stream>::token_still_holds() {
  if (link_.cert && impl_.listener_tls && impl_.listener_tls->certs()) {
    if (auto why = impl_.listener_tls->certs()->recheck(*link_.cert); !why.empty())
      return refuse_credential(policy::Decision::refused("client_cert", std::move(why))), false;
  }
  if (!link_.token || !impl_.client_tokens) return true;
  auto why = impl_.client_tokens->recheck(*link_.token);
  if (why.empty()) return true;
  refuse_credential(policy::Decision::refused("client_token", std::move(why)));  // 407, never the token
  return false;
}

template <class Stream>
void HttpSession<Stream>::refuse_credential(policy::Decision no) {
  note_request(is_connect(), rq_.req.method_string());
  note_target(rq_.req.target(), is_connect());
  auto r = refusal_of(std::move(no), 407);
  r.what = what();
  refuse(std::move(r), true);
}

template <class Stream>
void HttpSession<Stream>::refuse_unparsed(beast::error_code ec) {
  // A client going away between requests is normal, not a malformed request.
  if (!parser_->got_some() || ec == http::error::end_of_stream || ec == beast::error::timeout ||
      ec == asio::error::connection_reset || ec == asio::error::eof)
    return close_client();
  if (parser_->is_header_done()) {
    rq_.req = parser_->get().base();
    note_request(is_connect(), rq_.req.method_string());
    note_target(rq_.req.target(), is_connect());
  } else if (link_.fixed) {
    note_request(false, {});
    note_target({}, false);
  }
  if (kTls && link_.requests == 0 && !parser_->is_header_done()) return refuse_not_http(describe_request_error(ec));
  if (ec == http::error::header_limit)
    return refuse({431, Outcome::error, {}, "request", "the request headers are larger than 64 KiB", {}}, true);
  if (ec == http::error::body_limit)
    return refuse({413, Outcome::error, {}, "request", "the request body is larger than 64 MiB", {}}, true);
  refuse({400, Outcome::error, {}, "request", describe_request_error(ec), {}}, true);
}

}  // namespace netbox::proxy
