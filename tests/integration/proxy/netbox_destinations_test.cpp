// What counts as netbox (rule `netbox`, refused in every mode whatever the policy allows),
// beyond the proxy's own listeners (own_endpoints_test.cpp), attacked as an agent whose
// policy allows the range would: IPv6 spellings of netbox's addresses (issue 12 follow-up
// F9), the host's own interface addresses (F2) and another netbox proxy on the same host
// (F1). Loopback stays an ordinary internal address: ::1 is reachable when listed.
#include "proxy_fixture.hpp"

#include "support/background_process.hpp"
#include "support/process.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

namespace netbox::test {
namespace {

using namespace std::chrono_literals;

// A host service on one address (an IPv6 one, or 0.0.0.0: every address of the host),
// answering 200 to anything; ProxyTest's upstream listens on 127.0.0.1 only.
class HostService {
 public:
  explicit HostService(const std::string& bind_addr) {
    sockaddr_storage ss{};
    socklen_t len = 0;
    if (bind_addr.find(':') != std::string::npos) {
      auto* s6 = reinterpret_cast<sockaddr_in6*>(&ss);
      s6->sin6_family = AF_INET6;
      ::inet_pton(AF_INET6, bind_addr.c_str(), &s6->sin6_addr);
      len = sizeof *s6;
    } else {
      auto* s4 = reinterpret_cast<sockaddr_in*>(&ss);
      s4->sin_family = AF_INET;
      ::inet_pton(AF_INET, bind_addr.c_str(), &s4->sin_addr);
      len = sizeof *s4;
    }
    fd_ = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd_, 64) != 0)
      throw std::runtime_error("cannot listen on " + bind_addr + ": " + std::strerror(errno));
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len);
    port_ = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                          : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~HostService() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  unsigned short port() const { return port_; }
  int connections() const { return connections_.load(); }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      ++connections_;
      std::string got;
      char buf[4096];
      pollfd q{c, POLLIN, 0};
      while (got.find("\r\n\r\n") == std::string::npos && ::poll(&q, 1, 2000) > 0) {
        const auto n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        got.append(buf, static_cast<std::size_t>(n));
      }
      const std::string res = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\nhost here\n";
      [[maybe_unused]] auto w = ::write(c, res.data(), res.size());
      ::close(c);
    }
  }
  int fd_ = -1;
  unsigned short port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread thread_;
};

// `ip ARGS` as root; the test fails when the host refuses it.
void ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto r = run(argv);
  ASSERT_EQ(r.exit_code, 0) << "ip failed: " << r.err;
}

std::string ports_json(const std::vector<unsigned short>& ports) {
  std::string list;
  for (auto p : ports) list += (list.empty() ? "" : ", ") + std::to_string(p);
  return "[" + list + "]";
}

// --- F9: ::1 is loopback, not unspecified; IPv6 spellings of netbox's addresses -----

TEST_F(ProxyTest, IPv6LoopbackIsAnOrdinaryInternalAddressWhenListed) {
  HostService v6("::1");
  start_proxy(R"({"version": 1, "allow": ["::1/128"], "ports": )" + ports_json({v6.port()}) +
              R"(, "internal": {"allow": ["::1/128"]}})");
  auto r = proxy_get(port, "http://[::1]:" + std::to_string(v6.port()) + "/");
  EXPECT_EQ(r.status, 200) << r.header("x-netbox-reason");
  EXPECT_EQ(r.body, "host here\n");
  EXPECT_EQ(last_row().decision, "allow");
  EXPECT_EQ(proxy_connect(port, "[::1]:" + std::to_string(v6.port())).status, 200);
}

TEST_F(ProxyTest, IPv6LoopbackStaysInternalWhenNotListed) {
  HostService v6("::1");
  start_proxy(R"({"version": 1, "allow": ["::1/128"], "ports": )" + ports_json({v6.port()}) + "}");
  auto r = proxy_get(port, "http://[::1]:" + std::to_string(v6.port()) + "/");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(last_row().rule, "internal") << "::1 is internal, not netbox: " << last_row().reason;
  EXPECT_EQ(v6.connections(), 0);
}

