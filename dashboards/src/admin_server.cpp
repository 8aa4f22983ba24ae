#include "netbox/dashboards/admin_server.hpp"

#include "assets.hpp"
#include "netbox/dashboards/api.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <iostream>
#include <list>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

namespace netbox::dashboards {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// Admin traffic is a few scrapes and one or two browsers: a thread per connection
// keeps the code plain, and a cap keeps a misbehaving client from piling up threads.
constexpr std::size_t kMaxConnections = 64;
constexpr int kSocketTimeoutSeconds = 30;
// A request's head and body must arrive whole within this of its first byte: a client
// sending a byte every 29 s would otherwise hold a connection for ever (and 64 of them,
// every probe out).
constexpr std::chrono::seconds kRequestTime{10};

std::string_view header_or_empty(const http::request<http::string_body>& req, std::string_view name) {
  auto it = req.find(name);
  return it == req.end() ? std::string_view{} : std::string_view(it->value().data(), it->value().size());
}

// Constant-time comparison, so the token can't be guessed a byte at a time by timing.
bool same_secret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string cookie_value(std::string_view cookies, std::string_view name) {
  while (!cookies.empty()) {
    auto semi = cookies.find(';');
    auto part = cookies.substr(0, semi);
    cookies = semi == std::string_view::npos ? std::string_view{} : cookies.substr(semi + 1);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    if (part.size() > name.size() && part.substr(0, name.size()) == name && part[name.size()] == '=')
      return std::string(part.substr(name.size() + 1));
  }
  return {};
}

// An endpoint without a token answers only a Host a DNS rebinding cannot name: an
// address literal (what the endpoint listens on, or another of the machine's) or
// `localhost`, with or without a port. Otherwise any web page the operator visits could
// point its own name at 127.0.0.1 and read the audit through the browser.
bool unnamed_host(std::string_view host) {
  if (host.starts_with('[')) {  // [v6] or [v6]:port
    const auto end = host.find(']');
    if (end == std::string_view::npos) return false;
    beast::error_code ec;
    asio::ip::make_address_v6(std::string(host.substr(1, end - 1)), ec);
    return !ec && (end + 1 == host.size() || host[end + 1] == ':');
  }
  host = host.substr(0, host.find(':'));
  if (host == "localhost") return true;
  beast::error_code ec;
  asio::ip::make_address_v4(std::string(host), ec);
  return !ec;
}

// A browser says where a request comes from: an answer (POST) must come from the page
// itself, never from another site's page (nor another port's: cookies do not tell ports
// apart), and as JSON, which a cross-site form cannot send without asking first.
std::string cross_site_answer(const http::request<http::string_body>& req) {
  const auto type = header_or_empty(req, "Content-Type");
  if (!type.starts_with("application/json")) return "an answer must be sent as Content-Type: application/json";
  const auto site = header_or_empty(req, "Sec-Fetch-Site");
  if (!site.empty() && site != "same-origin") return "an answer must come from the admin page itself";
  const auto origin = header_or_empty(req, "Origin");
  if (!origin.empty()) {
    const auto host = header_or_empty(req, "Host");
    if (origin != "http://" + std::string(host) && origin != "https://" + std::string(host))
      return "an answer must come from the admin page itself, not " + std::string(origin);
  }
  return {};
}

}  // namespace

struct AdminServer::Impl {
  AdminOptions opts;
  asio::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  std::thread accept_thread;
  std::mutex mu;
  std::condition_variable cv;
  struct Conn;
  std::list<std::shared_ptr<Conn>> open;
  std::size_t active = 0;
  std::atomic<bool> stopping{false};

