#include "http/response_relay.hpp"

#include "http/head_writer.hpp"
#include "http/headers.hpp"
#include "http/request_head.hpp"
#include "inspect/agent_tls_stream.hpp"
#include "http/upgraded_request.hpp"
#include "upstream/upstream_pool.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>

#include <array>

namespace netbox::proxy {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

template <class Client, class Upstream>
void ResponseRelay<Client, Upstream>::start(Upstream& upstream, const RelayedRequest& req, std::chrono::milliseconds idle_timeout,
                          std::uint64_t& bytes_down, std::shared_ptr<void> keep) {
  upstream_ = &upstream;
  req_ = req;
  idle_timeout_ = idle_timeout;
  bytes_down_ = &bytes_down;
  keep_ = std::move(keep);
  result_ = RelayResult{};
  result_.keep_alive = req.keep_alive;
  header_held_ = false;
  cut_ = false;
  buffer_.clear();
  window_.clear();
  read_header();
}

// Also after an interim answer (103 Early Hints ...): it is dropped and the final one
// awaited, so it can never be taken for the answer to the next request on a pooled
// connection.
template <class Client, class Upstream>
void ResponseRelay<Client, Upstream>::read_header() {
  parser_.emplace();
  parser_->header_limit(kHeaderLimit);
  parser_->body_limit(boost::none);
  if (req_.method == http::verb::head) parser_->skip(true);
  beast::get_lowest_layer(*upstream_).expires_after(idle_timeout_);
  http::async_read_header(*upstream_, buffer_, *parser_,
                          [this, keep = keep_.lock()](beast::error_code ec, std::size_t) { on_header(ec); });
}

template <class Client, class Upstream>
void ResponseRelay<Client, Upstream>::header_failed(beast::error_code ec) {
  result_.unanswered = req_.reused_upstream && !parser_->got_some() && ec != beast::error::timeout;
  if (result_.unanswered && req_.may_resend) {  // the pooled connection had gone stale
    result_.resend = true;
    return finish("the reused upstream connection closed before answering (" + ec.message() + ")");
  }
  if (ec == beast::error::timeout)
    return fail(504, "the upstream did not answer within " + std::to_string(idle_timeout_.count()) + " ms");
  if (result_.unanswered)
    return fail(502, "the reused upstream connection closed before answering (" + ec.message() + ")");
  fail(502, "the upstream's response was not valid HTTP: " + ec.message());
}

template <class Client, class Upstream>
void ResponseRelay<Client, Upstream>::on_header(beast::error_code ec) {
  if (ec) return header_failed(ec);
  auto& res = parser_->get();
  result_.status = static_cast<int>(res.result_int());
  if (result_.status == 101) {
    if (req_.upgrade) return switch_protocols();
    // Only a WebSocket's Upgrade is forwarded: a 101 to anything else is a broken upstream.
    return fail(502, "the upstream switched protocols (101) although no upgrade was asked for");
  }
  if (result_.status / 100 == 1) return read_header();
  upstream_keep_alive_ = res.keep_alive() && res.version() == 11;
  const bool bodiless = req_.method == http::verb::head || result_.status == 204 || result_.status == 304;
  const bool had_length = res.has_content_length();
  // Framed two ways (a coding such as gzip, which Beast reads until the close, and a
  // length, which it reads by): an agent's client could take either, and an upstream
  // could make what follows pass for the answer to its next request (RFC 9112 6.3).
  if (!bodiless && had_length && res.count(http::field::transfer_encoding) > 0)
    return fail(502, "the upstream's response is not valid HTTP: it has both Transfer-Encoding and Content-Length");
  // Codings other than chunked stay on the body the parser gives (gzip ...): the agent
  // gets them named, with the body re-chunked.
  const auto codings = bodiless ? std::string() : remaining_transfer_codings(res, parser_->chunked());
  // First: a reason quotes the upstream's coding, which must not be the credential echoed.
  if (auto why = unsearchable(codings); !why.empty()) return fail(502, std::move(why));
  if (!codings.empty() && req_.version < 11)
    return fail(502, "the upstream's response has the transfer coding '" + codings +
                         "', which an HTTP/1.0 request cannot receive");
  std::optional<std::uint64_t> length;
  if (had_length && !(req_.redaction && !bodiless)) {
    if (const auto n = parser_->content_length()) length = *n;
  }
  strip_response_fields(res, length);
  res.version(req_.version);
  if (!bodiless && !length) {
    // Length unknown (chunked or until close): re-chunk for HTTP/1.1, close for 1.0.
    if (req_.version >= 11) res.chunked(true);
    else result_.keep_alive = false;
  }
  if (!codings.empty()) res.set(http::field::transfer_encoding, codings + ", chunked");
  res.keep_alive(result_.keep_alive);
  chunked_ = res.chunked();
  out_.clear();
  append_response_head(out_, res);
  head_pending_ = true;
  // Room for whole pieces: each read_some then takes up to 64 KiB from the socket, not
  // the 512 bytes an empty buffer would ask for (one write to the agent per read).
  buffer_.reserve(PieceBuffer::kSize);
  if (!bodiless && !parser_->is_done() && (buffer_.size() > 0 || req_.redaction)) {
    // Body bytes came with the header: parse them before answering, so a body whose
    // framing is broken from the start (bad chunk size) gets a 502, not a cut-off 200. An
    // answer searched for a secret waits for its first piece, so that a secret there is
    // refused rather than cut.
    header_held_ = true;
    return read_piece();
  }
  send_piece(nullptr, 0);  // the head at once (a stream's first bytes may be a while), or the whole bodiless answer
}

// The upstream took the WebSocket upgrade: its 101 goes to the agent with the upgrade's
// two hop-by-hop fields (and its Sec-WebSocket-* ones), and the relay ends with the
// connection switched. A credential went into the upgrade request: the 101's head is
// searched as any answer's; the frames after it are not (docs/security.md).
template <class Client, class Upstream>
void ResponseRelay<Client, Upstream>::switch_protocols() {
  auto& res = parser_->get();
  if (!switches_to_websocket(res))
    return fail(502, "the upstream answered 101 to a WebSocket upgrade without switching to websocket");
  if (auto why = unsearchable({}); !why.empty()) return fail(502, std::move(why));
  strip_response_fields(res, std::nullopt);
  res.erase(http::field::content_length);
  res.version(11);
  res.set(http::field::connection, "Upgrade");
  res.set(http::field::upgrade, "websocket");
  result_.upgraded = true;
  result_.keep_alive = false;
  upstream_keep_alive_ = false;
  chunked_ = false;
  out_.clear();
  append_response_head(out_, res);
  head_pending_ = true;
  send_piece(nullptr, 0);  // a 101 has no body: the head is the last piece
}

template <class Client, class Upstream>
std::string ResponseRelay<Client, Upstream>::take_early() {
  std::string out(static_cast<const char*>(buffer_.data().data()), buffer_.size());
  buffer_.clear();
  buffer_.shrink_to_fit();
  return out;
}

// An answer to a request a credential went into: why its head cannot go to the agent
// (a secret in it, a coding the search cannot read), else empty.
template <class Client, class Upstream>
std::string ResponseRelay<Client, Upstream>::unsearchable(const std::string& codings) const {
  if (!req_.redaction) return {};
  const auto& res = parser_->get();
  auto why = req_.redaction->check_head(res.reason(), res);
  if (why.empty() && !codings.empty())
    why = "the upstream's answer has the transfer coding '" + codings +
          "', which netbox cannot search for the credential that went into the request";
  return why;
}

template <class Client, class Upstream>
void ResponseRelay<Client, Upstream>::read_piece() {
  if (parser_->is_done()) return req_.redaction ? redact_piece(0) : send_piece(nullptr, 0);
  auto& body = parser_->get().body();
  body.data = pieces_.get();
  body.size = PieceBuffer::kSize;
  if (buffer_.size() > 0) {
    // Bytes that came with the header (most small answers) are parsed here and now;
    // async_read_some would only post the same parse through the io_context. Only a
    // parser that needs more than is here goes on to read the socket.
    beast::error_code ec;
    const std::size_t used = parser_->put(buffer_.data(), ec);
    buffer_.consume(used);
    if (ec != http::error::need_more) return piece_read(ec);
  }
  beast::get_lowest_layer(*upstream_).expires_after(idle_timeout_);
  // read_some, not read: whatever arrived goes on at once. A whole read would hold a
  // trickling stream (server-sent events, tokens) until 64 KiB had gathered.
  http::async_read_some(*upstream_, buffer_, *parser_,
                        [this, keep = keep_.lock()](beast::error_code ec, std::size_t) { piece_read(ec); });
}

template <class Client, class Upstream>
void ResponseRelay<Client, Upstream>::piece_read(beast::error_code ec) {
  if (ec == http::error::need_buffer) ec = {};
  if (ec) {
    const bool timeout = ec == beast::error::timeout;
    if (header_held_) {  // nothing went to the agent yet: answer instead of cutting
      header_held_ = false;
      if (timeout) return fail(504, "the upstream stopped sending the body (timeout)");
      return fail(502, "the upstream's response body was not valid HTTP: " + ec.message());
    }
    counters_.upstream_errors.fetch_add(1);
    return finish(timeout ? "the upstream stopped sending the body (timeout)"
                          : "reading the response body failed: " + ec.message());
  }
  const auto got = PieceBuffer::kSize - parser_->get().body().size;
  // Only framing arrived (a chunk header): nothing to pass on yet, and an empty piece
  // must not be written, where it would read as the last chunk.
  if (got == 0 && !parser_->is_done()) return read_piece();
  if (req_.redaction) return redact_piece(got);
  send_allowed(pieces_.get(), got);
}

// The held tail and the new piece are searched as one window; what the next piece could
// complete into a form of the secret stays for it.
template <class Client, class Upstream>
void ResponseRelay<Client, Upstream>::redact_piece(std::size_t got) {
  window_.append(pieces_.get(), got);
  const bool last = parser_->is_done();
  auto why = req_.redaction->redact(window_);
  // A trailer is never relayed; one holding the secret still stops the answer.
  if (why.empty() && last) why = req_.redaction->check_head({}, parser_->get());
  if (!why.empty()) {
    if (!header_held_) return finish(std::move(why));  // part of it went: cut
    header_held_ = false;
    return fail(502, std::move(why));
  }
  const std::size_t n = window_.size() - (last ? 0 : req_.redaction->tail().of(window_));
  if (n == 0 && !last) return read_piece();
  send_allowed(window_.data(), n);
}

// What the budgets allow of `n` body bytes goes; past a budget the answer is cut there
// (Exchange::finish completes the row as `budget`).
template <class Client, class Upstream>
void ResponseRelay<Client, Upstream>::send_allowed(const char* data, std::size_t n) {
  if (req_.meter && n > 0) {
    const auto ok = static_cast<std::size_t>(req_.meter->down(n));
    if (ok < n) {
      cut_ = true;
      n = ok;
      if (n == 0) return finish(req_.meter->cut()->reason);
    }
  }
  *bytes_down_ += n;
  result_.bytes += n;
  send_piece(data, n);
}

// One write to the agent: the head if it has not gone yet, `got` body bytes, and the
// end of the body once the upstream's has ended.
template <class Client, class Upstream>
void ResponseRelay<Client, Upstream>::send_piece(const char* data, std::size_t got) {
  header_held_ = false;
  sent_ = got;
  result_.started = true;
  last_piece_ = parser_->is_done() && !cut_;  // a cut answer is never framed as complete
  if (!head_pending_) out_.clear();
  head_pending_ = false;
  const auto tail = frame_piece(out_, chunked_, got, last_piece_);
  const std::array<asio::const_buffer, 3> pieces{asio::buffer(out_), asio::buffer(data, got),
                                                 asio::buffer(tail.data(), tail.size())};
  beast::get_lowest_layer(client_).expires_after(idle_timeout_);
  asio::async_write(client_, pieces, [this, keep = keep_.lock()](beast::error_code ec, std::size_t) { on_piece_written(ec); });
}

template <class Client, class Upstream>
void ResponseRelay<Client, Upstream>::on_piece_written(beast::error_code ec) {
  if (ec) return finish("writing the response to the agent failed: " + ec.message());
  if (req_.redaction) window_.erase(0, sent_);
  if (cut_) return finish(req_.meter->cut()->reason);
  // limits.bandwidth_down: what just went earned a pause before the upstream is read again
  // (the last piece's is the bucket's debt: the agent's next relay waits it out).
  const auto pause = req_.meter ? req_.meter->pace_down(sent_) : Pacer::Duration::zero();
  if (last_piece_) return finish({});
  pacer_.after(pause, beast::get_lowest_layer(client_).get_executor(), [this, keep = keep_.lock()] { read_piece(); });
}

template <class Client, class Upstream>
void ResponseRelay<Client, Upstream>::fail(unsigned answer, std::string error) {
  counters_.upstream_errors.fetch_add(1);
  result_.answer = answer;
  finish(std::move(error));
}

template <class Client, class Upstream>
void ResponseRelay<Client, Upstream>::finish(std::string error) {
  result_.error = std::move(error);
  result_.reusable = result_.error.empty() && upstream_keep_alive_ && parser_->is_done() && buffer_.size() == 0;
  parser_.reset();
  auto keep = keep_.lock();  // the owner lives until done_ returns
  keep_.reset();
  done_(std::move(result_));
}

template class ResponseRelay<beast::tcp_stream, beast::tcp_stream>;
template class ResponseRelay<AgentTlsStream, UpstreamPool::TlsStream>;

}  // namespace netbox::proxy
