#include "support/proxy_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

#include <cctype>
#include <stdexcept>

namespace netbox::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

ProxyConnection::ProxyConnection(unsigned short port, std::chrono::milliseconds timeout)
    : stream_(ioc_), timeout_(timeout) {
  stream_.expires_after(timeout_);
  beast::error_code ec;
  stream_.socket().connect({asio::ip::make_address("127.0.0.1"), port}, ec);
  if (ec) throw std::runtime_error("cannot connect to the proxy on port " + std::to_string(port) + ": " + ec.message());
}

Reply ProxyConnection::send(const std::string& raw, bool is_connect) {
  Reply r;
  beast::error_code ec;
  write(raw);
  http::response_parser<http::string_body> parser;
  parser.body_limit(1ull << 30);
  if (raw.rfind("HEAD ", 0) == 0) parser.skip(true);  // a HEAD answer has no body
  stream_.expires_after(timeout_);
  http::async_read_header(stream_, buffer_, parser, [&](beast::error_code e, std::size_t) { ec = e; });
  ioc_.restart();
  ioc_.run();
  if (ec) {
    r.error = ec.message();
    return r;
  }
  const bool tunnel = is_connect && parser.get().result_int() / 100 == 2;
  if (!tunnel && !parser.is_done()) {
    stream_.expires_after(timeout_);
    http::async_read(stream_, buffer_, parser, [&](beast::error_code e, std::size_t) { ec = e; });
    ioc_.restart();
    ioc_.run();
    if (ec) r.error = ec.message();
  }
  const auto& msg = parser.get();
  r.status = static_cast<int>(msg.result_int());
  for (const auto& f : msg) {
    std::string name(f.name_string());
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers[name] = std::string(f.value());
  }
  if (!tunnel) r.body = msg.body();
  return r;
}

void ProxyConnection::write(const std::string& bytes) {
  beast::error_code ec;
  stream_.expires_after(timeout_);
  asio::async_write(stream_, asio::buffer(bytes), [&](beast::error_code e, std::size_t) { ec = e; });
  ioc_.restart();
  ioc_.run();
  if (ec) throw std::runtime_error("writing to the proxy failed: " + ec.message());
}

std::string ProxyConnection::read_exactly(std::size_t n) {
  std::string out;
  const auto take = std::min(n, buffer_.size());
  out.append(static_cast<const char*>(buffer_.data().data()), take);
  buffer_.consume(take);
  if (out.size() == n) return out;
  std::string rest(n - out.size(), '\0');
  beast::error_code ec;
  stream_.expires_after(timeout_);
  asio::async_read(stream_, asio::buffer(rest), [&](beast::error_code e, std::size_t) { ec = e; });
  ioc_.restart();
  ioc_.run();
  if (ec) throw std::runtime_error("reading from the proxy failed: " + ec.message());
  return out + rest;
}

bool ProxyConnection::closed_within(std::chrono::milliseconds wait) {
  if (buffer_.size() > 0) buffer_.consume(buffer_.size());
  char c;
  beast::error_code ec;
  std::size_t got = 0;
  stream_.expires_after(wait);
  for (;;) {
    stream_.async_read_some(asio::buffer(&c, 1), [&](beast::error_code e, std::size_t n) {
      ec = e;
      got = n;
    });
    ioc_.restart();
    ioc_.run();
    if (ec || got == 0) break;
  }
  return ec && ec != beast::error::timeout;
}

void ProxyConnection::shutdown_send() {
  beast::error_code ec;
  stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
}

Reply proxy_get(unsigned short proxy_port, const std::string& url, const std::string& extra_headers) {
  ProxyConnection c(proxy_port);
  // Host header from the URL's authority, as a client would send it.
  auto start = url.find("://");
  std::string host = start == std::string::npos ? "" : url.substr(start + 3);
  host = host.substr(0, host.find_first_of("/?#"));
  std::string raw = "GET " + url + " HTTP/1.1\r\n";
  if (extra_headers.find("Host:") == std::string::npos) raw += "Host: " + host + "\r\n";
  raw += extra_headers + "Connection: close\r\n\r\n";
  return c.send(raw);
}

Reply proxy_connect(unsigned short proxy_port, const std::string& authority) {
  ProxyConnection c(proxy_port);
  return c.send("CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n", true);
}

}  // namespace netbox::test
