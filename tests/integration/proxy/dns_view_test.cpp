// The DNS view an attached agent gets (issue 15 item 1): real UDP and TCP sockets on a
// loopback "host side", the agent's queries sent from its own loopback address, the
// proxy's own resolver a real dnsmasq that logs every query it is asked.
#include "proxy_fixture.hpp"
#include "support/dnsmasq.hpp"
#include "support/sqlite_query.hpp"

#include "netbox/audit/writer.hpp"

#include "netbox/tls/certificate_authority.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace netbox::test {
namespace {

namespace ip = boost::asio::ip;

// Loopback addresses of this test process alone: ctest runs these tests in parallel, and
// each view listens on port 53 of its host address. which: 0 the host side of the agent's
// "link", 1 the agent, 2 a stranger.
const char* loopback_of_this_process(int which) {
  static const std::array<std::string, 3> addresses = [] {
    unsigned n = static_cast<unsigned>(::getpid());
    const unsigned last = n % 254 + 1;
    n /= 254;
    const unsigned third = n % 256;
    n /= 256;
    const unsigned second = 40 + (n % 60) * 3;
    std::array<std::string, 3> out;
    for (unsigned i = 0; i < 3; ++i)
      out[i] = "127." + std::to_string(second + i) + "." + std::to_string(third) + "." + std::to_string(last);
    return out;
  }();
  return addresses[static_cast<std::size_t>(which)].c_str();
}
const char* const kHost = loopback_of_this_process(0);
const char* const kAgent = loopback_of_this_process(1);
const char* const kStranger = loopback_of_this_process(2);

std::vector<std::uint8_t> query(const std::string& name, std::uint16_t type, std::uint16_t id = 0x1234) {
  std::vector<std::uint8_t> q{static_cast<std::uint8_t>(id >> 8), static_cast<std::uint8_t>(id), 0x01, 0x00, 0, 1, 0, 0,
                              0, 0, 0, 0};
  std::size_t start = 0;
  while (start <= name.size()) {
    const auto dot = std::min(name.find('.', start), name.size());
    q.push_back(static_cast<std::uint8_t>(dot - start));
    q.insert(q.end(), name.begin() + static_cast<std::ptrdiff_t>(start), name.begin() + static_cast<std::ptrdiff_t>(dot));
    start = dot + 1;
  }
  q.push_back(0);
  q.insert(q.end(), {static_cast<std::uint8_t>(type >> 8), static_cast<std::uint8_t>(type), 0, 1});
  return q;
}

struct Reply {
  int rcode = -1;  // -1: no answer
  int answers = 0;
  std::string address;  // the first A record's
};

Reply parse(const std::vector<std::uint8_t>& m) {
  Reply r;
  if (m.size() < 12) return r;
  r.rcode = m[3] & 0xf;
  r.answers = (m[6] << 8) | m[7];
  // An A answer's four bytes end the message (one question, one record, no OPT).
  if (r.answers > 0 && m.size() >= 16) {
    char text[INET_ADDRSTRLEN];
    ::inet_ntop(AF_INET, m.data() + m.size() - 4, text, sizeof text);
    r.address = text;
  }
  return r;
}

sockaddr_in sin(const char* addr, unsigned short port) {
  sockaddr_in s{};
  s.sin_family = AF_INET;
  s.sin_port = htons(port);
  ::inet_pton(AF_INET, addr, &s.sin_addr);
  return s;
}

// One UDP query from the agent's address; the reply, or none within two seconds.
Reply ask_udp(const std::vector<std::uint8_t>& q, const char* from = kAgent) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  auto me = sin(from, 0);
  auto to = sin(kHost, 53);
  ::bind(fd, reinterpret_cast<sockaddr*>(&me), sizeof me);
  ::sendto(fd, q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
  pollfd p{fd, POLLIN, 0};
  std::vector<std::uint8_t> buf(1500);
  Reply r;
  if (::poll(&p, 1, 2000) == 1) {
    const auto n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n > 0) buf.resize(static_cast<std::size_t>(n)), r = parse(buf);
  }
  ::close(fd);
  return r;
}

