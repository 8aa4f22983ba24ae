// Part of http_session.cpp: answers without forwarding, and the ends of a connection.
namespace netbox::proxy {

template <class Stream>
void HttpSession<Stream>::refuse_unaudited(std::string why) {
  auto res = std::make_shared<Response>(
      make_refusal({503, Outcome::error, what(), "audit", std::move(why), {}}, rq_.req.version(), false));
  refusal_ = res;
  http::async_write(stream_, *res, [self = this->shared_from_this()](beast::error_code e, std::size_t) {
    self->on_refusal_written(true, e);
  });
}

template <class Stream>
void HttpSession<Stream>::upstream_failed(unsigned status, std::string error) {
  refuse({status, Outcome::error, what(), {}, error, {}}, !rq_.keep_alive, error);
}

template <class Stream>
void HttpSession<Stream>::refuse(Refusal r, bool close, std::string error) {
  if (is_connect()) close = true;  // a refused CONNECT never becomes a tunnel
  if (rq_.upgrade) close = true;   // nor a refused WebSocket handshake a relay: the agent sees it end
  // A body that was not read cannot be skipped without reading it: the connection ends.
  if (body_unread()) close = true;
  const unsigned version = rq_.req.version() ? rq_.req.version() : 11;
  auto res = std::make_shared<Response>(make_refusal(r, version, !close));
  // A refused body is answered in the agent's protocol when its check says how (a
  // JSON-RPC error with the ids of its calls, a git report), the X-Netbox headers kept.
  if (rq_.gate && rq_.gate->result().refused() && !rq_.gate->result().answer.empty()) {
    res->set(http::field::content_type, rq_.gate->result().content_type);
    res->body() = rq_.gate->result().answer;
    res->prepare_payload();
  }
  exchange_.refuse(r, std::move(error));
  refusal_ = res;
  beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(30));
  http::async_write(stream_, *res, [self = this->shared_from_this(), close](beast::error_code e, std::size_t) {
    self->on_refusal_written(close, e);
  });
}

template <class Stream>
void HttpSession<Stream>::on_refusal_written(bool close, beast::error_code ec) {
  refusal_.reset();
  if (!ec && body_unread()) return linger_close();
  if (ec || close) return close_client();
  read_request();
}

template <class Stream>
void HttpSession<Stream>::close_client() {
  beast::error_code ec;
  auto& timed = beast::get_lowest_layer(stream_);
  timed.socket().shutdown(tcp::socket::shutdown_send, ec);
  timed.close();
}

template <class Stream>
bool HttpSession<Stream>::body_unread() const {
  return parser_ && parser_->is_header_done() && !parser_->is_done();
}

template <class Stream>
std::string HttpSession<Stream>::not_resent() const {
  return "; netbox resends a request only when it is idempotent (RFC 9110 9.2.2) and none of its body has gone, "
         "so this " + std::string(rq_.req.method_string()) + " was not sent again";
}

template <class Stream>
void HttpSession<Stream>::linger_close() {
  auto& timed = beast::get_lowest_layer(stream_);
  beast::error_code ec;
  timed.socket().shutdown(tcp::socket::shutdown_send, ec);
  rq_.linger_left = kLingerBytes;
  timed.expires_after(kLingerTime);
  buffer_.clear();
  timed.async_read_some(buffer_.prepare(16 * 1024),
                        beast::bind_front_handler(&HttpSession::on_linger, this->shared_from_this()));
}

template <class Stream>
void HttpSession<Stream>::on_linger(beast::error_code ec, std::size_t bytes) {
  auto& timed = beast::get_lowest_layer(stream_);
  if (ec || bytes >= rq_.linger_left) return timed.close();
  rq_.linger_left -= bytes;  // dropped: prepare() hands out the same 16 KiB again
  timed.async_read_some(buffer_.prepare(16 * 1024),
                        beast::bind_front_handler(&HttpSession::on_linger, this->shared_from_this()));
}

template <class Stream>
void HttpSession<Stream>::abort_client() {
  beast::error_code ec;
  auto& timed = beast::get_lowest_layer(stream_);
  timed.socket().set_option(asio::socket_base::linger(true, 0), ec);
  timed.close();
}

}  // namespace netbox::proxy