  http::response<http::string_body> handle(const http::request<http::string_body>& req) {
    std::string target(req.target());
    auto qpos = target.find('?');
    std::string path = target.substr(0, qpos);
    auto query = parse_query(qpos == std::string::npos ? std::string_view{} : std::string_view(target).substr(qpos + 1));

    auto reply = [&](http::status st, std::string_view type, std::string body) {
      http::response<http::string_body> res{st, req.version()};
      res.set(http::field::server, "netbox-admin");
      res.set(http::field::content_type, type);
      res.set(http::field::cache_control, "no-store");
      // The page loads only from this origin; nothing else may be fetched or framed.
      res.set("Content-Security-Policy",
              "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'");
      res.set("X-Content-Type-Options", "nosniff");
      res.keep_alive(req.keep_alive());
      res.body() = std::move(body);
      res.prepare_payload();
      return res;
    };

    if (opts.bearer_token.empty() && !unnamed_host(header_or_empty(req, "Host")))
      return reply(http::status::misdirected_request, "text/plain",
                   "an admin endpoint without a token answers only a Host that is an address or localhost "
                   "(a name could be another site's, rebound to this address); set --admin-token-file to use names\n");
    const bool answer = path == "/api/approve" || path == "/api/deny";
    if (answer ? req.method() != http::verb::post : req.method() != http::verb::get && req.method() != http::verb::head)
      return reply(http::status::method_not_allowed, "text/plain",
                   answer ? "answer with POST\n" : "the admin endpoint only answers GET (and POST to /api/approve, /api/deny)\n");
    if (path == "/healthz") return reply(http::status::ok, "text/plain", "ok\n");
    if (path == "/readyz") {
      bool ok = !opts.ready || opts.ready();
      return reply(ok ? http::status::ok : http::status::service_unavailable, "text/plain",
                   ok ? "ready\n" : "not ready: the audit store cannot write\n");
    }
    bool by_cookie = false;  // a browser's request: it may be another site's page's (answers check, approvals())
    if (!opts.bearer_token.empty()) {
      auto auth = header_or_empty(req, "Authorization");
      bool ok = auth.size() > 7 && auth.substr(0, 7) == "Bearer " && same_secret(auth.substr(7), opts.bearer_token);
      by_cookie = !ok && same_secret(cookie_value(header_or_empty(req, "Cookie"), "netbox_admin"), opts.bearer_token);
      ok = ok || by_cookie;
      if (!ok && path == "/" && query.count("token") && same_secret(query["token"], opts.bearer_token)) {
        // A browser can't send a bearer header: trade the token in the URL for a cookie once.
        auto res = reply(http::status::see_other, "text/plain", "");
        res.set(http::field::location, "/");
        res.set(http::field::set_cookie, "netbox_admin=" + opts.bearer_token + "; HttpOnly; SameSite=Strict; Path=/");
        return res;
      }
      if (!ok) {
        auto res = reply(http::status::unauthorized, "text/plain",
                         "this admin endpoint needs its token: send 'Authorization: Bearer TOKEN', or open /?token=TOKEN\n");
        res.set(http::field::www_authenticate, "Bearer");
        return res;
      }
    }
    try {
      if (path == "/metrics")
        return reply(http::status::ok, "text/plain; version=0.0.4; charset=utf-8", opts.metrics ? opts.metrics() : "");
      LiveStats live = opts.live ? opts.live() : LiveStats{};
      if (path == "/api/summary") return reply(http::status::ok, "application/json", api_summary(opts.audit_db, query, live));
      if (path == "/api/agents") return reply(http::status::ok, "application/json", api_agents(opts.audit_db, query));
      if (path.starts_with("/api/agents/") && opts.agent) {
        const std::string name = path.substr(std::string_view("/api/agents/").size());
        if (auto found = opts.agent(name)) return reply(http::status::ok, "application/json", std::move(*found));
        return reply(http::status::not_found, "application/json",
                     json_error("no agent named '" + name + "' has used this proxy in its current launch"));
      }
      if (path == "/api/requests") return reply(http::status::ok, "application/json", api_requests(opts.audit_db, query));
      if (path == "/api/events") return reply(http::status::ok, "application/json", api_events(opts.audit_db, query));
      if (path == "/api/launches") return reply(http::status::ok, "application/json", api_launches(opts.audit_db, query));
      if (path == "/api/timeline") return reply(http::status::ok, "application/json", api_timeline(opts.audit_db, query));
      if (path == "/api/pending" || answer) return approvals(path, req, by_cookie, reply);
    } catch (const BadParameter& e) {
      return reply(http::status::bad_request, "application/json", json_error(e.what()));
    } catch (const std::exception& e) {
      return reply(http::status::internal_server_error, "application/json", json_error(e.what()));
    }
    if (auto asset = find_asset(path))
      return reply(http::status::ok, asset->content_type, std::string(asset->body));
    return reply(http::status::not_found, "text/plain", "no such page: " + path + "\n");
  }