Reply ask_tcp(const std::vector<std::uint8_t>& q) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  auto me = sin(kAgent, 0);
  auto to = sin(kHost, 53);
  ::bind(fd, reinterpret_cast<sockaddr*>(&me), sizeof me);
  Reply r;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0) {
    std::vector<std::uint8_t> out{static_cast<std::uint8_t>(q.size() >> 8), static_cast<std::uint8_t>(q.size())};
    out.insert(out.end(), q.begin(), q.end());
    ::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
    std::uint8_t len[2];
    if (::recv(fd, len, 2, MSG_WAITALL) == 2) {
      std::vector<std::uint8_t> m((len[0] << 8) | len[1]);
      if (::recv(fd, m.data(), m.size(), MSG_WAITALL) == static_cast<ssize_t>(m.size())) r = parse(m);
    }
  }
  ::close(fd);
  return r;
}

// Up to 20 s: a wait, not a timing claim (the sanitizer build under a loaded CI machine
// once needed more than 5 s for a held store's rows to land).
bool eventually_true(const std::function<bool()>& pred) {
  for (int i = 0; i < 800; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return false;
}

class DnsViewTest : public ProxyTest {
 protected:
  void SetUp() override {
    // If the view ever forwarded, dnsmasq would know exfil.test and log the query.
    dns = std::make_unique<Dnsmasq>(
        std::vector<std::string>{"--log-queries", "--host-record=dns-ok.test,127.0.0.1", "--address=/exfil.test/127.0.0.1"});
  }
  void start(const std::string& extra) {
    start_proxy(base_policy(extra), {dns->server()});
    attached = server->attach_agent(agent("dns-agent", "198.18.0.0/15"));
  }
  // The agent at kAgent, its listener on kHost, its DNS view serving `pool`.
  static proxy::AgentAttachment agent(const std::string& name, const char* pool) {
    proxy::AgentAttachment a;
    a.addr = ip::make_address(kAgent);
    a.name = name;
    a.listen = ip::tcp::endpoint(ip::make_address(kHost), 0);
    a.dns_pool = policy::Cidr::parse(pool);
    return a;
  }
  // The same with an IPv6 address too (::1, the host side ::1) and an IPv6 pool.
  proxy::AgentAttachment dual_stack_agent(const std::string& name) {
    ipv6_loopback_turn = std::make_unique<Ipv6LoopbackTurn>();
    auto a = agent(name, "198.18.0.0/22");
    a.ipv6 = proxy::AgentAttachment::Ipv6Link{ip::make_address("::1"), ip::make_address("::1"),
                                              *policy::Cidr::parse("2001:2:0:7::/64")};
    return a;
  }
  // `n` kept-alive connections from the agent's IPv4 address to its listener, each with one
  // request answered 200, so the proxy holds every one of them when this returns (a bare
  // connect would race whatever the test does next). Their descriptors go to `held`.
  void hold_answered_connections(int n, std::vector<int>& held) {
    for (int i = 0; i < n; ++i) {
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      auto me = sin(kAgent, 0);
      auto to = sin(kHost, attached->listener->port());
      ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&me), sizeof me), 0);
      ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
      held.push_back(fd);
      const std::string req = "GET " + upstream_url("/") + " HTTP/1.1\r\nHost: upstream.test\r\n\r\n";
      ASSERT_EQ(::write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
      std::string answer;
      char buf[256];
      for (ssize_t r; answer.find("\r\n") == std::string::npos && (r = ::read(fd, buf, sizeof buf)) > 0;)
        answer.append(buf, static_cast<std::size_t>(r));
      ASSERT_EQ(answer.substr(0, answer.find("\r\n")), "HTTP/1.1 200 OK") << "connection " << i;
    }
  }
  std::vector<AuditRow> dns_rows() {
    std::vector<AuditRow> out;
    for (auto& r : rows())
      if (r.kind == "dns") out.push_back(r);
    return out;
  }
  // ::1 is the only IPv6 loopback address, and an IPv6 link's capture listener takes a
  // fixed port on it: the tests that attach it take turns across ctest's processes.
  struct Ipv6LoopbackTurn {
    int fd = ::open("/tmp/netbox-tests-ipv6-loopback.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    Ipv6LoopbackTurn() { ::flock(fd, LOCK_EX); }
    ~Ipv6LoopbackTurn() { ::close(fd); }
  };
  std::unique_ptr<Ipv6LoopbackTurn> ipv6_loopback_turn;  // before the proxy: released after it stops
  std::unique_ptr<Dnsmasq> dns;
  std::optional<proxy::AttachedAgent> attached;
};

