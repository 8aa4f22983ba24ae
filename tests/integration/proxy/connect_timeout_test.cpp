// A destination that never completes the TCP handshake: 504 after connect_timeout_ms.
// The destination is a loopback listener whose accept queue is full, so SYNs are dropped.
#include "proxy_fixture.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace netbox::test {
namespace {

class FullBacklog {
 public:
  FullBacklog() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    ::listen(fd_, 0);
    socklen_t len = sizeof sa;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
    for (int i = 0; i < 4; ++i) {
      int c = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      ::connect(c, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
      fillers_.push_back(c);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ~FullBacklog() {
    for (int c : fillers_) ::close(c);
    ::close(fd_);
  }
  unsigned short port() const { return port_; }

 private:
  int fd_ = -1;
  unsigned short port_ = 0;
  std::vector<int> fillers_;
};

TEST_F(ProxyTest, ConnectTimeoutGives504ForPlainHttpAndConnect) {
  FullBacklog sink;
  start_proxy(base_policy(R"("limits": {"connect_timeout_ms": 300}, "ports": [)" + std::to_string(sink.port()) + "]"));
  const auto target = "upstream.test:" + std::to_string(sink.port());
  auto r = proxy_get(port, "http://" + target + "/");
  EXPECT_EQ(r.status, 504);
  EXPECT_EQ(r.header("x-netbox-decision"), "error");
  auto row = last_row();
  EXPECT_EQ(row.decision, "error");  // allowed by the policy, then the dial failed
  EXPECT_EQ(row.status, 504);
  EXPECT_NE(row.error.find("timed out"), std::string::npos) << row.error;

  EXPECT_EQ(proxy_connect(port, target).status, 504);
  EXPECT_EQ(last_row().status, 504);
}

}  // namespace
}  // namespace netbox::test
