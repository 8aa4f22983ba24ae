#pragma once
// A control socket client for the tests: JSON lines to `netbox proxy --control`.
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <nlohmann/json.hpp>

#include <istream>
#include <string>

namespace netbox::test {

class ControlClient {
 public:
  explicit ControlClient(const std::string& path) : socket_(ioc_) {
    socket_.connect(boost::asio::local::stream_protocol::endpoint(path));
  }
  nlohmann::json call(const nlohmann::json& req) {
    const auto line = req.dump() + "\n";
    boost::asio::write(socket_, boost::asio::buffer(line));
    boost::asio::read_until(socket_, buf_, '\n');
    std::istream is(&buf_);
    std::string reply;
    std::getline(is, reply);
    return nlohmann::json::parse(reply);
  }
  void close() { socket_.close(); }
  void write_raw(const std::string& bytes) { boost::asio::write(socket_, boost::asio::buffer(bytes)); }
  // The next reply line, or empty once the proxy has closed the connection.
  std::string read_line() {
    boost::system::error_code ec;
    boost::asio::read_until(socket_, buf_, '\n', ec);
    if (ec) return {};
    std::istream is(&buf_);
    std::string reply;
    std::getline(is, reply);
    return reply;
  }

 private:
  boost::asio::io_context ioc_;
  boost::asio::local::stream_protocol::socket socket_;
  boost::asio::streambuf buf_;
};

}  // namespace netbox::test
