#include "upstream_tls.hpp"

#include "headers.hpp"
#include "request_head.hpp"

#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <memory>

namespace netbox::proxy {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

class UpstreamTls : public std::enable_shared_from_this<UpstreamTls> {
 public:
  UpstreamTls(asio::io_context& ioc, Inspector& inspector, UpstreamTlsRequest r,
              std::function<void(UpstreamAnswer)> done)
      : ioc_(ioc), inspector_(inspector), req_(std::move(r)), done_(std::move(done)), timer_(ioc) {}

  void start() {
    if (req_.pool) {
      for (const auto& ep : req_.endpoints) {
        UpstreamPool::tls_key(key_, req_.pool_scope, ep, req_.host, trust());
        if (auto s = req_.pool->take_tls(key_)) {
          stream_ = std::move(s);
          reused_ = true;
          answer_.address = ep.address().to_string();
          arm();
          return send();
        }
      }
    }
    dial_afresh();
  }

 private:
  // The trust store every connection here is verified against, as the pool key names it.
  const void* trust() { return inspector_.upstream_context().native_handle(); }

  void dial_afresh() {
    reused_ = false;
    dial(ioc_, req_.endpoints, req_.dial, [self = shared_from_this()](DialResult r) { self->on_dialed(std::move(r)); });
  }

  // The timer measures silence: every byte read or written moves last_ on, and a wait
  // that ends before idle_timeout of silence waits again for the rest. Re-arming per read
  // would cost a cancel and a new wait for each piece of a stream.
  void arm() {
    touch();
    wait_idle();
  }
  void touch() { last_ = std::chrono::steady_clock::now(); }
  void wait_idle() {
    timer_.expires_at(last_ + req_.idle_timeout);
    timer_.async_wait([weak = weak_from_this()](boost::system::error_code e) {
      if (e) return;
      auto self = weak.lock();
      if (!self) return;
      if (std::chrono::steady_clock::now() - self->last_ < self->req_.idle_timeout) return self->wait_idle();
      self->timed_out_ = true;
      boost::system::error_code ignored;
      if (self->stream_) self->stream_->lowest_layer().close(ignored);
    });
  }