  // /api/pending, /api/approve, /api/deny: the proxy's approval ops (AdminOptions::approvals).
  template <class Reply>
  http::response<http::string_body> approvals(const std::string& path, const http::request<http::string_body>& req,
                                              bool by_cookie, Reply& reply) {
    const std::string& body = req.body();
    // Where no question can be answered, the list says so (200, for the page to hide its
    // panel without an error); answering still refuses.
    const char* cannot = !opts.approvals ? "this proxy asks nobody (no --ask agents)"
                         : opts.bearer_token.empty()
                             ? "questions are answered only on an admin endpoint with a token (--admin-token-file)"
                             : nullptr;
    if (cannot && path == "/api/pending")
      return reply(http::status::ok, "application/json",
                   nlohmann::json{{"pending", nlohmann::json::array()}, {"answerable", false}, {"why", cannot}}.dump());
    if (cannot)
      return reply(opts.approvals ? http::status::forbidden : http::status::not_found, "application/json",
                   json_error(cannot));
    std::string line = R"({"op":"pending"})";
    if (path != "/api/pending") {
      // A bearer header is a script's (no page can make a browser send one to another
      // site); a cookie goes with any page's request to this address.
      if (auto why = by_cookie ? cross_site_answer(req) : std::string(); !why.empty())
        return reply(http::status::forbidden, "application/json", json_error(why));
      auto j = nlohmann::json::parse(body, nullptr, false);
      if (!j.is_object()) return reply(http::status::bad_request, "application/json", json_error("the body must be a JSON object"));
      j["op"] = path == "/api/approve" ? "approve" : "deny";
      line = j.dump();
    }
    auto out = opts.approvals(line);
    const auto parsed = nlohmann::json::parse(out, nullptr, false);
    const bool ok = parsed.is_object() && parsed.value("ok", false);
    return reply(ok ? http::status::ok : http::status::conflict, "application/json", std::move(out));
  }

  static std::string json_error(std::string_view message) {
    std::string out = "{\"error\":\"";
    for (char c : message) {
      if (c == '"' || c == '\\') out += '\\';
      if (static_cast<unsigned char>(c) >= 0x20) out += c;
    }
    return out + "\"}";
  }

  // One connection: its socket, and whether a request is being answered on it (a
  // connection waiting for its next request, or still reading one, may be closed to make
  // room for a new one).
  struct Conn {
    explicit Conn(asio::io_context& ioc) : sock(ioc) {}
    tcp::socket sock;
    std::atomic<bool> answering{false};
    std::atomic<std::int64_t> waiting_since{0};  // steady clock ticks
  };