const char* kPolicy = R"("allow": ["upstream.test", "dns-ok.test"], "deny": ["*.evil.test"])";

TEST_F(DnsViewTest, AllowedNameGetsOneStableSyntheticAddress) {
  start(kPolicy);
  auto a = ask_udp(query("upstream.test", 1));
  EXPECT_EQ(a.rcode, 0);
  ASSERT_EQ(a.answers, 1);
  EXPECT_TRUE(policy::Cidr::parse("198.18.0.0/15")->contains(ip::make_address(a.address))) << a.address;
  EXPECT_EQ(ask_udp(query("UPSTREAM.test", 1)).address, a.address);  // names are case-insensitive
  auto b = ask_tcp(query("dns-ok.test", 1));
  EXPECT_EQ(b.rcode, 0);
  EXPECT_NE(b.address, a.address);
  EXPECT_TRUE(dns_rows().empty());  // allowed queries are counted, not written
}

TEST_F(DnsViewTest, DeniedNameIsNxdomainWithOneRowPerMinute) {
  start(kPolicy);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(ask_udp(query("a.evil.test", 1)).rcode, 3);
  EXPECT_EQ(ask_tcp(query("not-listed.test", 28)).rcode, 3);
  server->detach_agent(*attached, {});
  auto rows = dns_rows();
  ASSERT_EQ(rows.size(), 3u);  // the repeats of a.evil.test are counted in a row of that name
  EXPECT_EQ(rows[2].host, "a.evil.test");
  EXPECT_THAT(rows[2].reason, ::testing::HasSubstr("2 more refused DNS queries of this name"));
  EXPECT_EQ(rows[0].host, "a.evil.test");
  EXPECT_EQ(rows[0].agent, "dns-agent");
  EXPECT_EQ(rows[0].decision, "deny");
  EXPECT_EQ(rows[0].rule, "deny[0] *.evil.test");
  EXPECT_EQ(rows[0].method, "A");
  EXPECT_EQ(rows[1].host, "not-listed.test");
  EXPECT_EQ(rows[1].reason, "not-listed.test is not in allow; add it to allow to permit it");
}

TEST_F(DnsViewTest, OtherTypesAndMalformedQueriesAreAnsweredWithoutData) {
  start(kPolicy);
  auto aaaa = ask_udp(query("upstream.test", 28));
  EXPECT_EQ(aaaa.rcode, 0);
  EXPECT_EQ(aaaa.answers, 0);
  auto txt = ask_udp(query("upstream.test", 16));
  EXPECT_EQ(txt.rcode, 0);
  EXPECT_EQ(txt.answers, 0);
  auto bad = query("upstream.test", 1);
  bad[12] = 70;  // a label longer than 63 bytes
  EXPECT_EQ(ask_udp(bad).rcode, 1);  // FORMERR
  auto response = query("upstream.test", 1);
  response[2] |= 0x80;  // a response: never answered (no reflection)
  EXPECT_EQ(ask_udp(response).rcode, -1);
}

TEST_F(DnsViewTest, OnlyTheAgentItselfIsAnswered) {
  start(kPolicy);
  EXPECT_EQ(ask_udp(query("upstream.test", 1), kStranger).rcode, -1);
}

