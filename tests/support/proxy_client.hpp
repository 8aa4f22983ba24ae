#pragma once
// A small HTTP client for talking to the proxy in tests: raw requests over one
// connection (so keep-alive and tunnels can be exercised), every wait bounded.
#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <chrono>
#include <map>
#include <string>

namespace netbox::test {

struct Reply {
  int status = 0;                             // 0 when no response came
  std::map<std::string, std::string> headers; // names lower-cased
  std::string body;
  std::string error;                          // what went wrong reading it, if anything
  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

class ProxyConnection {
 public:
  explicit ProxyConnection(unsigned short port, std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // Writes `raw` as is and reads one response. For CONNECT, a 2xx answer has no body.
  Reply send(const std::string& raw, bool is_connect = false);
  // After a CONNECT: raw bytes through the tunnel.
  void write(const std::string& bytes);
  std::string read_exactly(std::size_t n);
  // True if the peer closes the connection (EOF or reset) within `wait`.
  bool closed_within(std::chrono::milliseconds wait);
  void shutdown_send();

 private:
  boost::asio::io_context ioc_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::chrono::milliseconds timeout_;
};

// One request on a fresh connection: "GET http://host/ HTTP/1.1" with Host and close.
Reply proxy_get(unsigned short proxy_port, const std::string& url, const std::string& extra_headers = {});
Reply proxy_connect(unsigned short proxy_port, const std::string& authority);

}  // namespace netbox::test