// The pool here is 127.0.0.1/32, where the upstream listens, so a v4 spelling that got
// past the guard stays on this host. ::127.0.0.1 (IPv4-compatible) is an IPv6 address
// that would follow the IPv6 default route: a blackhole route keeps it here too.
TEST_F(ProxyTest, IPv4MappedAndCompatibleSpellingsOfAPoolAddressAreRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a blackhole route";
  ip({"-6", "route", "replace", "blackhole", "::7f00:0/104"});
  struct Unroute {
    ~Unroute() { run({"ip", "-6", "route", "del", "blackhole", "::7f00:0/104"}); }
  } unroute;
  configure = [](proxy::ProxyOptions& o) { o.launch_subnets = {*policy::Cidr::parse("127.0.0.1/32")}; };
  start_proxy(R"({"version": 1, "mode": "report", "allow": ["127.0.0.1", "::ffff:127.0.0.0/104", "::7f00:0/104"],
                  "ports": )" + ports_json({upstream.port()}) +
              R"(, "internal": {"allow": ["127.0.0.1/32", "::ffff:127.0.0.0/104", "::7f00:0/104"]}})");
  for (const std::string host : {"[::ffff:127.0.0.1]", "[::127.0.0.1]", "[::7f00:1]"}) {
    SCOPED_TRACE(host);
    auto r = proxy_get(port, "http://" + host + ":" + std::to_string(upstream.port()) + "/");
    EXPECT_EQ(r.status, 403) << r.body;
    EXPECT_EQ(last_row().rule, "netbox");
    EXPECT_NE(last_row().reason.find("launch subnet 127.0.0.1/32"), std::string::npos) << last_row().reason;
    EXPECT_EQ(proxy_connect(port, host + ":" + std::to_string(upstream.port())).status, 403);
    EXPECT_EQ(last_row().rule, "netbox");
  }
  EXPECT_EQ(upstream.connections(), 0u);
}

// --- F2: the host's own interface addresses ---------------------------------------
// A host service on 0.0.0.0 answers on every address of the host; a policy that allows a
// range holding one of them (10.0.0.0/8 in a VPC) must not reach it. The test gives an
// interface of its own (a veth pair, as launches make; kernels without the dummy module
// have those too) an address from TEST-NET-1: a local address, so nothing leaves.

class TestLink {
 public:
  TestLink() : name_("nbxt" + std::to_string(::getpid() % 100000)) {
    run({"ip", "link", "del", name_});
    ip({"link", "add", name_, "type", "veth", "peer", "name", name_ + "p"});
    ip({"link", "set", name_, "up"});
  }
  ~TestLink() { run({"ip", "link", "del", name_}); }  // takes the peer with it
  void add(const std::string& cidr) { ip({"addr", "add", cidr, "dev", name_}); }

 private:
  std::string name_;
};

TEST_F(ProxyTest, AnAddressOfTheHostsInterfacesIsRefusedEvenWhenAllowed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to add an interface";
  TestLink link;
  ASSERT_NO_FATAL_FAILURE(link.add("192.0.2.77/32"));
  HostService service("0.0.0.0");
  const auto svc = std::to_string(service.port());
  start_proxy(R"({"version": 1, "allow": ["192.0.2.0/24"], "ports": )" + ports_json({service.port()}) +
              R"(, "internal": {"allow": ["192.0.2.0/24"]}})");

  auto r = proxy_get(port, "http://192.0.2.77:" + svc + "/");
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(r.body.find("host here"), std::string::npos) << "the host service answered through the proxy";
  EXPECT_EQ(last_row().rule, "netbox");
  EXPECT_NE(last_row().reason.find("address of this host's interfaces"), std::string::npos) << last_row().reason;
  EXPECT_EQ(proxy_connect(port, "192.0.2.77:" + svc).status, 403);
  EXPECT_EQ(last_row().rule, "netbox");
  EXPECT_EQ(service.connections(), 0);

  // An address added while the proxy runs is refused once the proxy has read the kernel's
  // notification (or looked again, every second); the loop allows for that moment.
  ASSERT_NO_FATAL_FAILURE(link.add("192.0.2.78/32"));
  Reply later;
  for (auto end = std::chrono::steady_clock::now() + 15s; std::chrono::steady_clock::now() < end;) {
    later = proxy_get(port, "http://192.0.2.78:" + svc + "/");
    if (later.status == 403) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(later.status, 403) << "an address added after the start was never refused";
  EXPECT_EQ(last_row().rule, "netbox");
}

// --- F1: another netbox proxy on this host --------------------------------------------
// Each proxy refuses its own listeners; another one's on loopback was an ordinary internal
// address, and a request relayed through it became `anonymous` there (and read its admin
// API). Every netbox lists its endpoints in /run/netbox/endpoints; each refuses them all.

const std::filesystem::path kRegistry = "/run/netbox/endpoints";

// The registry file of process `pid`, once it lists `port` (bounded wait); empty if never.
std::filesystem::path registry_file_listing(pid_t pid, unsigned short port) {
  const auto prefix = std::to_string(pid) + ".";
  for (auto end = std::chrono::steady_clock::now() + 20s; std::chrono::steady_clock::now() < end;) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(kRegistry, ec)) {
      if (!e.path().filename().string().starts_with(prefix) || e.path().extension() == ".tmp") continue;
      std::ifstream in(e.path());
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (text.find(" " + std::to_string(port) + "\n") != std::string::npos) return e.path();
    }
    std::this_thread::sleep_for(50ms);
  }
  return {};
}