TEST_F(DnsViewTest, TunnellingThroughQueryNamesLeavesNothingAndBoundedRows) {
  start(kPolicy);
  // The resolver the proxy uses is live and logs what it is asked...
  auto r = proxy_get(port, "http://dns-ok.test:" + std::to_string(upstream.port()) + "/");
  EXPECT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(eventually_true([&] { return dns->log().find("dns-ok.test") != std::string::npos; }));
  // ...and 1,000 queries carrying data in random labels of a name it would answer reach it never.
  std::mt19937 rng(15);
  int nxdomain = 0;
  for (int i = 0; i < 1000; ++i) {
    std::string label;
    for (int j = 0; j < 40; ++j) label += "0123456789abcdef"[rng() % 16];
    nxdomain += ask_udp(query(label + ".exfil.test", 1, static_cast<std::uint16_t>(i))).rcode == 3;
  }
  EXPECT_EQ(nxdomain, 1000);
  server->detach_agent(*attached, {});
  EXPECT_EQ(dns->log().find("exfil"), std::string::npos) << dns->log();
  auto rows = dns_rows();
  EXPECT_LE(rows.size(), 33u);  // 32 names a minute, and one row counting the rest
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows.back().host, "*");
  EXPECT_THAT(rows.back().reason, ::testing::HasSubstr("968 more refused DNS queries"));
}
// Issue 22 item 9: the summary row stood for the refusals it counted in words only
// (`count` 1), and repeats of a name were counted nowhere: 150 refused names gave 33 rows
// whose SUM(count) was 33. SUM(count) is every refused query, repeats included.
TEST_F(DnsViewTest, EveryRefusedQueryIsCountedInTheRows) {
  start(kPolicy);
  for (int i = 0; i < 150; ++i)
    EXPECT_EQ(ask_udp(query("n" + std::to_string(i) + ".evil.test", 1, static_cast<std::uint16_t>(i))).rcode, 3);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(ask_tcp(query("n0.evil.test", 1)).rcode, 3);  // repeats of a written name
  server->detach_agent(*attached, {});
  server->audit().flush();
  EXPECT_EQ(query_column(db_path, "SELECT SUM(count) FROM requests WHERE kind = 'dns'"),
            std::vector<std::string>{"160"});
  EXPECT_LE(std::stoi(query_column(db_path, "SELECT COUNT(*) FROM requests WHERE kind = 'dns'").at(0)), 34);
  EXPECT_EQ(query_column(db_path, "SELECT count FROM requests WHERE kind = 'dns' AND host = '*'"),
            std::vector<std::string>{"118"});
  // Per name too: the repeats of n0 are n0's, so what the agent asked for is exact by host.
  EXPECT_EQ(query_column(db_path, "SELECT SUM(count) FROM requests WHERE kind = 'dns' AND host = 'n0.evil.test'"),
            std::vector<std::string>{"11"});
}

// Issue 22: the DNS view wrote its rows without waiting when the audit writer's queue was
// full (relying on the overflow refusal), so a row past the overflow was lost. Now it reads
// no further query until the writer has room, as every door does.
TEST_F(DnsViewTest, AFullAuditQueueHoldsQueriesBackAndLosesNoRow) {
  configure = [](proxy::ProxyOptions& o) {
    o.audit_queue = 4;
    o.audit_overflow = 1;  // a view ignoring back pressure overruns it at once
    o.audit_fold_refusals = false;
  };
  start(kPolicy);
  server->audit().flush();
  // Another process holds the store's write lock: the writer's commit waits and the queue stays full.
  StoreWriteLock lock(db_path);
  ASSERT_TRUE(lock.held());
  constexpr int kNames = 20;
  std::atomic<int> nxdomain{0};
  std::thread agent([&] {
    for (int i = 0; i < kNames; ++i)
      nxdomain += ask_udp(query("b" + std::to_string(i) + ".evil.test", 1, static_cast<std::uint16_t>(i))).rcode == 3;
  });
  const bool waited = eventually_true([&] {
    const auto st = server->audit().stats();
    return st.room_waits > 0 || st.rejected > 0;
  });
  lock.release();
  agent.join();
  EXPECT_TRUE(waited) << "the queue never filled: the test did not test back pressure";
  EXPECT_EQ(nxdomain.load(), kNames);
  server->detach_agent(*attached, {});
  server->audit().flush();
  EXPECT_EQ(server->audit().stats().rejected, 0u) << "a row went past the queue";
  EXPECT_EQ(query_column(db_path, "SELECT SUM(count) FROM requests WHERE kind = 'dns'"),
            std::vector<std::string>{std::to_string(kNames)});
}