  void on_dialed(DialResult r) {
    if (r.failure != DialFailure::none) return fail(http_status(r.failure), r.error);
    answer_.address = r.endpoint.address().to_string();
    if (req_.pool) UpstreamPool::tls_key(key_, req_.pool_scope, r.endpoint, req_.host, trust());
    stream_ = std::make_unique<UpstreamPool::TlsStream>(std::move(r.socket), inspector_.upstream_context());
    SSL* s = stream_->native_handle();
    boost::system::error_code ec;
    (void)asio::ip::make_address(req_.host, ec);
    if (ec) {
      // SSL_set_tlsext_host_name, without its C cast.
      SSL_ctrl(s, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, const_cast<char*>(req_.host.c_str()));
      SSL_set1_host(s, req_.host.c_str());
    } else {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s), req_.host.c_str());
    }
    arm();
    stream_->async_handshake(ssl::stream_base::client,
                             [self = shared_from_this()](boost::system::error_code e) { self->on_handshake(e); });
  }

  void on_handshake(boost::system::error_code ec) {
    if (ec) {
      const long verify = SSL_get_verify_result(stream_->native_handle());
      if (verify != X509_V_OK)
        return fail(502, "the upstream's certificate for " + req_.host +
                             " was refused: " + X509_verify_cert_error_string(verify));
      return fail(timed_out_ ? 504 : 502, timed_out_ ? "the TLS handshake with the upstream timed out"
                                                     : "the TLS handshake with the upstream failed: " + ec.message());
    }
    send();
  }

  // Piece by piece, so that a large body going to a slow upstream is progress, not silence.
  void send() {
    const auto rest = asio::buffer(req_.bytes) + sent_;
    if (rest.size() == 0) return on_written({});
    stream_->async_write_some(rest, [self = shared_from_this()](boost::system::error_code e, std::size_t n) {
      if (e) return self->on_written(e);
      self->sent_ += n;
      self->touch();
      self->send();
    });
  }

  // A pooled connection the upstream closed (or reset) before answering anything: the
  // request goes again over a new one if it may (the close may have raced its sending).
  bool resend_after(bool answered) {
    if (!reused_ || answered || timed_out_ || !req_.may_resend) return false;
    timer_.cancel();
    stream_.reset();
    buffer_.clear();
    sent_ = 0;
    dial_afresh();
    return true;
  }

  void on_written(boost::system::error_code ec) {
    if (ec) {
      if (resend_after(false)) return;
      return fail(timed_out_ ? 504 : 502, "sending the request upstream failed: " + ec.message());
    }
    read_response();
  }

  void read_response() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(kHeaderLimit));
    parser_->body_limit(req_.body_limit);
    parser_->skip(req_.head);
    read_more();
  }

  // read_some, not read: each piece that arrives is activity (touch), so an answer that
  // streams for longer than the idle timeout is read whole.
  void read_more() {
    http::async_read_some(*stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code e, std::size_t) {
      if (e || self->parser_->is_done()) return self->on_response(e);
      self->touch();
      self->read_more();
    });
  }

  void on_response(beast::error_code ec) {
    if (ec) {
      if (resend_after(parser_->got_some() || interim_)) return;
      if (timed_out_) return fail(504, "the upstream sent nothing for " + std::to_string(req_.idle_timeout.count()) + " ms (limits.idle_timeout_ms)");
      if (ec == http::error::body_limit) return fail(502, "the upstream's answer is larger than netbox relays");
      return fail(502, "reading the upstream's answer failed: " + ec.message());
    }
    const unsigned status = parser_->get().result_int();
    if (status >= 100 && status < 200) {  // an interim answer: the real one follows
      interim_ = true;
      return read_response();
    }
    if (const auto cl = parser_->content_length()) answer_.content_length = *cl;
    if (!req_.head) answer_.transfer_codings = remaining_transfer_codings(parser_->get(), parser_->chunked());
    // Framed by its own length or chunks, keep-alive, and nothing after it: anything the
    // upstream sent beyond the answer would be read as the next request's answer.
    reusable_ = req_.pool && req_.may_pool && !timed_out_ && parser_->is_done() && parser_->keep_alive() &&
                !parser_->need_eof() && buffer_.size() == 0;
    answer_.response.emplace(parser_->release());
    finish();
  }

  void fail(unsigned status, std::string error) {
    answer_.failure_status = status;
    answer_.error = std::move(error);
    finish();
  }

  void finish() {
    timer_.cancel();
    if (stream_) {
      if (reusable_) {
        req_.pool->put(key_, std::move(stream_));
      } else {
        boost::system::error_code ignored;
        stream_->lowest_layer().close(ignored);  // no TLS close_notify wait
        stream_.reset();
      }
    }
    auto done = std::move(done_);
    done(std::move(answer_));
  }

  asio::io_context& ioc_;
  Inspector& inspector_;
  UpstreamTlsRequest req_;
  std::function<void(UpstreamAnswer)> done_;
  asio::steady_timer timer_;
  std::unique_ptr<UpstreamPool::TlsStream> stream_;
  std::string key_;
  beast::flat_buffer buffer_;
  std::optional<http::response_parser<http::string_body>> parser_;
  UpstreamAnswer answer_;
  std::chrono::steady_clock::time_point last_;  // the last byte read or written
  std::size_t sent_ = 0;                        // of req_.bytes
  bool timed_out_ = false;
  bool reused_ = false;
  bool interim_ = false;
  bool reusable_ = false;
};

}  // namespace

void fetch_over_tls(asio::io_context& ioc, Inspector& inspector, UpstreamTlsRequest request,
                    std::function<void(UpstreamAnswer)> done) {
  std::make_shared<UpstreamTls>(ioc, inspector, std::move(request), std::move(done))->start();
}

}  // namespace netbox::proxy
