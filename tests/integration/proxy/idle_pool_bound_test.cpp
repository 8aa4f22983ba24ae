// Idle pooled upstream connections against the proxy's descriptors (issue 12, item 11,
// red team F3). One agent sends keep-alive GETs on one connection, each to another
// upstream address: every answered request leaves an idle upstream connection in the
// pool. Unbounded, they took every descriptor of a proxy under `ulimit -n 256` (16 of
// 250 requests got 502, accept failed with EMFILE, no other agent was answered).
// - The red team's scenario: all 250 are answered, the proxy stays below its dial
//   ceiling (the limit minus the reserve for accepts), another agent is answered and
//   accept never fails.
// - Dials never take the descriptors kept for accepts: with idle agent connections holding
//   the proxy up to its ceiling, a request that needs a new upstream gets 503 and why,
//   while accepting still works; with a pooled idle connection, that one is closed to
//   make room instead.
// - The per-agent bound closes the agent's own oldest idle connection (the upstream sees
//   exactly those close) and keeps the newest, and another agent's idle connection.
#include "low_fd_proxy.hpp"

#include "support/background_process.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace netbox::test {
namespace {

constexpr int kFdLimit = 256;
constexpr int kAddresses = 250;  // upstreams on 127.0.0.2 .. 127.0.0.251

std::string address(int i) { return "127.0.0." + std::to_string(2 + i); }

// A keep-alive HTTP upstream listening on one port of many loopback addresses, counting
// per address the connections it accepted and the ones the proxy closed.
class ManyAddressUpstream {
 public:
  explicit ManyAddressUpstream(int n) {
    for (int attempt = 0; attempt < 20 && listeners_.empty(); ++attempt) {
      port_ = free_port();
      for (int i = 0; i < n; ++i) {
        const int fd = listen_on(address(i), port_);
        if (fd < 0) {
          for (const auto& l : listeners_) ::close(l.fd);
          listeners_.clear();
          break;
        }
        listeners_.push_back({fd, address(i)});
      }
    }
    if (listeners_.empty()) throw std::runtime_error("no port free on every upstream address");
    if (::pipe(wake_) != 0) throw std::runtime_error("pipe");
    thread_ = std::thread([this] { run(); });
  }
  ~ManyAddressUpstream() {
    stop_ = true;
    [[maybe_unused]] auto w = ::write(wake_[1], "x", 1);
    thread_.join();
    for (const auto& l : listeners_) ::close(l.fd);
    for (const auto& c : conns_) ::close(c.fd);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }
  unsigned short port() const { return port_; }
  int accepted(const std::string& addr) {
    std::lock_guard lock(mu_);
    return accepted_[addr];
  }
  int closed(const std::string& addr) {
    std::lock_guard lock(mu_);
    return closed_[addr];
  }
  int accepted_total() {
    std::lock_guard lock(mu_);
    int n = 0;
    for (const auto& [a, c] : accepted_) n += c;
    return n;
  }
  int closed_total() {
    std::lock_guard lock(mu_);
    int n = 0;
    for (const auto& [a, c] : closed_) n += c;
    return n;
  }

 private:
  struct Listener {
    int fd;
    std::string addr;
  };
  struct Conn {
    int fd;
    std::string addr;
    std::string in;
  };

  static int listen_on(const std::string& addr, unsigned short port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    ::inet_pton(AF_INET, addr.c_str(), &sa.sin_addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(fd, 64) != 0) {
      ::close(fd);
      return -1;
    }
    return fd;
  }