// The capture door too: each captured connection makes a row (here a refusal: loopback has
// no original destination), and with the writer's queue full the next one is not read
// until there is room; before, its row went past the queue and was lost past the overflow.
TEST_F(DnsViewTest, AFullAuditQueueHoldsCapturedConnectionsBackAndLosesNoRow) {
  configure = [](proxy::ProxyOptions& o) {
    o.audit_queue = 4;
    o.audit_overflow = 1;
    o.audit_fold_refusals = false;  // every refusal needs a queue slot
  };
  start(kPolicy);
  ASSERT_TRUE(attached->transparent);
  server->audit().flush();
  StoreWriteLock lock(db_path);
  ASSERT_TRUE(lock.held());
  constexpr int kConnections = 20;
  std::vector<int> held;
  for (int i = 0; i < kConnections; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    auto me = sin(kAgent, 0);
    auto to = sin(kHost, attached->transparent->port());
    ::bind(fd, reinterpret_cast<sockaddr*>(&me), sizeof me);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to), 0) << i;
    held.push_back(fd);
  }
  const bool waited = eventually_true([&] {
    const auto st = server->audit().stats();
    return st.room_waits > 0 || st.rejected > 0;
  });
  lock.release();
  EXPECT_TRUE(waited) << "the queue never filled: the test did not test back pressure";
  EXPECT_TRUE(eventually_true([&] {
    server->audit().flush();
    return query_column(db_path, "SELECT COALESCE(SUM(count), 0) FROM requests WHERE kind = 'transparent'") ==
           std::vector<std::string>{std::to_string(kConnections)};
  })) << "rows lost";
  EXPECT_EQ(server->audit().stats().rejected, 0u) << "a row went past the queue";
  for (int fd : held) ::close(fd);
}

// A network entry alone (the issue's 10.0.0.0/8; loopback here, where the upstream is) let
// the proxy look up any name the agent asked for: the name, data in its labels, reached
// the resolver and whoever runs its domain. By default such a name is refused by the DNS
// view and by the proxy before any lookup (issue 22, item 8).
class UnlistedNameTest : public DnsViewTest {
 protected:
  void SetUp() override {
    dns = std::make_unique<Dnsmasq>(std::vector<std::string>{"--log-queries", "--address=/example.test/127.0.0.1"});
  }
  std::string url() const { return "http://secret-data.example.test:" + std::to_string(upstream.port()) + "/"; }
};

TEST_F(UnlistedNameTest, WithOnlyANetworkAllowANameNoEntryListsNeverReachesTheResolver) {
  start(R"("allow": ["127.0.0.0/8"])");
  EXPECT_EQ(ask_udp(query("secret-data.example.test", 1)).rcode, 3);
  auto r = proxy_get(port, url());
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_THAT(r.body, ::testing::HasSubstr("resolve_unlisted_names"));
  // A pinned name needs no lookup: the network entry decides its address.
  EXPECT_EQ(proxy_get(port, upstream_url("/")).status, 200);
  server->detach_agent(*attached, {});
  EXPECT_EQ(dns->log().find("secret-data"), std::string::npos) << dns->log();
  bool dns_row = false, proxy_row = false;
  for (const auto& row : rows()) {
    if (row.host != "secret-data.example.test") continue;
    EXPECT_EQ(row.decision, "deny");
    EXPECT_EQ(row.rule, "resolve_unlisted_names");
    (row.kind == "dns" ? dns_row : proxy_row) = true;
  }
  EXPECT_TRUE(dns_row);
  EXPECT_TRUE(proxy_row);
}

TEST_F(UnlistedNameTest, ThePolicysOptInResolvesIt) {
  start(R"("allow": ["127.0.0.0/8"], "resolve_unlisted_names": true)");
  EXPECT_EQ(ask_udp(query("secret-data.example.test", 1)).rcode, 0);
  auto r = proxy_get(port, url());
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(eventually_true([&] { return dns->log().find("secret-data.example.test") != std::string::npos; }))
      << dns->log();
}

