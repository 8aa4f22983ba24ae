#include "support/upstream_server.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <nlohmann/json.hpp>

#include "support/websocket_echo.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

namespace netbox::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

std::string pattern_bytes(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + 7) % 251);
  return s;
}

UpstreamServer::UpstreamServer() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(listen_fd_, 128) != 0)
    throw std::runtime_error("upstream server: cannot listen on 127.0.0.1");
  socklen_t len = sizeof sa;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len);
  port_ = ntohs(sa.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

UpstreamServer::~UpstreamServer() { stop(); }

void UpstreamServer::stop() {
  if (stopping_.exchange(true)) return;
  ::shutdown(listen_fd_, SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
  ::close(listen_fd_);
  {
    std::lock_guard lock(mu_);
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
  }
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void UpstreamServer::accept_loop() {
  while (!stopping_) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stopping_) return;
      continue;
    }
    connections_.fetch_add(1);
    std::lock_guard lock(mu_);
    open_fds_.push_back(fd);
    threads_.emplace_back([this, fd] { serve(fd); });
  }
}

void UpstreamServer::serve(int fd) {
  asio::io_context ioc;
  asio::ip::tcp::socket sock(ioc, asio::ip::tcp::v4(), fd);
  beast::flat_buffer buf;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(1ull << 30);
    beast::error_code ec;
    http::read(sock, buf, parser, ec);
    if (ec) break;
    auto req = parser.release();
    requests_.fetch_add(1);
    in_flight_.fetch_add(1);
    // Any path asked with `Upgrade: websocket` is a WebSocket echo.
    if (beast::websocket::is_upgrade(req)) {
      websocket_echo(sock, req);
      in_flight_.fetch_sub(1);
      break;
    }
    const std::string target(req.target());
    const std::string path = target.substr(0, target.find('?'));
    http::response<http::string_body> res{http::status::ok, req.version()};
    res.set(http::field::server, "netbox-test-upstream");
    res.keep_alive(req.keep_alive());
    if (path == "/stall") {
      // Hold the request until the peer goes away or the server stops.
      char c;
      while (!stopping_ && ::recv(fd, &c, 1, 0) > 0) {
      }
      in_flight_.fetch_sub(1);
      break;
    }
    if (path == "/early-hints") {
      const std::string hints = "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n";
      asio::write(sock, asio::buffer(hints), ec);
    }
    if (path == "/close") {
      in_flight_.fetch_sub(1);
      break;
    }
    if (path == "/garbage") {
      const std::string junk = "this is not HTTP at all\r\n\r\n";
      asio::write(sock, asio::buffer(junk), ec);
      in_flight_.fetch_sub(1);
      break;
    }
    if (path == "/body") {
      res.set(http::field::content_type, "application/octet-stream");
      res.body() = req.body();
    } else if (path == "/chunked") {
      const auto q = target.find("n=");
      res.set(http::field::content_type, "application/octet-stream");
      res.body() = pattern_bytes(q == std::string::npos ? 1024 : std::stoull(target.substr(q + 2)));
      res.chunked(true);
    } else if (path == "/big") {
      const auto q = target.find("n=");
      const std::size_t n = q == std::string::npos ? 1024 : std::stoull(target.substr(q + 2));
      res.set(http::field::content_type, "application/octet-stream");
      res.body() = pattern_bytes(n);
    } else {
      nlohmann::json j;
      j["method"] = std::string(req.method_string());
      j["target"] = target;
      j["host"] = std::string(req[http::field::host]);
      j["headers"] = nlohmann::json::object();
      for (const auto& f : req) j["headers"][std::string(f.name_string())] = std::string(f.value());
      j["body"] = req.body();
      res.set(http::field::content_type, "application/json");
      // A hostile client's bytes that are not UTF-8 echo as U+FFFD instead of ending the test.
      res.body() = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    if (!res.chunked()) res.prepare_payload();
    if (req.method() == http::verb::head) {
      http::response_serializer<http::string_body> sr{res};
      http::write_header(sock, sr, ec);
    } else {
      http::write(sock, res, ec);
    }
    in_flight_.fetch_sub(1);
    if (ec || !res.keep_alive()) break;
  }
  beast::error_code ignored;
  sock.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  {
    std::lock_guard lock(mu_);
    std::erase(open_fds_, fd);
  }
  sock.close(ignored);
}

}  // namespace netbox::test