  void run() {
    while (!stop_) {
      std::vector<pollfd> fds{{wake_[0], POLLIN, 0}};
      for (const auto& l : listeners_) fds.push_back({l.fd, POLLIN, 0});
      for (const auto& c : conns_) fds.push_back({c.fd, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), 1000) <= 0) continue;
      std::vector<Conn> next;
      for (std::size_t i = 0; i < listeners_.size(); ++i) {
        if (!(fds[1 + i].revents & POLLIN)) continue;
        for (int c; (c = ::accept4(listeners_[i].fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0;) {
          next.push_back({c, listeners_[i].addr, {}});
          std::lock_guard lock(mu_);
          ++accepted_[listeners_[i].addr];
        }
      }
      for (std::size_t i = 0; i < conns_.size(); ++i) {
        auto& c = conns_[i];
        if (fds[1 + listeners_.size() + i].revents && !serve(c)) {
          ::close(c.fd);
          std::lock_guard lock(mu_);
          ++closed_[c.addr];
          continue;
        }
        next.push_back(std::move(c));
      }
      conns_ = std::move(next);
    }
  }

  // Answers every complete request head; false once the peer has closed.
  static bool serve(Conn& c) {
    char buf[4096];
    const auto n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return false;
    if (n > 0) c.in.append(buf, static_cast<std::size_t>(n));
    for (std::size_t end; (end = c.in.find("\r\n\r\n")) != std::string::npos;) {
      c.in.erase(0, end + 4);
      static const std::string res = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
      [[maybe_unused]] auto sent = ::send(c.fd, res.data(), res.size(), MSG_NOSIGNAL);
    }
    return true;
  }

  unsigned short port_ = 0;
  std::vector<Listener> listeners_;
  std::vector<Conn> conns_;  // only the server thread touches these
  int wake_[2] = {-1, -1};
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::map<std::string, int> accepted_, closed_;
};

std::string policy_json(unsigned short upstream_port) {
  return R"({"version": 1, "allow": ["127.0.0.0/8"], "ports": [)" + std::to_string(upstream_port) +
         R"(], "internal": {"allow": ["127.0.0.0/8"]}})";
}

// One response from a keep-alive connection: its status, or 0 when the connection ended
// (or 10 s passed) first. Reads the head, then Content-Length bytes of body.
int read_status(int fd, std::string& buffered, std::string& response) {
  char buf[4096];
  std::size_t end;
  while ((end = buffered.find("\r\n\r\n")) == std::string::npos) {
    const auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return 0;
    buffered.append(buf, static_cast<std::size_t>(n));
  }
  const std::string head = buffered.substr(0, end);
  buffered.erase(0, end + 4);
  std::size_t length = 0;
  if (auto cl = head.find("\r\nContent-Length: "); cl != std::string::npos)
    length = std::stoul(head.substr(cl + 18));
  while (buffered.size() < length) {
    const auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return 0;
    buffered.append(buf, static_cast<std::size_t>(n));
  }
  response = head + "\r\n\r\n" + buffered.substr(0, length);
  buffered.erase(0, length);
  return head.rfind("HTTP/1.1 ", 0) == 0 ? std::stoi(head.substr(9, 3)) : 0;
}

// A keep-alive agent connection: one GET at a time, to http://ADDR:PORT/.
class Agent {
 public:
  Agent(const std::string& source, unsigned short proxy_port) : fd_(connect_from(source, proxy_port)) {}
  ~Agent() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool connected() const { return fd_ >= 0; }
  int get(const std::string& addr, unsigned short port) {
    const std::string authority = addr + ":" + std::to_string(port);
    const std::string req = "GET http://" + authority + "/ HTTP/1.1\r\nHost: " + authority + "\r\n\r\n";
    if (::send(fd_, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) return 0;
    return read_status(fd_, buffered_, last_);
  }
  const std::string& last_response() const { return last_; }

 private:
  int fd_;
  std::string buffered_;
  std::string last_;
};

std::size_t logged_number(const std::string& log, const std::string& field) {
  const auto at = log.find(" " + field + "=");
  if (at == std::string::npos) return 0;
  return std::stoul(log.substr(at + field.size() + 2));
}

// The proxy's startup line with its limits, once it is written.
std::string limits_line(BackgroundProcess& p) {
  eventually([&] { return p.log().find("dial_fd_ceiling=") != std::string::npos; });
  return p.log();
}

struct LowFdProxy {
  explicit LowFdProxy(const std::string& policy, std::vector<std::string> extra = {})
      : port(free_port()),
        process(with_fd_limit(kFdLimit, proxy_command(dir.write("policy.json", policy), port, dir.path() / "audit.db",
                                                      std::move(extra))),
                dir.path() / "proxy.log") {}
  TempDir dir;
  unsigned short port;
  BackgroundProcess process;
};

TEST(IdlePoolBound, ManyUpstreamsFromOneAgentLeaveDescriptorsForOthers) {
  ManyAddressUpstream upstream(kAddresses);
  LowFdProxy proxy(policy_json(upstream.port()));
  ASSERT_TRUE(wait_for_port(proxy.port)) << proxy.process.log();
  // A quarter of 256 is kept for accepts and the audit store: dials stay below 192.
  const std::size_t ceiling = logged_number(limits_line(proxy.process), "dial_fd_ceiling");
  ASSERT_EQ(ceiling, 192u) << proxy.process.log();

  // The hostile agent: 250 keep-alive GETs on one connection, each to another address.
  Agent hostile("127.0.0.1", proxy.port);
  ASSERT_TRUE(hostile.connected());
  std::map<int, int> statuses;
  for (int i = 0; i < kAddresses; ++i) {
    ++statuses[hostile.get(address(i), upstream.port())];
    ASSERT_LT(open_fds(proxy.process.pid()), ceiling) << "after request " << i << "\n" << proxy.process.log();
  }
  EXPECT_EQ(statuses[200], kAddresses) << "statuses: " << [&] {
    std::string s;
    for (const auto& [st, n] : statuses) s += std::to_string(st) + "×" + std::to_string(n) + " ";
    return s;
  }() << "\n" << proxy.process.log();
  EXPECT_EQ(upstream.accepted_total(), kAddresses);

  // The hostile agent keeps its connection; another agent (another address) is answered.
  Agent other("127.0.0.2", proxy.port);
  ASSERT_TRUE(other.connected());
  EXPECT_EQ(other.get(address(0), upstream.port()), 200) << proxy.process.log();
  EXPECT_LT(open_fds(proxy.process.pid()), ceiling);
  // The idle connections the bound closed are closed at the upstream too, not leaked.
  EXPECT_TRUE(eventually([&] { return upstream.closed_total() >= kAddresses - 64; }))
      << upstream.closed_total() << " closed\n" << proxy.process.log();
  EXPECT_EQ(proxy.process.log().find("accept_error"), std::string::npos) << proxy.process.log();
  EXPECT_TRUE(proxy.process.running());
}

TEST(IdlePoolBound, AnAgentOverItsBoundLosesItsOwnOldestIdleConnection) {
  ManyAddressUpstream upstream(40);
  LowFdProxy proxy(policy_json(upstream.port()));
  ASSERT_TRUE(wait_for_port(proxy.port)) << proxy.process.log();
  const auto log = limits_line(proxy.process);
  const auto per_agent = logged_number(log, "idle_upstream_per_agent");
  const auto threads = logged_number(log, "io_threads");
  ASSERT_GT(per_agent, 0u) << log;
  ASSERT_GT(threads, 0u) << log;
  // One agent connection is served by one io thread, whose pool keeps its share.
  const int bound = static_cast<int>(std::max<std::size_t>(1, per_agent / threads));
  constexpr int kOver = 5;
  ASSERT_LE(bound + kOver + 1, 40) << log;
  const std::string bystander_addr = address(39);

  // Another agent leaves one idle connection first.
  Agent bystander("127.0.0.3", proxy.port);
  ASSERT_EQ(bystander.get(bystander_addr, upstream.port()), 200) << proxy.process.log();

  Agent agent("127.0.0.2", proxy.port);
  for (int i = 0; i < bound + kOver; ++i)
    ASSERT_EQ(agent.get(address(i), upstream.port()), 200) << i << "\n" << proxy.process.log();
  // Exactly the agent's kOver oldest idle connections were closed, in order.
  ASSERT_TRUE(eventually([&] { return upstream.closed_total() >= kOver; })) << proxy.process.log();
  for (int i = 0; i < bound + kOver; ++i)
    EXPECT_EQ(upstream.closed(address(i)), i < kOver ? 1 : 0) << address(i);
  EXPECT_EQ(upstream.closed(bystander_addr), 0);

  // The newest is still pooled: reused, not dialled again.
  ASSERT_EQ(agent.get(address(bound + kOver - 1), upstream.port()), 200);
  EXPECT_EQ(upstream.accepted(address(bound + kOver - 1)), 1);
  // The oldest was closed: dialled again.
  ASSERT_EQ(agent.get(address(0), upstream.port()), 200);
  EXPECT_EQ(upstream.accepted(address(0)), 2);
  // The other agent's idle connection was not the one to go.
  ASSERT_EQ(bystander.get(bystander_addr, upstream.port()), 200);
  EXPECT_EQ(upstream.accepted(bystander_addr), 1);
  // The re-dial of address(0) put one more over the bound: the oldest then went.
  EXPECT_TRUE(eventually([&] { return upstream.closed(address(kOver)) == 1; })) << proxy.process.log();
  EXPECT_EQ(upstream.closed_total(), kOver + 1);
}

TEST(IdlePoolBound, DialsLeaveTheAcceptReserveAloneAndIdleConnectionsMakeRoom) {
  ManyAddressUpstream upstream(8);
  // Client caps above what the descriptors allow: only the ceiling stops the dials.
  LowFdProxy proxy(policy_json(upstream.port()),
                   {"--max-client-connections", "100000", "--max-client-connections-per-agent", "100000"});
  ASSERT_TRUE(wait_for_port(proxy.port)) << proxy.process.log();
  const auto ceiling = logged_number(limits_line(proxy.process), "dial_fd_ceiling");
  ASSERT_EQ(ceiling, 192u) << proxy.process.log();
  const auto pid = proxy.process.pid();

  Agent agent("127.0.0.2", proxy.port);
  ASSERT_TRUE(agent.connected());
  // Idle agent connections (another agent) until the proxy holds descriptors past its
  // ceiling, but not all of them.
  std::vector<int> flood;
  // (Counted again each round: the proxy may hold a descriptor for a moment, such as a
  // connection being refused or the audit store's.)
  const auto flood_until = [&](std::size_t fds) {
    for (int round = 0; round < 50; ++round) {
      const auto now = open_fds(pid);
      if (now >= fds) return true;
      for (std::size_t i = now; i < fds; ++i) {
        const int fd = connect_from("127.0.0.3", proxy.port);
        if (fd < 0) return false;
        flood.push_back(fd);
      }
      eventually([&] { return open_fds(pid) >= fds; }, std::chrono::milliseconds(500));
    }
    return false;
  };
  ASSERT_TRUE(flood_until(ceiling + 10)) << open_fds(pid) << " open\n" << proxy.process.log();

  // Nothing idle to close: the dial is refused, and says why.
  Agent late("127.0.0.4", proxy.port);  // accepted: the reserve is there for it
  ASSERT_TRUE(late.connected());
  EXPECT_EQ(agent.get(address(0), upstream.port()), 503) << proxy.process.log();
  EXPECT_EQ(late.get(address(0), upstream.port()), 503) << proxy.process.log();
  EXPECT_EQ(upstream.accepted_total(), 0);
  EXPECT_NE(late.last_response().find("no descriptor to spare"), std::string::npos) << late.last_response();

  // The first flood connections (the proxy's lowest descriptors) go: dials work again.
  for (int i = 0; i < 10; ++i) ::close(flood[static_cast<std::size_t>(i)]);
  flood.erase(flood.begin(), flood.begin() + 10);
  ASSERT_TRUE(eventually([&] { return agent.get(address(1), upstream.port()) == 200; })) << proxy.process.log();
  ASSERT_EQ(upstream.accepted(address(1)), 1);
  // The freed descriptors below the ceiling are taken by new idle agent connections,
  // all but the one the pooled upstream connection holds: the next dial closes that one.
  const auto before = open_fds(pid);
  ASSERT_TRUE(flood_until(before + 12)) << open_fds(pid) << " open\n" << proxy.process.log();
  EXPECT_EQ(agent.get(address(2), upstream.port()), 200) << proxy.process.log();
  EXPECT_TRUE(eventually([&] { return upstream.closed(address(1)) == 1; })) << proxy.process.log();

  EXPECT_LT(open_fds(pid), static_cast<std::size_t>(kFdLimit));
  EXPECT_EQ(proxy.process.log().find("accept_error"), std::string::npos) << proxy.process.log();
  for (int fd : flood) ::close(fd);
}

}  // namespace
}  // namespace netbox::test