// With an IPv6 link (AgentAttachment::ipv6), AAAA comes from the agent's IPv6 pool, denied
// names stay NXDOMAIN, and IPv6 pools are checked like IPv4 ones: inside the IPv6
// synthetic range, never overlapping another agent's.
TEST_F(DnsViewTest, WithAnIpv6PoolAaaaIsAnsweredFromItAndBadIpv6PoolsAreRefused) {
  start_proxy(base_policy(kPolicy), {dns->server()});
  attached = server->attach_agent(dual_stack_agent("dns-agent"));
  ASSERT_TRUE(attached->transparent6);
  EXPECT_TRUE(attached->transparent6->address().is_v6());

  std::vector<std::uint8_t> aaaa;
  {
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    auto me = sin(kAgent, 0);
    auto to = sin(kHost, 53);
    ::bind(fd, reinterpret_cast<sockaddr*>(&me), sizeof me);
    const auto q = query("upstream.test", 28);
    ::sendto(fd, q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
    pollfd p{fd, POLLIN, 0};
    aaaa.resize(1500);
    const auto n = ::poll(&p, 1, 2000) == 1 ? ::recv(fd, aaaa.data(), aaaa.size(), 0) : -1;
    aaaa.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    ::close(fd);
  }
  ASSERT_GE(aaaa.size(), 28u);
  EXPECT_EQ(aaaa[3] & 0xf, 0);
  EXPECT_EQ((aaaa[6] << 8) | aaaa[7], 1);
  char text[INET6_ADDRSTRLEN];
  ::inet_ntop(AF_INET6, aaaa.data() + aaaa.size() - 16, text, sizeof text);
  EXPECT_TRUE(policy::Cidr::parse("2001:2:0:7::/64")->contains(ip::make_address(text))) << text;
  EXPECT_TRUE(policy::Cidr::parse("198.18.0.0/22")->contains(ip::make_address(ask_udp(query("upstream.test", 1)).address)));
  EXPECT_EQ(ask_udp(query("a.evil.test", 28)).rcode, 3);

  proxy::AgentAttachment b;
  b.addr = ip::make_address(kStranger);
  b.name = "other-agent";
  b.listen = ip::tcp::endpoint(ip::make_address(kStranger), 0);
  b.dns_pool = policy::Cidr::parse("198.18.4.0/22");
  b.ipv6 = proxy::AgentAttachment::Ipv6Link{ip::make_address("fd00:6e62:7800::ad5:ff02"),
                                            ip::make_address("fd00:6e62:7800::ad5:ff01"),
                                            *policy::Cidr::parse("2001:2::/48")};
  // Each attachment below is refused, the reason saying why.
  const auto refused = [&](const proxy::AgentAttachment& other, const std::string& why, const std::string& what) {
    try {
      server->attach_agent(other);
      ADD_FAILURE() << what << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr(why)) << what;
    }
  };
  refused(b, "overlaps 2001:2:0:7::/64", "an overlapping IPv6 pool");
  b.ipv6->pool = *policy::Cidr::parse("2001:2:0:8::/128");
  refused(b, "is too small", "an IPv6 pool of no addresses");
  // The first agent's IPv6 address, claimed by another as its IPv6 link or as its address,
  // in any spelling: refused, never a takeover of its connections.
  b.ipv6->pool = *policy::Cidr::parse("2001:2:0:8::/64");
  for (const char* taken : {"::1", "0:0:0:0:0:0:0:1"}) {
    b.ipv6->agent = ip::make_address(taken);
    refused(b, "is already registered, as agent dns-agent", std::string("another agent's IPv6 address as ") + taken);
  }
  for (const char* bad : {"::ffff:10.213.0.6", "fd00:6e62:7800::ad5:ff02%7", "::10.213.0.6"}) {
    b.ipv6->agent = ip::make_address(bad);
    refused(b, "is not a plain IPv6 address", std::string("the IPv6 link address ") + bad);
  }
  proxy::AgentAttachment c = agent("third-agent", "198.18.8.0/22");
  c.addr = ip::make_address("::1");
  refused(c, "\"addr\" ::1 is already registered, as agent dns-agent", "another agent's IPv6 address as an address");
  b.ipv6->agent = ip::make_address("fd00:6e62:7800::ad5:ff02");
  b.ipv6->pool = *policy::Cidr::parse("2001:db8::/64");
  refused(b, "outside this proxy's synthetic range 2001:2::/48", "an IPv6 pool outside the synthetic range");
  server->detach_agent(*attached, {});
}


