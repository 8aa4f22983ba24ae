#include "upstream_tls.hpp"

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
    dial(ioc_, req_.endpoints, req_.dial, [self = shared_from_this()](DialResult r) { self->on_dialed(std::move(r)); });
  }

 private:
  void on_dialed(DialResult r) {
    if (r.failure != DialFailure::none) {
      return fail(http_status(r.failure),
                  r.error);
    }
    answer_.address = r.endpoint.address().to_string();
    stream_.emplace(std::move(r.socket), inspector_.upstream_context());
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
    timer_.expires_after(req_.timeout);
    timer_.async_wait([weak = weak_from_this()](boost::system::error_code e) {
      if (e) return;
      if (auto self = weak.lock()) {
        self->timed_out_ = true;
        boost::system::error_code ignored;
        self->stream_->lowest_layer().close(ignored);
      }
    });
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
    asio::async_write(*stream_, asio::buffer(req_.bytes),
                      [self = shared_from_this()](boost::system::error_code e, std::size_t) { self->on_written(e); });
  }

  void on_written(boost::system::error_code ec) {
    if (ec) return fail(timed_out_ ? 504 : 502, "sending the request upstream failed: " + ec.message());
    read_response();
  }

  void read_response() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(kHeaderLimit));
    parser_->body_limit(req_.body_limit);
    parser_->skip(req_.head);
    http::async_read(*stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code e, std::size_t) { self->on_response(e); });
  }

  void on_response(beast::error_code ec) {
    if (ec) {
      if (timed_out_) return fail(504, "the upstream did not answer in time");
      if (ec == http::error::body_limit) return fail(502, "the upstream's answer is larger than netbox relays");
      return fail(502, "reading the upstream's answer failed: " + ec.message());
    }
    const unsigned status = parser_->get().result_int();
    if (status >= 100 && status < 200) return read_response();  // an interim answer: the real one follows
    if (const auto cl = parser_->content_length()) answer_.content_length = *cl;
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
      boost::system::error_code ignored;
      stream_->lowest_layer().close(ignored);  // one connection per request: no TLS close_notify wait
    }
    auto done = std::move(done_);
    done(std::move(answer_));
  }

  asio::io_context& ioc_;
  Inspector& inspector_;
  UpstreamTlsRequest req_;
  std::function<void(UpstreamAnswer)> done_;
  asio::steady_timer timer_;
  std::optional<ssl::stream<tcp::socket>> stream_;
  beast::flat_buffer buffer_;
  std::optional<http::response_parser<http::string_body>> parser_;
  UpstreamAnswer answer_;
  bool timed_out_ = false;
};

}  // namespace

void fetch_over_tls(asio::io_context& ioc, Inspector& inspector, UpstreamTlsRequest request,
                    std::function<void(UpstreamAnswer)> done) {
  std::make_shared<UpstreamTls>(ioc, inspector, std::move(request), std::move(done))->start();
}

}  // namespace netbox::proxy
