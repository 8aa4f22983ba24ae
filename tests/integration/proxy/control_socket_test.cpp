// The control socket `netbox launch` uses: register / unregister / ping, JSON lines.
#include "control_client.hpp"
#include "proxy_fixture.hpp"
#include "support/background_process.hpp"

#include "netbox/audit/writer.hpp"
#include "netbox/proxy/control_protocol.hpp"
#include "netbox/proxy/endpoint.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <nlohmann/json.hpp>
#include <sqlite3.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <chrono>
#include <map>
#include <thread>

namespace netbox::test {
namespace {

namespace asio = boost::asio;
using json = nlohmann::json;

class ControlTest : public ProxyTest {
 protected:
  void SetUp() override {
    control = (dir.path() / "control.sock").string();
    start_proxy(base_policy(R"("agents": {"builder": {"allow": ["other.test"]}},
        "resolve": {"upstream.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})"),
                {}, 2, control);
  }
  std::string other_url() const { return "http://other.test:" + std::to_string(upstream.port()) + "/"; }
  int agents_rows(const std::string& where) {
    server->audit().flush();
    sqlite3* db = nullptr;
    sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db, ("SELECT count(*) FROM agents WHERE " + where).c_str(), -1, &s, nullptr);
    int n = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int(s, 0) : -1;
    sqlite3_finalize(s);
    sqlite3_close(db);
    return n;
  }
  std::string control;
};

TEST_F(ControlTest, SocketIsPrivateAndAnswersPing) {
  struct stat st {};
  ASSERT_EQ(::stat(control.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ControlClient c(control);
  EXPECT_EQ(c.call({{"op", "ping"}}), json({{"ok", true}}));
  auto bad = c.call({{"op", "frobnicate"}});
  EXPECT_EQ(bad["ok"], false);
  EXPECT_NE(bad["error"].get<std::string>().find("frobnicate"), std::string::npos);
}

TEST_F(ControlTest, RegisteredAddressIsLoggedAsTheAgentAndDecidedWithItsProfile) {
  ControlClient c(control);
  EXPECT_EQ(proxy_get(port, other_url()).status, 403);  // anonymous: base profile
  BackgroundProcess launched({"/bin/sleep", "60"}, dir.path() / "launched.log");
  const auto pid = static_cast<std::int64_t>(launched.pid());
  auto reply = c.call({{"op", "register"}, {"addr", "127.0.0.1"}, {"agent", "builder-1"}, {"profile", "builder"},
                       {"launch", {{"pid", pid}, {"command_line", "curl http://other.test/"},
                                   {"address", "127.0.0.1"}, {"policy_digest", "abc"}}}});
  ASSERT_EQ(reply["ok"], true) << reply.dump();
  EXPECT_EQ(proxy_get(port, other_url()).status, 200);
  auto row = last_row();
  EXPECT_EQ(row.agent, "builder-1");
  EXPECT_EQ(row.decision, "allow");
  EXPECT_EQ(agents_rows("name = 'builder-1' AND pid = " + std::to_string(pid) +
                        " AND command_line = 'curl http://other.test/'"),
            1);

  reply = c.call({{"op", "unregister"}, {"addr", "127.0.0.1"}, {"exit_status", 3},
                  {"resource_usage", {{"user_ms", 1}, {"sys_ms", 2}, {"max_rss_kb", 3}}}});
  ASSERT_EQ(reply["ok"], true) << reply.dump();
  EXPECT_EQ(proxy_get(port, other_url()).status, 403);
  EXPECT_EQ(last_row().agent, "anonymous");
  EXPECT_EQ(agents_rows("name = 'builder-1' AND exit_status = 3 AND ended IS NOT NULL"), 1);
}

TEST_F(ControlTest, RegisterWithListenAddsAListenerAndUnregisterRemovesIt) {
  ControlClient c(control);
  auto reply = c.call({{"op", "register"}, {"addr", "127.0.0.1"}, {"agent", "a1"}, {"listen", "127.0.0.1:0"}});
  ASSERT_EQ(reply["ok"], true) << reply.dump();
  const auto listen = reply["listen"].get<std::string>();
  const auto extra = proxy::parse_endpoint(listen).port();
  ASSERT_NE(extra, 0);
  ASSERT_NE(extra, port);
  EXPECT_EQ(proxy_get(extra, upstream_url("/")).status, 200);
  EXPECT_EQ(last_row().agent, "a1");
  ASSERT_EQ(c.call({{"op", "unregister"}, {"addr", "127.0.0.1"}})["ok"], true);
  bool refused = false;
  for (int i = 0; i < 100 && !refused; ++i) {
    try {
      ProxyConnection probe(extra);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } catch (const std::exception&) {
      refused = true;
    }
  }
  EXPECT_TRUE(refused) << "the listener added for the agent should be gone";
}

TEST_F(ControlTest, ClosingTheControlConnectionUnregistersEverything) {
  {
    ControlClient c(control);
    ASSERT_EQ(c.call({{"op", "register"}, {"addr", "127.0.0.1"}, {"agent", "ghost"}, {"profile", "builder"},
                      {"launch", {{"pid", 0}}}})["ok"],
              true);
    EXPECT_EQ(proxy_get(port, other_url()).status, 200);
  }  // like a launcher killed with SIGKILL
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = proxy_get(port, other_url()).status == 403;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone);
  EXPECT_EQ(last_row().agent, "anonymous");
  EXPECT_EQ(agents_rows("name = 'ghost' AND ended IS NOT NULL"), 1);
}

// The agents row names the launch's pid as the agent's process: a client registering by
// address may name only a process it started (SO_PEERCRED's pid), as with sockets; the
// host's init, the proxy itself or no process at all are refused, and nothing is attached.
TEST_F(ControlTest, ARegistrationByAddressNamesNoLaunchButOneTheClientStarted) {
  ControlClient c(control);
  for (const std::int64_t hostile : {std::int64_t{1}, static_cast<std::int64_t>(::getpid()), std::int64_t{-5}}) {
    const auto r = c.call({{"op", "register"}, {"addr", "127.0.0.1"}, {"agent", "liar"}, {"profile", "builder"},
                           {"launch", {{"pid", hostile}, {"command_line", "sh"}}}});
    EXPECT_EQ(r["ok"], false) << hostile;
    EXPECT_NE(r.value("error", std::string()).find("\"launch\" \"pid\" " + std::to_string(hostile)), std::string::npos)
        << r.dump();
  }
  EXPECT_EQ(proxy_get(port, other_url()).status, 403);
  EXPECT_EQ(agents_rows("name = 'liar'"), 0);
}

// A second launcher (or a stale one) claiming an address another connection registered
// would take over that agent's connections, profile and credentials: refused, in any
// spelling of the address, and the first agent keeps its identity.
TEST_F(ControlTest, AnAddressAnotherConnectionRegisteredIsRefusedNotTakenOver) {
  ControlClient first(control);
  ASSERT_EQ(first.call({{"op", "register"}, {"addr", "127.0.0.1"}, {"agent", "first"}, {"profile", "builder"}})["ok"],
            true);
  ControlClient second(control);
  const std::vector<std::pair<std::string, std::string>> claims{
      {"127.0.0.1", "\"addr\" 127.0.0.1 is already registered, as agent first"},
      {"::ffff:127.0.0.1", "is not a plain IPv6 address"},  // the same key, spelled otherwise
      {"fd00:6e62:7800::ad5:702%7", "is not a plain IPv6 address"},  // a key no peer ever matches
  };
  for (const auto& [addr, why] : claims) {
    auto r = second.call({{"op", "register"}, {"addr", addr}, {"agent", "second"}});
    EXPECT_EQ(r["ok"], false) << addr;
    EXPECT_NE(r["error"].get<std::string>().find(why), std::string::npos) << r["error"];
  }
  EXPECT_EQ(proxy_get(port, other_url()).status, 200) << "still the builder profile's";
  EXPECT_EQ(last_row().agent, "first");
}

// One name is one agent: budgets, questions, grants and operator actions are kept by name,
// so a second registration under a name in use (another launcher, or a hostile client
// wanting the first agent's questions pushed to it) is refused, whatever its address, and
// the name is free again once its agent leaves.
TEST_F(ControlTest, ANameAnotherAgentHoldsIsRefusedUntilThatAgentLeaves) {
  ControlClient first(control);
  ASSERT_EQ(first.call({{"op", "register"}, {"addr", "127.0.0.1"}, {"agent", "builder-1"}, {"profile", "builder"},
                        {"ask", {{"timeout_ms", 60000}, {"terminal", true}}}})["ok"],
            true);
  ControlClient second(control);
  for (const json& ask : {json(nullptr), json({{"timeout_ms", 60000}, {"terminal", true}})}) {
    auto r = second.call({{"op", "register"}, {"addr", "127.0.0.2"}, {"agent", "builder-1"}, {"ask", ask}});
    EXPECT_EQ(r["ok"], false) << r.dump();
    EXPECT_NE(r.value("error", "").find("an agent named builder-1 is attached to this proxy already"),
              std::string::npos)
        << r.dump();
  }
  EXPECT_EQ(proxy_get(port, other_url()).status, 200) << "the first keeps its profile";
  EXPECT_EQ(last_row().agent, "builder-1");
  // The refusals left nothing behind: the first's registration still ends cleanly, and the
  // name is then free.
  ASSERT_EQ(first.call({{"op", "unregister"}, {"addr", "127.0.0.1"}})["ok"], true);
  auto again = second.call({{"op", "register"}, {"addr", "127.0.0.2"}, {"agent", "builder-1"}});
  EXPECT_EQ(again["ok"], true) << again.dump();
}

TEST_F(ControlTest, BadRegistrationsAreRefusedWithAReason) {
  ControlClient c(control);
  auto r = c.call({{"op", "register"}, {"addr", "not-an-ip"}, {"agent", "x"}});
  EXPECT_EQ(r["ok"], false);
  EXPECT_NE(r["error"].get<std::string>().find("not-an-ip"), std::string::npos);
  r = c.call({{"op", "register"}, {"addr", "127.0.0.1"}, {"agent", "x"}, {"profile", "nope"}});
  EXPECT_EQ(r["ok"], false);
  EXPECT_NE(r["error"].get<std::string>().find("nope"), std::string::npos);
  // An IPv6 link whose values are not what they name, each refused naming it.
  const json base = {{"op", "register"}, {"addr", "10.213.7.2"}, {"agent", "x"}, {"dns_pool", "198.18.4.0/22"}};
  const std::vector<std::pair<json, std::string>> bad_links{
      {{{"agent", "10.213.7.2"}, {"host", "fd00::1"}, {"pool", "2001:2::/80"}}, "\"ipv6\" \"agent\" is not an IPv6 address"},
      {{{"agent", "fd00::2"}, {"host", "nope"}, {"pool", "2001:2::/80"}}, "\"ipv6\" \"host\" is not an IPv6 address: \"nope\""},
      {{{"agent", "fd00::2"}, {"host", "fd00::1"}, {"pool", "198.18.8.0/22"}}, "\"ipv6\" \"pool\" is not an IPv6 network"},
  };
  for (const auto& [link, why] : bad_links) {
    auto req = base;
    req["ipv6"] = link;
    r = c.call(req);
    EXPECT_EQ(r["ok"], false) << link.dump();
    EXPECT_NE(r["error"].get<std::string>().find(why), std::string::npos) << r["error"];
  }
  EXPECT_EQ(c.call({{"op", "ping"}})["ok"], true);  // the connection survives bad lines
}

// A launcher whose --subnet lies outside the proxy's pool would register agents (and the
// host side of their links) that the proxy does not treat as netbox's: other agents could
// reach them. Refused, before any listener is bound, with a message naming the pool.
TEST_F(ControlTest, RegistrationsOutsideTheLaunchPoolAreRefused) {
  ControlClient c(control);
  auto r = c.call({{"op", "register"}, {"addr", "10.99.0.2"}, {"agent", "stray"}});
  EXPECT_EQ(r["ok"], false);
  EXPECT_NE(r["error"].get<std::string>().find("\"addr\" 10.99.0.2 is outside this proxy's launch subnet pool (10.213.0.0/16, fd00:6e62:7800::/48)"),
            std::string::npos)
      << r["error"];
  r = c.call({{"op", "register"}, {"addr", "10.213.7.2"}, {"agent", "stray"}, {"listen", "10.99.0.1:0"}});
  EXPECT_EQ(r["ok"], false);
  EXPECT_NE(r["error"].get<std::string>().find("\"listen\" 10.99.0.1"), std::string::npos) << r["error"];
  EXPECT_EQ(server->local_endpoints().size(), 1u) << "a listener was added for a refused registration";
  // An IPv6 link is held to the same pool (every launch's IPv6 link range is in it).
  const json link = {{"agent", "2001:db8::2"}, {"host", "fd00:6e62:7800::ad5:701"}, {"pool", "2001:2:0:1::/80"}};
  r = c.call({{"op", "register"}, {"addr", "10.213.7.2"}, {"agent", "stray"}, {"dns_pool", "198.18.4.0/22"}, {"ipv6", link}});
  EXPECT_EQ(r["ok"], false);
  EXPECT_NE(r["error"].get<std::string>().find("\"ipv6 agent address\" 2001:db8::2 is outside"), std::string::npos)
      << r["error"];
  // Inside the pool it is accepted (no listener: nothing is bound on 10.213/16 here).
  r = c.call({{"op", "register"}, {"addr", "10.213.7.2"}, {"agent", "inside"}});
  EXPECT_EQ(r["ok"], true) << r.dump();
  EXPECT_EQ(c.call({{"op", "unregister"}, {"addr", "10.213.7.2"}})["ok"], true);
}

// Rows of an agent registered as "anonymous" (or with no name, or one holding terminal
// escapes) would pass for an unregistered client's, or drive the terminal of whoever reads them.
TEST_F(ControlTest, ReservedEmptyAndControlCharacterAgentNamesAreRefused) {
  ControlClient c(control);
  struct Case {
    json agent;
    std::string fragment;
  };
  for (const auto& [agent, fragment] : std::vector<Case>{{"anonymous", "reserved"},
                                                         {"", "empty"},
                                                         {nullptr, "missing"},
                                                         {"evil\x1b[2J", "control characters"},
                                                         {"bell\x07", "control characters"},
                                                         {"csi\xc2\x9b" "31m", "control characters"},
                                                         {"del\x7f", "control characters"}}) {
    json req = {{"op", "register"}, {"addr", "127.0.0.1"}, {"profile", "builder"}, {"launch", {{"pid", 0}}}};
    if (!agent.is_null()) req["agent"] = agent;
    const auto r = c.call(req);
    EXPECT_EQ(r["ok"], false) << agent.dump();
    EXPECT_NE(r.value("error", std::string()).find("\"agent\""), std::string::npos) << r.dump();
    EXPECT_NE(r.value("error", std::string()).find(fragment), std::string::npos) << r.dump();
  }
  // Nothing was registered: the builder profile (which allows other.test) is not in force.
  EXPECT_EQ(proxy_get(port, other_url()).status, 403);
  EXPECT_EQ(last_row().agent, "anonymous");
  EXPECT_EQ(agents_rows("1"), 0);
  EXPECT_EQ(c.call({{"op", "register"}, {"addr", "127.0.0.1"}, {"agent", "builder-2"}, {"profile", "builder"}})["ok"],
            true);
  EXPECT_EQ(proxy_get(port, other_url()).status, 200);
}

// A broken or hostile launcher gets an answer naming what is wrong and the proxy goes on:
// lines that are not JSON, wrong types, unknown ops, a line without end.
TEST_F(ControlTest, HostileLinesAreAnsweredWithAReasonAndNeverStopTheProxy) {
  ControlClient c(control);
  for (const auto& [line, fragment] : std::vector<std::pair<std::string, std::string>>{
           {"{\"op\":\"register\",\"addr\":", "JSON"},
           {"\xff\xfe\x1b[2J", "not JSON"},
           {"[1,2,3]", "expected a JSON object"},
           {R"({"op":"register","addr":"127.0.0.1","agent":"a","launch":{"pid":"x"}})", "\"pid\" must be an integer"},
           {R"({"op":"register","addr":"127.0.0.1","agent":"a","listen":"localhost:80"})", "\"listen\" 'localhost:80'"},
           {R"({"op":"unregister","addr":"127.0.0.1","exit_status":1e99})", "\"exit_status\" must be an integer"},
           {R"({"op":"shutdown"})", "unknown op \"shutdown\""}}) {
    c.write_raw(line + "\n");
    const auto reply = json::parse(c.read_line());
    EXPECT_EQ(reply["ok"], false) << line;
    EXPECT_NE(reply.value("error", std::string()).find(fragment), std::string::npos) << line << " -> " << reply.dump();
  }
  EXPECT_EQ(c.call({{"op", "ping"}})["ok"], true);

  // A line longer than the protocol allows: answered, then the connection is closed.
  ControlClient flood(control);
  // Exactly as much as the proxy reads before it answers: more, left unread at its close,
  // would reset the connection under the answer.
  flood.write_raw(std::string(proxy::control::kMaxLine, 'x'));
  const auto reply = json::parse(flood.read_line());
  EXPECT_EQ(reply["ok"], false);
  EXPECT_NE(reply["error"].get<std::string>().find("longer than"), std::string::npos) << reply.dump();
  EXPECT_EQ(flood.read_line(), "") << "the connection should be closed";

  // A registration cut short by the launcher's end leaves nothing behind.
  {
    ControlClient cut(control);
    cut.write_raw(R"({"op":"register","addr":"127.0.0.1","agent":"half","profile":"builder")");
  }
  EXPECT_EQ(ControlClient(control).call({{"op", "ping"}})["ok"], true);
  EXPECT_EQ(proxy_get(port, other_url()).status, 403);
  EXPECT_EQ(last_row().agent, "anonymous");
}

// A client that sends lines and never reads the answers: the proxy stops reading it once
// its unsent answers pass a bound (the client's writes then block), instead of queueing
// answers for it without end; others are served meanwhile, and it gets every answer, in
// order, once it reads.
TEST_F(ControlTest, AClientThatNeverReadsItsAnswersIsNotReadFurther) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", control.c_str());
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  const std::string ping = "{\"op\":\"ping\"}\n";
  std::string lines;
  for (int i = 0; i < 4096; ++i) lines += ping;
  std::size_t sent = 0;
  constexpr std::size_t kTries = 64u << 20;  // 64 MiB of pings: far past any socket buffer
  bool blocked = false;
  for (int idle = 0; sent < kTries && idle < 50;) {
    const std::size_t at = sent % lines.size();  // whole lines, however the kernel cuts them
    const ssize_t n = ::send(fd, lines.data() + at, lines.size() - at, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      idle = 0;
    } else if (errno == EAGAIN) {
      ++idle;  // the proxy may still be reading: give it 50 chances of 10 ms
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } else {
      break;
    }
    blocked = idle >= 50;
  }
  EXPECT_TRUE(blocked) << "the proxy read " << sent << " bytes of pings whose answers nobody read";
  EXPECT_LT(sent, std::size_t{16} << 20);
  EXPECT_EQ(ControlClient(control).call({{"op", "ping"}})["ok"], true) << "others are served meanwhile";

  // Reading now: an answer for every ping the proxy took, each one whole, and the
  // connection goes on.
  const int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  const std::string answer = "{\"ok\":true}\n";
  std::string got;
  char buf[65536];
  const std::size_t pings = sent / ping.size();
  while (got.size() < pings * answer.size()) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    ASSERT_GT(n, 0) << "closed after " << got.size() << " bytes of answers";
    got.append(buf, static_cast<std::size_t>(n));
  }
  EXPECT_EQ(got.substr(0, answer.size()), answer);
  const auto odd = got.find_first_not_of("{\"ok\":true}\n");
  EXPECT_EQ(odd, std::string::npos) << got.substr(odd == std::string::npos ? 0 : odd - std::min<std::size_t>(odd, 40), 200);
  ::close(fd);
}

// The count of an agent's requests in the metrics: by profile unless asked otherwise, so a
// long-running proxy that sees a new agent name with every launch keeps few series.
std::map<std::string, std::uint64_t> requests_by_label(const proxy::CountersSnapshot& c) {
  std::map<std::string, std::uint64_t> out;
  for (const auto& r : c.requests) out[r.agent] += r.count;
  return out;
}

// A request is counted when its exchange completes, which may come just after the client
// has its answer: the series once `n` requests are counted (or after five seconds).
std::map<std::string, std::uint64_t> requests_by_label_once(const proxy::Server& server, std::uint64_t n) {
  for (int i = 0;; ++i) {
    auto labels = requests_by_label(server.counters());
    std::uint64_t counted = 0;
    for (const auto& [label, count] : labels) counted += count;
    if (counted >= n || i == 500) return labels;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

TEST_F(ControlTest, MetricsLabelRequestsByProfileNotByTheNewNameOfEveryLaunch) {
  ControlClient c(control);
  for (const char* name : {"builder-1", "builder-2"}) {
    ASSERT_EQ(c.call({{"op", "register"}, {"addr", "127.0.0.1"}, {"agent", name}, {"profile", "builder"}})["ok"], true);
    EXPECT_EQ(proxy_get(port, other_url()).status, 200);
    ASSERT_EQ(c.call({{"op", "unregister"}, {"addr", "127.0.0.1"}})["ok"], true);
  }
  ASSERT_EQ(c.call({{"op", "register"}, {"addr", "127.0.0.1"}, {"agent", "plain-1"}})["ok"], true);
  EXPECT_EQ(proxy_get(port, other_url()).status, 403);
  ASSERT_EQ(c.call({{"op", "unregister"}, {"addr", "127.0.0.1"}})["ok"], true);
  EXPECT_EQ(proxy_get(port, other_url()).status, 403);
  EXPECT_EQ(requests_by_label_once(*server, 4),
            (std::map<std::string, std::uint64_t>{{"builder", 2}, {"default", 1}, {"anonymous", 1}}));
}

class ControlNameLabelTest : public ControlTest {
 protected:
  void SetUp() override {
    configure = [](proxy::ProxyOptions& o) { o.metrics_agent_label = proxy::MetricsAgentLabel::name; };
    ControlTest::SetUp();
  }
};

TEST_F(ControlNameLabelTest, NameLabelsAreBoundedAndTheRestCountAsOther) {
  ControlClient c(control);
  const int agents = static_cast<int>(proxy::kMaxAgentLabels) + 5;
  for (int i = 0; i < agents; ++i) {
    ASSERT_EQ(c.call({{"op", "register"}, {"addr", "127.0.0.1"}, {"agent", "a-" + std::to_string(i)}})["ok"], true);
    EXPECT_EQ(proxy_get(port, upstream_url("/")).status, 200);
    ASSERT_EQ(c.call({{"op", "unregister"}, {"addr", "127.0.0.1"}})["ok"], true);
  }
  const auto labels = requests_by_label_once(*server, agents);
  EXPECT_EQ(labels.size(), proxy::kMaxAgentLabels + 1) << "one series per name up to the bound, then other";
  EXPECT_EQ(labels.at("a-0"), 1U);
  EXPECT_EQ(labels.at("other"), 5U);
}

}  // namespace
}  // namespace netbox::test
