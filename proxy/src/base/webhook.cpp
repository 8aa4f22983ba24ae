#include "base/webhook.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <charconv>

namespace netbox::proxy {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;

namespace {

// One step of a POST: the private io_context runs until the step's handler set `ec`.
struct Steps {
  asio::io_context& ioc;
  std::string& why;
  beast::error_code ec;
  bool done(const char* what) {
    ioc.restart();
    ioc.run();
    if (ec) why = std::string(what) + ": " + ec.message();
    return !ec;
  }
};

// The request and its answer over a connected stream (plain or TLS), each within 5 s.
template <class Stream>
bool post_on(Stream& stream, Steps& s, const WebhookUrl& url, const std::string& body) {
  http::request<http::string_body> req(http::verb::post, url.target, 11);
  const bool default_port = url.port == (url.tls ? 443 : 80);
  const std::string host = url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host;
  req.set(http::field::host, default_port ? host : host + ":" + std::to_string(url.port));
  req.set(http::field::content_type, "application/json");
  req.set(http::field::user_agent, "netbox-guardian");
  req.keep_alive(false);
  req.body() = body;
  req.prepare_payload();
  beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(5));
  http::async_write(stream, req, [&](beast::error_code e, std::size_t) { s.ec = e; });
  if (!s.done("sending")) return false;
  beast::flat_buffer buf;
  http::response<http::string_body> res;
  beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(5));
  http::async_read(stream, buf, res, [&](beast::error_code e, std::size_t) { s.ec = e; });
  if (!s.done("reading the answer")) return false;
  if (res.result_int() / 100 == 2) return true;
  s.why = "answered " + std::to_string(res.result_int());
  return false;
}

// The client side: TLS 1.2 or later, the peer verified against the system's roots or `ca`.
bool tls_context(ssl::context& ctx, const std::string& ca, std::string& why) {
  SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
  boost::system::error_code ec;
  if (ca.empty()) ctx.set_default_verify_paths(ec);
  else ctx.load_verify_file(ca, ec);
  if (ec) why = (ca.empty() ? std::string("the system trust store") : "guardian.webhook_ca " + ca) + ": " + ec.message();
  ctx.set_verify_mode(ssl::verify_peer);
  return !ec;
}

}  // namespace

std::optional<WebhookUrl> parse_webhook_url(const std::string& url) {
  WebhookUrl out;
  std::string_view rest = url;
  if (rest.starts_with("https://")) {
    out.tls = true;
    out.port = 443;
    rest.remove_prefix(8);
  } else if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
  } else {
    return std::nullopt;
  }
  const auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) out.target = std::string(rest.substr(slash));
  std::string_view host = authority;
  if (authority.starts_with('[')) {  // [::1]:9000
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = authority.substr(1, close - 1);
    authority.remove_prefix(close + 1);
    if (!authority.empty() && authority.front() != ':') return std::nullopt;
  } else if (const auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    authority.remove_prefix(colon);
  } else {
    authority = {};
  }
  if (authority.starts_with(':')) {
    const auto digits = authority.substr(1);
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out.port);
    if (ec != std::errc() || p != digits.data() + digits.size() || out.port == 0) return std::nullopt;
  }
  if (host.empty()) return std::nullopt;
  out.host = std::string(host);
  return out;
}

Webhook::Webhook(WebhookUrl url, std::string written, std::string ca, Counters& counters, Logger& log)
    : url_(std::move(url)),
      written_(std::move(written)),
      ca_(std::move(ca)),
      counters_(counters),
      log_(log),
      thread_([this] { run(); }) {}

Webhook::~Webhook() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Webhook::post(std::string body, bool urgent) {
  {
    std::lock_guard lock(mu_);
    auto& queue = urgent ? urgent_ : queue_;
    if (queue.size() >= (urgent ? kUrgentQueue : kQueue)) {
      counters_.webhook_dropped.fetch_add(1);
      return;
    }
    queue.push_back(std::move(body));
  }
  wake_.notify_one();
}

void Webhook::run() {
  std::unique_lock lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty() || !urgent_.empty(); });
    if (stopping_) return;  // what is queued at shutdown is not waited for
    auto& from = urgent_.empty() ? queue_ : urgent_;
    std::string body = std::move(from.front());
    from.pop_front();
    lock.unlock();
    auto delay = std::chrono::milliseconds(200);
    bool sent = false;
    std::string why;
    for (unsigned attempt = 1; attempt <= kAttempts && !sent; ++attempt) {
      sent = send(body, why);
      if (sent) break;
      counters_.webhook_failed.fetch_add(1);
      lock.lock();
      // Stopping cuts the backoff short: shutdown never waits on a dead webhook.
      if (wake_.wait_for(lock, delay, [this] { return stopping_; })) return;
      lock.unlock();
      delay = std::min<std::chrono::milliseconds>(delay * 2, std::chrono::seconds(10));
    }
    if (sent) counters_.webhook_sent.fetch_add(1);
    else
      log_.write(LogLevel::error, log_event::webhook_failed,
                 {{log_key::url, written_},
                  {log_key::attempts, static_cast<std::uint64_t>(kAttempts)},
                  {log_key::reason, why}});
    lock.lock();
  }
}

// One POST on a fresh connection, every step within 5 s (tcp_stream's timeout holds for
// its asynchronous operations only: each step runs the private io_context to its end).
bool Webhook::send(const std::string& body, std::string& why) {
  asio::io_context ioc;
  Steps s{ioc, why, {}};
  asio::ip::tcp::resolver resolver(ioc);
  const auto found = resolver.resolve(url_.host, std::to_string(url_.port), s.ec);
  if (s.ec) {
    why = "resolving " + url_.host + ": " + s.ec.message();
    return false;
  }
  beast::tcp_stream stream(ioc);
  stream.expires_after(std::chrono::seconds(5));
  stream.async_connect(found, [&](beast::error_code e, const asio::ip::tcp::endpoint&) { s.ec = e; });
  if (!s.done("connecting")) return false;
  if (!url_.tls) return post_on(stream, s, url_, body);
  // A context per POST: the CA file is read as it is now (webhooks are rare).
  ssl::context ctx(ssl::context::tls_client);
  if (!tls_context(ctx, ca_, why)) return false;
  beast::ssl_stream<beast::tcp_stream> tls(std::move(stream), ctx);
  SSL* h = tls.native_handle();
  boost::system::error_code not_ip;
  asio::ip::make_address(url_.host, not_ip);
  if (not_ip) {
    SSL_ctrl(h, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, const_cast<char*>(url_.host.c_str()));  // SSL_set_tlsext_host_name, without its C cast
    SSL_set1_host(h, url_.host.c_str());
  } else {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(h), url_.host.c_str());
  }
  beast::get_lowest_layer(tls).expires_after(std::chrono::seconds(5));
  tls.async_handshake(ssl::stream_base::client, [&](beast::error_code e) { s.ec = e; });
  if (!s.done("TLS handshake")) return false;
  return post_on(tls, s, url_, body);
}

}  // namespace netbox::proxy