// An agent making up names under an allowed wildcard cannot grow the proxy's memory without
// bound through its IPv6 pool (a /64 has 2^64 addresses, and each mapping keeps its name):
// the pool hands out the 16,384 addresses docs/proxy.md promises, then answers SERVFAIL
// while they all live, and the names it mapped keep their addresses.
TEST_F(DnsViewTest, AnIpv6PoolMapsABoundedNumberOfNames) {
  start_proxy(base_policy(R"("allow": ["*.upstream.test"])"), {dns->server()});
  attached = server->attach_agent(dual_stack_agent("dns-agent"));
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  auto me = sin(kAgent, 0);
  auto to = sin(kHost, 53);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&me), sizeof me), 0);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
  // The rcode and the AAAA record's address of one query, asked on the one socket.
  const auto ask = [&](const std::string& name) {
    const auto q = query(name, 28);
    EXPECT_EQ(::send(fd, q.data(), q.size(), 0), static_cast<ssize_t>(q.size()));
    pollfd p{fd, POLLIN, 0};
    std::vector<std::uint8_t> m(1500);
    const auto n = ::poll(&p, 1, 2000) == 1 ? ::recv(fd, m.data(), m.size(), 0) : -1;
    m.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    std::pair<int, std::string> out{m.size() >= 12 ? m[3] & 0xf : -1, ""};
    if (m.size() >= 28 && ((m[6] << 8) | m[7]) == 1) {
      char text[INET6_ADDRSTRLEN];
      ::inet_ntop(AF_INET6, m.data() + m.size() - 16, text, sizeof text);
      out.second = text;
    }
    return out;
  };
  const auto first = ask("n0.upstream.test");
  ASSERT_EQ(first.first, 0);
  ASSERT_NE(first.second, "");
  constexpr std::size_t kMostAddresses = 16384;
  std::size_t answered = 1;
  for (std::size_t i = 1; i < kMostAddresses; ++i) answered += ask("n" + std::to_string(i) + ".upstream.test").first == 0;
  EXPECT_EQ(answered, kMostAddresses);
  EXPECT_EQ(ask("one-more.upstream.test").first, 2) << "SERVFAIL once every address is mapped and alive";
  EXPECT_EQ(ask("n0.upstream.test"), first) << "a mapped name keeps its address";
  ::close(fd);
  server->detach_agent(*attached, {});
}

// A credential's placeholder asked for by name (spread over labels, as a DNS name must
// carry it) is the tripwire's too: NXDOMAIN and an exfiltration_attempt event.
TEST_F(DnsViewTest, APlaceholderAskedForByNameIsNxdomainAndAnExfiltrationAttempt) {
  tls::CertificateAuthority::create(dir.path() / "ca");
  configure = [this](proxy::ProxyOptions& o) { o.ca_dir = dir.path() / "ca"; };
  start_proxy(base_policy(R"("allow": ["upstream.test", "*.exfil.test"], "inspect": ["upstream.test"],
    "credentials": [{"name": "openai", "hosts": ["upstream.test"], "header": "Authorization",
                     "format": "Bearer {secret}", "secret_env": "OPENAI_API_KEY"}])"),
              {dns->server()});
  auto a = agent("dns-agent", "198.18.0.0/15");
  a.credentials.push_back({"openai", "nbx-openai-00112233445566778899aabbccddeeff", proxy::Secret("sk-dns")});
  attached = server->attach_agent(a);

  EXPECT_EQ(ask_udp(query("plain.exfil.test", 1)).rcode, 0) << "the wildcard allows the name itself";
  EXPECT_EQ(ask_udp(query("nbx-openai-0011223344556677.8899aabbccddeeff.exfil.test", 1)).rcode, 3);
  server->detach_agent(*attached, {});
  int attempts = 0;
  for (const auto& e : events())
    if (e.kind == "exfiltration_attempt") {
      ++attempts;
      EXPECT_THAT(e.detail, ::testing::HasSubstr(R"("where":"the host name")"));
    }
  EXPECT_EQ(attempts, 1);
  const auto rows = dns_rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].rule, "credentials.openai");
  EXPECT_EQ(rows[0].decision, "deny");
}