  static void receive_within(tcp::socket& sock, std::chrono::steady_clock::duration left) {
    const auto us = std::max<std::int64_t>(std::chrono::duration_cast<std::chrono::microseconds>(left).count(), 1000);
    timeval tv{static_cast<time_t>(us / 1'000'000), static_cast<suseconds_t>(us % 1'000'000)};
    setsockopt(sock.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }

  // The next request, whole: its first byte within kSocketTimeoutSeconds (an idle
  // keep-alive connection), the rest within kRequestTime of it.
  static bool read_request(tcp::socket& sock, beast::flat_buffer& buf, http::request_parser<http::string_body>& parser) {
    beast::error_code ec;
    std::optional<std::chrono::steady_clock::time_point> deadline;
    while (!parser.is_done()) {
      if (deadline) {
        const auto left = *deadline - std::chrono::steady_clock::now();
        if (left <= std::chrono::steady_clock::duration::zero()) return false;
        receive_within(sock, left);
      } else {
        receive_within(sock, std::chrono::seconds(kSocketTimeoutSeconds));
      }
      http::read_some(sock, buf, parser, ec);
      if (ec) return false;
      if (!deadline) deadline = std::chrono::steady_clock::now() + kRequestTime;
    }
    return true;
  }

  void serve(Conn& c) {
    beast::flat_buffer buf;
    beast::error_code ec;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(16 * 1024);
      parser.body_limit(16 * 1024);
      c.waiting_since = std::chrono::steady_clock::now().time_since_epoch().count();
      if (!read_request(c.sock, buf, parser)) break;
      c.answering = true;
      auto req = parser.release();
      auto res = handle(req);
      if (req.method() == http::verb::head) res.body().clear();
      http::write(c.sock, res, ec);
      c.answering = false;
      if (ec || !res.keep_alive() || stopping) break;
    }
    c.sock.shutdown(tcp::socket::shutdown_both, ec);
  }

  // Caller holds `mu`. All connections are taken: the one waiting longest for (or on) a
  // request is closed, so that a probe or the operator's page always gets in, whoever
  // holds the others. False: every one is answering (the new one is turned away).
  bool make_room() {
    Conn* oldest = nullptr;
    for (auto& c : open)
      if (!c->answering && (!oldest || c->waiting_since < oldest->waiting_since)) oldest = c.get();
    if (!oldest) return false;
    oldest->answering = true;  // chosen once
    ::shutdown(oldest->sock.native_handle(), SHUT_RDWR);
    return true;
  }

  void accept_loop() {
    for (;;) {
      auto conn = std::make_shared<Conn>(ioc);
      beast::error_code ec;
      acceptor.accept(conn->sock, ec);
      if (stopping) break;
      if (ec) continue;
      timeval tv{kSocketTimeoutSeconds, 0};
      setsockopt(conn->sock.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      std::unique_lock lk(mu);
      // A closed connection's thread leaves a moment later: up to twice the cap of threads.
      if (active >= kMaxConnections && (active >= 2 * kMaxConnections || !make_room())) {
        lk.unlock();
        conn->sock.close(ec);
        continue;
      }
      ++active;
      auto it = open.insert(open.end(), conn);
      lk.unlock();
      std::thread([this, conn = std::move(conn), it]() mutable {
        serve(*conn);
        {
          std::lock_guard g(mu);
          open.erase(it);
        }
        // The socket belongs to `ioc`: destroy it before stop() may see active == 0 and
        // let the server (and its io_context) go; the thread outlives that moment.
        conn.reset();
        std::lock_guard g(mu);
        --active;
        cv.notify_all();
      }).detach();
    }
  }
};

AdminServer::AdminServer(AdminOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->opts = std::move(options);
  beast::error_code ec;
  auto& a = impl_->acceptor;
  a.open(impl_->opts.listen.protocol(), ec);
  if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(impl_->opts.listen, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    std::ostringstream where;
    where << impl_->opts.listen;
    throw std::runtime_error("cannot listen on admin address " + where.str() + ": " + ec.message());
  }
  impl_->accept_thread = std::thread([this] { impl_->accept_loop(); });
}

AdminServer::~AdminServer() { stop(); }

void AdminServer::stop() {
  if (!impl_ || impl_->stopping.exchange(true)) return;
  beast::error_code ec;
  // shutdown() wakes the blocking accept(); then close every open connection and wait.
  ::shutdown(impl_->acceptor.native_handle(), SHUT_RDWR);
  if (impl_->accept_thread.joinable()) impl_->accept_thread.join();
  impl_->acceptor.close(ec);
  std::unique_lock lk(impl_->mu);
  for (auto& c : impl_->open) ::shutdown(c->sock.native_handle(), SHUT_RDWR);
  impl_->cv.wait(lk, [this] { return impl_->active == 0; });
}

tcp::endpoint AdminServer::local_endpoint() const {
  beast::error_code ec;
  return impl_->acceptor.local_endpoint(ec);
}

}  // namespace netbox::dashboards
