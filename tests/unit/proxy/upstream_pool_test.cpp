// The idle upstream pool holding verified TLS connections (inspected HTTPS) beside plain
// ones: one bound for both (each is a descriptor), TLS keys apart from plain ones, and a
// TLS connection the upstream wrote to while idle never taken. Real loopback sockets; the
// far ends show which connections the pool closed.
#include "upstream/upstream_pool.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/write.hpp>

#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>

#include <memory>
#include <vector>

namespace netbox::proxy {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

class UpstreamPoolTls : public ::testing::Test {
 protected:
  UpstreamPoolTls() : acceptor(ioc, {asio::ip::make_address("127.0.0.1"), 0}) {}

  // A connected pair: the near end for the pool, the far end (the "upstream") kept here.
  tcp::socket connect() {
    tcp::socket near(ioc);
    near.connect(acceptor.local_endpoint());
    far.push_back(acceptor.accept());
    return near;
  }
  std::unique_ptr<UpstreamPool::TlsStream> tls() {
    return std::make_unique<UpstreamPool::TlsStream>(connect(), ctx);
  }
  // Whether the pool closed the near end of far[i]: the far end reads EOF (or a reset, when
  // the near end closed with bytes unread) at once.
  bool closed(std::size_t i) {
    pollfd p{far[i].native_handle(), POLLIN, 0};
    if (::poll(&p, 1, 0) != 1) return false;
    char c;
    return ::recv(far[i].native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT) <= 0;
  }
  std::string key_for(const std::string& agent, const std::string& host) {
    std::string k;
    UpstreamPool::tls_key(k, UpstreamPool::scope(agent, asio::ip::make_address("127.0.0.1")),
                          acceptor.local_endpoint(), host, ctx.native_handle());
    return k;
  }

  asio::io_context ioc;
  asio::ssl::context ctx{asio::ssl::context::tls_client};
  tcp::acceptor acceptor;
  std::vector<tcp::socket> far;
};

TEST_F(UpstreamPoolTls, TlsAndPlainConnectionsShareTheBoundsAndTheOldestGoes) {
  UpstreamPool pool({3, 2});
  pool.put(key_for("a", "one.test"), tls());
  pool.put(key_for("a", "two.test"), tls());
  pool.put(key_for("a", "three.test"), tls());  // over a's bound of 2: a's oldest closes
  EXPECT_EQ(pool.idle_count(), 2u);
  EXPECT_TRUE(closed(0));
  EXPECT_FALSE(closed(1));
  std::string plain;
  UpstreamPool::key(plain, UpstreamPool::scope("b", asio::ip::make_address("127.0.0.1")), acceptor.local_endpoint(),
                    "one.test");
  pool.put(plain, connect());
  pool.put(key_for("c", "one.test"), tls());  // over the total of 3: the oldest of all closes
  EXPECT_EQ(pool.idle_count(), 3u);
  EXPECT_TRUE(closed(1));
  EXPECT_FALSE(closed(2));
  EXPECT_FALSE(closed(3));
  EXPECT_FALSE(closed(4));
  EXPECT_TRUE(pool.take(plain));
  EXPECT_FALSE(pool.take_tls(key_for("a", "one.test")));  // closed by the bound
  EXPECT_TRUE(pool.take_tls(key_for("a", "three.test")));
}

TEST_F(UpstreamPoolTls, ATlsKeyNamesTheHostAndTheTrustStoreAndIsNoPlainKey) {
  std::string plain;
  UpstreamPool::key(plain, UpstreamPool::scope("a", asio::ip::make_address("127.0.0.1")), acceptor.local_endpoint(),
                    "one.test");
  EXPECT_NE(plain, key_for("a", "one.test"));
  EXPECT_NE(key_for("a", "one.test"), key_for("a", "two.test"));
  asio::ssl::context other_trust{asio::ssl::context::tls_client};
  std::string other;
  UpstreamPool::tls_key(other, UpstreamPool::scope("a", asio::ip::make_address("127.0.0.1")),
                        acceptor.local_endpoint(), "one.test", other_trust.native_handle());
  EXPECT_NE(other, key_for("a", "one.test"));

  UpstreamPool pool({8, 8});
  pool.put(key_for("a", "one.test"), tls());
  EXPECT_FALSE(pool.take_tls(key_for("a", "two.test")));
  EXPECT_FALSE(pool.take_tls(other));
  EXPECT_FALSE(pool.take(plain));
  EXPECT_TRUE(pool.take_tls(key_for("a", "one.test")));
}

TEST_F(UpstreamPoolTls, AConnectionTheUpstreamWroteToOrClosedWhileIdleIsNotTaken) {
  UpstreamPool pool({8, 8});
  pool.put(key_for("a", "one.test"), tls());
  asio::write(far[0], asio::buffer(std::string("HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\npoisoned")));
  EXPECT_FALSE(pool.take_tls(key_for("a", "one.test")));
  EXPECT_TRUE(closed(0)) << "and it is closed";

  pool.put(key_for("a", "two.test"), tls());
  far[1].close();
  EXPECT_FALSE(pool.take_tls(key_for("a", "two.test")));
  EXPECT_EQ(pool.idle_count(), 0u);
}

}  // namespace
}  // namespace netbox::proxy