// The DNS view's TCP side is a door like the others (issue 23, item 1): its connections
// take the agent's client slots, so an agent that holds its whole bound cannot open more
// connections to port 53 (each one a descriptor of the proxy's); before, they were only
// counted by the view itself, beside the bound.
TEST_F(DnsViewTest, ItsTcpSideCountsAgainstTheAgentsConnectionBound) {
  configure = [](proxy::ProxyOptions& o) { o.max_client_connections_per_agent = 2; };
  start(kPolicy);
  // Two kept-alive connections, each answered (so the proxy holds both), take the bound.
  std::vector<int> held;
  ASSERT_NO_FATAL_FAILURE(hold_answered_connections(2, held));
  const auto refused = server->counters().client_connections_refused;
  EXPECT_EQ(ask_tcp(query("upstream.test", 1)).rcode, -1) << "a DNS connection past the agent's bound was answered";
  EXPECT_GT(server->counters().client_connections_refused, refused);
  EXPECT_EQ(ask_udp(query("upstream.test", 1)).rcode, 0) << "UDP holds no connection: still answered";
  for (int fd : held) ::close(fd);
  EXPECT_TRUE(eventually_true([&] { return ask_tcp(query("upstream.test", 1)).rcode == 0; }))
      << "its slots came back, and the view answers over TCP again";
}

// An agent with an IPv6 address too is one agent: its connections from either address
// count against one per-agent bound (a hostile agent must not double it by mixing them).
TEST_F(DnsViewTest, AnAgentsIpv6AddressSharesTheBoundOfItsConnections) {
  configure = [](proxy::ProxyOptions& o) { o.max_client_connections_per_agent = 2; };
  start_proxy(base_policy(kPolicy), {dns->server()});
  attached = server->attach_agent(dual_stack_agent("dual-agent"));
  ASSERT_TRUE(attached->listener);
  const auto v6 = server->add_listener({ip::make_address("::1"), 0}, proxy::ListenerKind::http);

  // From ::1, one request: the first line of the answer.
  auto ask_from_v6 = [&] {
    const int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in6 to{};
    to.sin6_family = AF_INET6;
    to.sin6_port = htons(v6.port());
    to.sin6_addr = in6addr_loopback;
    std::string answer;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0) {
      const std::string req = "GET " + upstream_url("/") + " HTTP/1.1\r\nHost: upstream.test\r\nConnection: close\r\n\r\n";
      if (::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
        char buf[256];
        for (ssize_t n; answer.find("\r\n") == std::string::npos && (n = ::read(fd, buf, sizeof buf)) > 0;)
          answer.append(buf, static_cast<std::size_t>(n));
      }
    }
    ::close(fd);
    return answer.substr(0, answer.find("\r\n"));
  };
  // Two kept-alive connections from its IPv4 address take the whole bound: each has had
  // its answer, so the proxy holds both before the next step (the proxy accepts each
  // listener on its own, so a bare connect would race the request from ::1 below)...
  std::vector<int> held;
  ASSERT_NO_FATAL_FAILURE(hold_answered_connections(2, held));
  // ...so one from its IPv6 address is refused.
  EXPECT_EQ(ask_from_v6(), "HTTP/1.1 503 Service Unavailable");
  for (int fd : held) ::close(fd);
  std::string again;
  for (int i = 0; i < 200 && (again = ask_from_v6()) != "HTTP/1.1 200 OK"; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(again, "HTTP/1.1 200 OK") << "the bound is released with the connections";
  bool counted_as_the_agent = false;
  for (const auto& r : rows())
    if (r.client_addr.rfind("[::1]:", 0) == 0 && r.status == 200) counted_as_the_agent = r.agent == "dual-agent";
  EXPECT_TRUE(counted_as_the_agent) << "the IPv6 address is the agent's";
}

}  // namespace
}  // namespace netbox::test
