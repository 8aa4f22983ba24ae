// A running proxy's DNS views (issue 15 item 6): a launcher registering over the control
// socket with its agent's synthetic pool gets the same DNS view and capture listener as
// an embedded proxy's agent; pools outside the synthetic range or overlapping another
// agent's are refused, and a launcher that goes away leaves nothing attached.
#include "control_client.hpp"
#include "proxy_fixture.hpp"

#include "netbox/policy/cidr.hpp"
#include "netbox/proxy/endpoint.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>

#include <array>
#include <chrono>
#include <thread>

namespace netbox::test {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

// Loopback addresses of this test process alone (each view listens on port 53 of its host
// address, and ctest runs tests in parallel): the host sides and agents of two launches.
struct Loopbacks {
  std::array<std::string, 4> a;  // host 1, agent 1, host 2, agent 2
  Loopbacks() {
    unsigned n = static_cast<unsigned>(::getpid());
    const unsigned last = n % 254 + 1;
    n /= 254;
    const unsigned third = n % 256;
    n /= 256;
    const unsigned second = 41 + (n % 50) * 4;  // apart from the DNS view tests' (40 + 3k)
    for (unsigned i = 0; i < 4; ++i)
      a[i] = "127." + std::to_string(second + i) + "." + std::to_string(third) + "." + std::to_string(last);
  }
};
const Loopbacks kAddr;
const std::string& kHost1 = kAddr.a[0];
const std::string& kAgent1 = kAddr.a[1];
const std::string& kHost2 = kAddr.a[2];
const std::string& kAgent2 = kAddr.a[3];

// The first A record's address in the answer to one UDP query for `name` sent from
// `from` to `host`:53; empty when refused or unanswered within two seconds.
std::string resolve(const std::string& name, const std::string& from, const std::string& host) {
  std::vector<std::uint8_t> q{0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
  for (std::size_t start = 0; start <= name.size();) {
    const auto dot = std::min(name.find('.', start), name.size());
    q.push_back(static_cast<std::uint8_t>(dot - start));
    q.insert(q.end(), name.begin() + static_cast<std::ptrdiff_t>(start), name.begin() + static_cast<std::ptrdiff_t>(dot));
    start = dot + 1;
  }
  q.insert(q.end(), {0, 0, 1, 0, 1});
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in me{}, to{};
  me.sin_family = to.sin_family = AF_INET;
  ::inet_pton(AF_INET, from.c_str(), &me.sin_addr);
  ::inet_pton(AF_INET, host.c_str(), &to.sin_addr);
  to.sin_port = htons(53);
  ::bind(fd, reinterpret_cast<sockaddr*>(&me), sizeof me);
  ::sendto(fd, q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
  pollfd p{fd, POLLIN, 0};
  std::array<std::uint8_t, 1500> m{};
  std::string out;
  if (::poll(&p, 1, 2000) == 1) {
    const auto n = ::recv(fd, m.data(), m.size(), 0);
    // One question and one A record, no OPT: the address ends the message.
    if (n >= 16 && (m[3] & 0xf) == 0 && ((m[6] << 8) | m[7]) > 0) {
      char text[INET_ADDRSTRLEN];
      ::inet_ntop(AF_INET, m.data() + n - 4, text, sizeof text);
      out = text;
    }
  }
  ::close(fd);
  return out;
}

json registration(const std::string& agent, const std::string& host, const std::string& pool) {
  return {{"op", "register"}, {"addr", agent}, {"agent", "agent-" + agent}, {"listen", host + ":0"}, {"dns_pool", pool}};
}

class ControlDnsViewTest : public ProxyTest {
 protected:
  void SetUp() override {
    control = (dir.path() / "control.sock").string();
    start_proxy(base_policy(R"("resolve": {"upstream.test": ["127.0.0.1"]})"), {}, 2, control);
  }
  std::string control;
};

TEST_F(ControlDnsViewTest, ARegisteredPoolGetsTheDnsViewAndACaptureListener) {
  ControlClient c(control);
  const auto reply = c.call(registration(kAgent1, kHost1, "198.18.4.0/22"));
  ASSERT_EQ(reply["ok"], true) << reply.dump();
  EXPECT_EQ(reply["dns"], kHost1 + ":53");
  const auto capture = proxy::parse_endpoint(reply["capture"].get<std::string>());
  EXPECT_EQ(capture.address().to_string(), kHost1);
  EXPECT_NE(capture.port(), 0);
  const auto got = resolve("upstream.test", kAgent1, kHost1);
  ASSERT_FALSE(got.empty()) << "the allowed name is answered";
  EXPECT_TRUE(policy::Cidr::parse("198.18.4.0/22")->contains(boost::asio::ip::make_address(got))) << got;
  EXPECT_EQ(resolve("denied.test", kAgent1, kHost1), "");
  // A registration without a pool (proxy-vars) gets neither.
  const auto plain = c.call({{"op", "register"}, {"addr", kAgent2}, {"agent", "plain"}, {"listen", kHost2 + ":0"}});
  ASSERT_EQ(plain["ok"], true) << plain.dump();
  EXPECT_FALSE(plain.contains("dns"));
  EXPECT_FALSE(plain.contains("capture"));
}

// A pool another agent holds is where the launcher would like to be (launches whose /30s
// are 128 apart propose the same /22): the later agent gets the next free block of that
// size, and each keeps its own mappings. Pools outside the synthetic range, or with no
// free block of their size, are refused.
TEST_F(ControlDnsViewTest, AnOverlappingPoolMovesToAFreeBlockAndPoolsOutsideTheRangeAreRefused) {
  ControlClient one(control);
  auto first = one.call(registration(kAgent1, kHost1, "198.18.4.0/22"));
  ASSERT_EQ(first["ok"], true) << first.dump();
  EXPECT_EQ(first["dns_pool"], "198.18.4.0/22");
  ControlClient two(control);
  auto r = two.call(registration(kAgent2, kHost2, "198.18.0.0/15"));  // the whole range: no block is free
  EXPECT_EQ(r["ok"], false);
  EXPECT_THAT(r["error"].get<std::string>(), HasSubstr("overlaps 198.18.4.0/22, the synthetic pool of agent " + kAgent1));
  EXPECT_THAT(r["error"].get<std::string>(), HasSubstr("no free block of its size was found"));
  r = two.call(registration(kAgent2, kHost2, "198.16.0.0/14"));  // holds the range and more
  EXPECT_EQ(r["ok"], false);
  EXPECT_THAT(r["error"].get<std::string>(), HasSubstr("outside this proxy's synthetic range 198.18.0.0/15"));
  r = two.call(registration(kAgent2, kHost2, "10.0.0.0/24"));  // a real destination
  EXPECT_THAT(r["error"].get<std::string>(), HasSubstr("outside this proxy's synthetic range"));
  r = two.call(registration(kAgent2, kHost2, "198.18.8.1/22"));
  EXPECT_THAT(r["error"].get<std::string>(), HasSubstr("\"dns_pool\" is not a network"));
  // Nothing of the refused registrations stayed: agent 2 has no view.
  EXPECT_EQ(resolve("upstream.test", kAgent2, kHost2), "");
  for (const char* wanted : {"198.18.4.0/22", "198.18.5.0/24"}) {
    r = two.call(registration(kAgent2, kHost2, wanted));
    ASSERT_EQ(r["ok"], true) << r.dump();
    const auto moved = r["dns_pool"].get<std::string>();
    EXPECT_EQ(moved, std::string(wanted) == "198.18.4.0/22" ? "198.18.8.0/22" : "198.18.8.0/24") << wanted;
    const auto a2 = resolve("upstream.test", kAgent2, kHost2);
    EXPECT_TRUE(policy::Cidr::parse(moved)->contains(boost::asio::ip::make_address(a2))) << a2;
    const auto a1 = resolve("upstream.test", kAgent1, kHost1);
    EXPECT_TRUE(policy::Cidr::parse("198.18.4.0/22")->contains(boost::asio::ip::make_address(a1))) << a1;
  }
}

// Each agent's names map in its own pool: the same name gets another address in each,
// and neither view knows the other's.
TEST_F(ControlDnsViewTest, TwoAgentsAtOnceEachResolveInTheirOwnPool) {
  ControlClient one(control);
  ControlClient two(control);
  ASSERT_EQ(one.call(registration(kAgent1, kHost1, "198.18.4.0/22"))["ok"], true);
  ASSERT_EQ(two.call(registration(kAgent2, kHost2, "198.18.8.0/22"))["ok"], true);
  const auto a1 = resolve("upstream.test", kAgent1, kHost1);
  const auto a2 = resolve("upstream.test", kAgent2, kHost2);
  EXPECT_TRUE(policy::Cidr::parse("198.18.4.0/22")->contains(boost::asio::ip::make_address(a1))) << a1;
  EXPECT_TRUE(policy::Cidr::parse("198.18.8.0/22")->contains(boost::asio::ip::make_address(a2))) << a2;
  EXPECT_EQ(resolve("upstream.test", kAgent1, kHost2), "") << "agent 1 is not answered by agent 2's view";
}

// A launcher killed before it unregisters: its connection closes, and the proxy releases
// its view (port 53 of its address), its capture listener and its pool.
TEST_F(ControlDnsViewTest, AClosedConnectionReleasesTheViewListenersAndPool) {
  {
    ControlClient gone(control);
    ASSERT_EQ(gone.call(registration(kAgent1, kHost1, "198.18.4.0/22"))["ok"], true);
    ASSERT_FALSE(resolve("upstream.test", kAgent1, kHost1).empty());
  }
  ControlClient next(control);
  json r;
  for (int i = 0; i < 200; ++i) {  // the proxy sees the close on its own io thread
    r = next.call(registration(kAgent1, kHost1, "198.18.4.0/22"));
    if (r["ok"] == true) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(r["ok"], true) << r.dump();
  EXPECT_FALSE(resolve("upstream.test", kAgent1, kHost1).empty());
  ASSERT_EQ(next.call({{"op", "unregister"}, {"addr", kAgent1}})["ok"], true);
  EXPECT_EQ(resolve("upstream.test", kAgent1, kHost1), "") << "unregister stops the view";
}

}  // namespace
}  // namespace netbox::test
