#pragma once
// A TCP socket whose first reads return bytes netbox has already read from it: the TLS
// ClientHello of an inspected CONNECT, which the proxy reads (and checks) before the TLS
// engine starts, and then hands to the engine as if it came from the socket. Only what
// boost::asio::ssl::stream needs of its next layer.
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>

#include <string>

namespace netbox::proxy {

class PrefixedStream {
 public:
  using executor_type = boost::asio::ip::tcp::socket::executor_type;
  using lowest_layer_type = boost::asio::ip::tcp::socket::lowest_layer_type;

  PrefixedStream(boost::asio::ip::tcp::socket socket, std::string prefix)
      : socket_(std::move(socket)), prefix_(std::move(prefix)) {}

  executor_type get_executor() { return socket_.get_executor(); }
  lowest_layer_type& lowest_layer() { return socket_.lowest_layer(); }
  const lowest_layer_type& lowest_layer() const { return socket_.lowest_layer(); }
  boost::asio::ip::tcp::socket& socket() { return socket_; }

  template <class MutableBuffers, class Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const MutableBuffers& b) {
          if (prefix_.empty()) return socket_.async_read_some(b, std::move(handler));
          const std::size_t n = boost::asio::buffer_copy(b, boost::asio::buffer(prefix_));
          prefix_.erase(0, n);
          // Replayed whole: its capacity (up to the ClientHello's 16 KiB) is not kept for
          // the life of an idle connection.
          if (prefix_.empty()) std::string().swap(prefix_);
          auto ex = boost::asio::get_associated_executor(handler, socket_.get_executor());
          boost::asio::post(ex, [h = std::move(handler), n]() mutable { h(boost::system::error_code{}, n); });
        },
        token, buffers);
  }

  template <class ConstBuffers, class Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return socket_.async_write_some(buffers, std::forward<Token>(token));
  }

 private:
  boost::asio::ip::tcp::socket socket_;
  std::string prefix_;
};

}  // namespace netbox::proxy
