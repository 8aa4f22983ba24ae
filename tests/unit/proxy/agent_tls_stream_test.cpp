// The agent's side of an inspected connection (agent_tls_stream.hpp) against a real TLS
// client on loopback: what the stream holds of an agent's upload that the request loop
// has not taken yet.
#include "inspect/agent_tls_stream.hpp"

#include "support/temp_dir.hpp"

#include "netbox/tls/certificate_authority.hpp"
#include "netbox/tls/leaf_certificate.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>

#include <gtest/gtest.h>

#include <array>
#include <thread>

namespace netbox::proxy {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

// An agent sending 16 MiB as fast as it can while the request loop reads slowly (its
// upstream is slow): the stream holds about a record of it, never what the socket had.
// It read everything the socket held into OpenSSL's input before, 31-58 MB per connection.
TEST(AgentTlsStream, AFastUploadIsHeldARecordAtATimeNotAsMuchAsTheSocketHas) {
  test::TempDir dir;
  auto ca = tls::CertificateAuthority::create(dir.path() / "ca");
  tls::LeafMinter minter(ca);
  const auto leaf = minter.mint("agent.test");
  asio::ssl::context server_ctx(asio::ssl::context::tls_server);
  ASSERT_EQ(SSL_CTX_use_certificate(server_ctx.native_handle(), leaf.cert.get()), 1);
  ASSERT_EQ(SSL_CTX_use_PrivateKey(server_ctx.native_handle(), leaf.key.get()), 1);

  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const auto port = acceptor.local_endpoint().port();
  constexpr std::size_t kUpload = 16 * 1024 * 1024;
  std::thread agent([port] {
    asio::io_context cio;
    asio::ssl::context ctx(asio::ssl::context::tls_client);  // no verification: the test's own server
    asio::ssl::stream<tcp::socket> s(cio, ctx);
    s.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    s.handshake(asio::ssl::stream_base::client);
    const std::string piece(64 * 1024, 'u');
    boost::system::error_code ec;
    for (std::size_t sent = 0; sent < kUpload && !ec; sent += piece.size()) asio::write(s, asio::buffer(piece), ec);
    // Closed only once the server has closed: a close with the server's session tickets
    // unread would reset the connection and drop what the server had not read yet.
    s.next_layer().shutdown(tcp::socket::shutdown_send, ec);
    std::array<char, 4096> drain;
    while (!ec) s.next_layer().read_some(asio::buffer(drain), ec);
  });

  tcp::socket accepted = acceptor.accept();
  AgentTlsStream stream(std::move(accepted), server_ctx.native_handle(), {});
  boost::system::error_code handshake_ec;
  stream.async_handshake([&](boost::system::error_code ec, std::size_t) { handshake_ec = ec; });
  io.run();
  ASSERT_FALSE(handshake_ec) << handshake_ec.message();

  std::size_t most_held = 0, received = 0;
  std::array<char, 4096> buf;
  for (bool more = true; more;) {
    // The upstream is slow: by the next read the agent has filled the socket's buffers.
    std::this_thread::sleep_for(std::chrono::milliseconds(received < 256 * 1024 ? 20 : 0));
    stream.async_read_some(asio::buffer(buf), [&](boost::system::error_code ec, std::size_t n) {
      received += n;
      more = !ec;
    });
    io.restart();
    io.run();
    most_held = std::max(most_held, stream.input_held());
  }
  stream.lowest_layer().close();
  agent.join();
  EXPECT_GE(received, kUpload) << "the whole upload arrives";
  EXPECT_LE(most_held, 64u * 1024) << "bytes of the agent's upload held in the stream at once";
}

}  // namespace
}  // namespace netbox::proxy