std::string loopback_policy(const std::vector<unsigned short>& ports) {
  return R"({"version": 1, "allow": ["127.0.0.1"], "ports": )" + ports_json(ports) +
         R"(, "internal": {"allow": ["127.0.0.0/8"]}})";
}

TEST_F(ProxyTest, AnotherNetboxProxyOnThisHostIsNeverADestination) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root writes /run/netbox/endpoints";
  const auto other_port = free_port();
  const auto other_admin = free_port();
  const auto other_policy = dir.write("other.json", loopback_policy({upstream.port()}));
  BackgroundProcess other(proxy_command(other_policy, other_port, dir.path() / "other.db",
                                        {"--admin", "127.0.0.1:" + std::to_string(other_admin), "--admin-insecure"}),
                          dir.path() / "other.log");
  ASSERT_TRUE(wait_for_port(other_port)) << other.log();
  ASSERT_TRUE(wait_for_port(other_admin)) << other.log();
  const auto file = registry_file_listing(other.pid(), other_admin);
  ASSERT_FALSE(file.empty()) << "the other proxy never listed its admin endpoint: " << other.log();
  const auto st = std::filesystem::status(file);
  EXPECT_EQ(st.permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                std::filesystem::perms::group_read | std::filesystem::perms::others_read);

  start_proxy(loopback_policy({other_port, other_admin, upstream.port()}));
  // The policy reaches an ordinary loopback service (not every listener on loopback is netbox)...
  EXPECT_EQ(proxy_get(port, "http://127.0.0.1:" + std::to_string(upstream.port()) + "/").status, 200);
  // ...but not the other proxy's listener nor its admin endpoint, by GET or CONNECT.
  for (const auto p : {other_port, other_admin}) {
    const auto where = "127.0.0.1:" + std::to_string(p);
    SCOPED_TRACE(where);
    auto r = proxy_get(port, "http://" + where + "/api/requests");
    EXPECT_EQ(r.status, 403) << r.body;
    EXPECT_EQ(r.body.find("\"requests\""), std::string::npos) << "the other proxy's audit API answered";
    EXPECT_EQ(last_row().rule, "netbox");
    EXPECT_NE(last_row().reason.find("another netbox proxy"), std::string::npos) << last_row().reason;
    EXPECT_EQ(proxy_connect(port, where).status, 403);
    EXPECT_EQ(last_row().rule, "netbox");
  }

  // Once it stops its file is gone, and its old port is an ordinary (closed) destination.
  EXPECT_EQ(other.stop(SIGTERM), 0) << other.log();
  EXPECT_FALSE(std::filesystem::exists(file));
  AuditRow row;
  for (auto end = std::chrono::steady_clock::now() + 15s; std::chrono::steady_clock::now() < end;) {
    proxy_get(port, "http://127.0.0.1:" + std::to_string(other_admin) + "/");
    row = last_row();
    if (row.rule != "netbox") break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_NE(row.rule, "netbox") << "a stopped proxy's endpoint is still refused: " << row.reason;
}

// A netbox killed with SIGKILL leaves its file behind, and its pid may come back as some
// other process: neither may make a proxy refuse an ordinary upstream. Such files are
// ignored and removed (the file records the process start time besides the pid).
TEST_F(ProxyTest, RegistryFilesOfGoneProcessesAreIgnoredAndRemoved) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root writes /run/netbox/endpoints";
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ASSERT_GT(gone, 0);
  ::waitpid(gone, nullptr, 0);
  std::filesystem::create_directories(kRegistry);
  const auto listing = "127.0.0.1 " + std::to_string(upstream.port()) + "\n";
  const auto dead = kRegistry / (std::to_string(gone) + ".0");
  std::ofstream(dead) << "pid " << gone << " 12345\n" << listing;
  // This very process, but started at another time: a reused pid.
  const auto reused = kRegistry / (std::to_string(::getpid()) + ".999999");
  std::ofstream(reused) << "pid " << ::getpid() << " 1\n" << listing;
  struct Cleanup {
    std::vector<std::filesystem::path> files;
    ~Cleanup() {
      for (const auto& f : files) std::filesystem::remove(f);
    }
  } cleanup{{dead, reused}};

  start_proxy(loopback_policy({upstream.port()}));
  auto r = proxy_get(port, "http://127.0.0.1:" + std::to_string(upstream.port()) + "/");
  EXPECT_EQ(r.status, 200) << r.header("x-netbox-reason");
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_FALSE(std::filesystem::exists(reused));
}

TEST_F(ProxyTest, ThisProxysOwnEndpointsAreInTheRegistryWhileItRuns) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root writes /run/netbox/endpoints";
  start_proxy(loopback_policy({upstream.port()}));
  const auto file = registry_file_listing(::getpid(), port);
  ASSERT_FALSE(file.empty());
  stop_proxy();
  EXPECT_FALSE(std::filesystem::exists(file));
}

}  // namespace
}  // namespace netbox::test
