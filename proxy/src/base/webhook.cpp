#include "base/webhook.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <algorithm>
#include <charconv>

namespace netbox::proxy {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

std::optional<WebhookUrl> parse_webhook_url(const std::string& url) {
  constexpr std::string_view kScheme = "http://";
  if (!url.starts_with(kScheme)) return std::nullopt;
  std::string_view rest = std::string_view(url).substr(kScheme.size());
  WebhookUrl out;
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

Webhook::Webhook(WebhookUrl url, std::string written, Counters& counters, Logger& log)
    : url_(std::move(url)), written_(std::move(written)), counters_(counters), log_(log), thread_([this] { run(); }) {}

Webhook::~Webhook() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Webhook::post(std::string body) {
  {
    std::lock_guard lock(mu_);
    if (queue_.size() >= kQueue) {
      counters_.webhook_dropped.fetch_add(1);
      return;
    }
    queue_.push_back(std::move(body));
  }
  wake_.notify_one();
}

void Webhook::run() {
  std::unique_lock lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;  // what is queued at shutdown is not waited for
    std::string body = std::move(queue_.front());
    queue_.pop_front();
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
  beast::tcp_stream stream(ioc);
  asio::ip::tcp::resolver resolver(ioc);
  beast::error_code ec;
  auto step = [&](const char* what) {
    ioc.restart();
    ioc.run();
    if (ec) why = std::string(what) + ": " + ec.message();
    return !ec;
  };
  const auto found = resolver.resolve(url_.host, std::to_string(url_.port), ec);
  if (ec) {
    why = "resolving " + url_.host + ": " + ec.message();
    return false;
  }
  stream.expires_after(std::chrono::seconds(5));
  stream.async_connect(found, [&](beast::error_code e, const asio::ip::tcp::endpoint&) { ec = e; });
  if (!step("connecting")) return false;
  http::request<http::string_body> req(http::verb::post, url_.target, 11);
  req.set(http::field::host, url_.host + ":" + std::to_string(url_.port));
  req.set(http::field::content_type, "application/json");
  req.set(http::field::user_agent, "netbox-guardian");
  req.keep_alive(false);
  req.body() = body;
  req.prepare_payload();
  stream.expires_after(std::chrono::seconds(5));
  http::async_write(stream, req, [&](beast::error_code e, std::size_t) { ec = e; });
  if (!step("sending")) return false;
  beast::flat_buffer buf;
  http::response<http::string_body> res;
  stream.expires_after(std::chrono::seconds(5));
  http::async_read(stream, buf, res, [&](beast::error_code e, std::size_t) { ec = e; });
  if (!step("reading the answer")) return false;
  if (res.result_int() / 100 == 2) return true;
  why = "answered " + std::to_string(res.result_int());
  return false;
}

}  // namespace netbox::proxy
