#include "response_relay.hpp"

#include "head_writer.hpp"
#include "headers.hpp"
#include "request_head.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>

#include <array>

namespace netbox::proxy {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

void ResponseRelay::start(beast::tcp_stream& upstream, const RelayedRequest& req, std::chrono::milliseconds idle_timeout,
                          std::uint64_t& bytes_down, std::shared_ptr<void> keep) {
  upstream_ = &upstream;
  req_ = req;
  idle_timeout_ = idle_timeout;
  bytes_down_ = &bytes_down;
  keep_ = std::move(keep);
  result_ = RelayResult{};
  result_.keep_alive = req.keep_alive;
  header_held_ = false;
  buffer_.clear();
  read_header();
}

// Also after an interim answer (103 Early Hints ...): it is dropped and the final one
// awaited, so it can never be taken for the answer to the next request on a pooled
// connection.
void ResponseRelay::read_header() {
  parser_.emplace();
  parser_->header_limit(kHeaderLimit);
  parser_->body_limit(boost::none);
  if (req_.method == http::verb::head) parser_->skip(true);
  upstream_->expires_after(idle_timeout_);
  http::async_read_header(*upstream_, buffer_, *parser_,
                          [this, keep = keep_](beast::error_code ec, std::size_t) { on_header(ec); });
}

void ResponseRelay::on_header(beast::error_code ec) {
  if (ec) {
    result_.unanswered = req_.reused_upstream && !parser_->got_some() && ec != beast::error::timeout;
    if (result_.unanswered && req_.may_resend) {  // the pooled connection had gone stale
      result_.resend = true;
      return finish("the reused upstream connection closed before answering (" + ec.message() + ")");
    }
    if (ec == beast::error::timeout)
      return fail(504, "the upstream did not answer within " + std::to_string(idle_timeout_.count()) + " ms");
    if (result_.unanswered)
      return fail(502, "the reused upstream connection closed before answering (" + ec.message() + ")");
    return fail(502, "the upstream's response was not valid HTTP: " + ec.message());
  }
  auto& res = parser_->get();
  result_.status = static_cast<int>(res.result_int());
  if (result_.status == 101)  // Upgrade was stripped from the request: a broken upstream
    return fail(502, "the upstream switched protocols (101) although no upgrade was asked for");
  if (result_.status / 100 == 1) return read_header();
  upstream_keep_alive_ = res.keep_alive() && res.version() == 11;
  const bool bodiless = req_.method == http::verb::head || result_.status == 204 || result_.status == 304;
  const bool had_length = res.has_content_length();
  // Codings other than chunked stay on the body the parser gives (gzip ...): the agent
  // gets them named, with the body re-chunked.
  const auto codings = bodiless ? std::string() : remaining_transfer_codings(res, parser_->chunked());
  if (!codings.empty() && req_.version < 11)
    return fail(502, "the upstream's response has the transfer coding '" + codings +
                         "', which an HTTP/1.0 request cannot receive");
  std::optional<std::uint64_t> length;
  if (had_length) {
    if (const auto n = parser_->content_length()) length = *n;
  }
  strip_response_fields(res, length);
  res.version(req_.version);
  if (!bodiless && !had_length) {
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
  if (!bodiless && buffer_.size() > 0 && !parser_->is_done()) {
    // Body bytes came with the header: parse them before answering, so a body whose
    // framing is broken from the start (bad chunk size) gets a 502, not a cut-off 200.
    header_held_ = true;
    return read_piece();
  }
  send_piece(0);  // the head at once (a stream's first bytes may be a while), or the whole bodiless answer
}

void ResponseRelay::read_piece() {
  if (parser_->is_done()) return send_piece(0);
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
  upstream_->expires_after(idle_timeout_);
  // read_some, not read: whatever arrived goes on at once. A whole read would hold a
  // trickling stream (server-sent events, tokens) until 64 KiB had gathered.
  http::async_read_some(*upstream_, buffer_, *parser_,
                        [this, keep = keep_](beast::error_code ec, std::size_t) { piece_read(ec); });
}

void ResponseRelay::piece_read(beast::error_code ec) {
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
  *bytes_down_ += got;
  result_.bytes += got;
  send_piece(got);
}

// One write to the agent: the head if it has not gone yet, `got` body bytes, and the
// end of the body once the upstream's has ended.
void ResponseRelay::send_piece(std::size_t got) {
  header_held_ = false;
  result_.started = true;
  last_piece_ = parser_->is_done();
  if (!head_pending_) out_.clear();
  head_pending_ = false;
  const auto tail = frame_piece(out_, chunked_, got, last_piece_);
  const std::array<asio::const_buffer, 3> pieces{asio::buffer(out_), asio::buffer(pieces_.get(), got),
                                                 asio::buffer(tail.data(), tail.size())};
  client_.expires_after(idle_timeout_);
  asio::async_write(client_, pieces, [this, keep = keep_](beast::error_code ec, std::size_t) { on_piece_written(ec); });
}

void ResponseRelay::on_piece_written(beast::error_code ec) {
  if (ec) return finish("writing the response to the agent failed: " + ec.message());
  if (!last_piece_) return read_piece();
  finish({});
}

void ResponseRelay::fail(unsigned answer, std::string error) {
  counters_.upstream_errors.fetch_add(1);
  result_.answer = answer;
  finish(std::move(error));
}

void ResponseRelay::finish(std::string error) {
  result_.error = std::move(error);
  result_.reusable = result_.error.empty() && upstream_keep_alive_ && parser_->is_done() && buffer_.size() == 0;
  parser_.reset();
  auto keep = std::move(keep_);  // the owner lives until done_ returns
  done_(std::move(result_));
}

}  // namespace netbox::proxy
