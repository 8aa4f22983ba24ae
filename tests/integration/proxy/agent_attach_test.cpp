// Server::attach_agent / detach_agent, as the embedded proxy of `netbox launch` calls them
// (the control socket calls the same): the listener, the identity and the agents row come
// and go together, and a refused attachment leaves nothing behind.
#include "proxy_fixture.hpp"

#include "netbox/audit/writer.hpp"
#include "support/process.hpp"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <netinet/in.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace netbox::test {
namespace {

namespace ip = boost::asio::ip;

class AttachTest : public ProxyTest {
 protected:
  void SetUp() override {
    start_proxy(base_policy(R"("agents": {"builder": {"allow": ["other.test"]}},
        "resolve": {"upstream.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})"));
  }
  std::string other_url() const { return "http://other.test:" + std::to_string(upstream.port()) + "/"; }
  proxy::AgentAttachment builder(const std::string& name) const {
    proxy::AgentAttachment a;
    a.addr = ip::make_address("127.0.0.1");
    a.name = name;
    a.profile = "builder";
    a.listen = ip::tcp::endpoint(ip::make_address("127.0.0.1"), 0);
    a.launch = proxy::AgentLaunch{4321, "make", "", "", R"({"cgroup":"v1"})"};
    return a;
  }
  std::string agents_row(const std::string& name) {
    server->audit().flush();
    sqlite3* db = nullptr;
    sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db,
                       "SELECT pid || '|' || address || '|' || coalesce(sandbox, '') || '|' || "
                       "coalesce(exit_status, 'none') || '|' || (ended IS NOT NULL) FROM agents WHERE name = ?",
                       -1, &s, nullptr);
    sqlite3_bind_text(s, 1, name.c_str(), -1, SQLITE_TRANSIENT);
    std::string out = sqlite3_step(s) == SQLITE_ROW ? reinterpret_cast<const char*>(sqlite3_column_text(s, 0)) : "";
    sqlite3_finalize(s);
    sqlite3_close(db);
    return out;
  }
  bool refuses_connections(unsigned short p) {
    for (int i = 0; i < 100; ++i) {
      try {
        ProxyConnection probe(p);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      } catch (const std::exception&) {
        return true;
      }
    }
    return false;
  }
};

TEST_F(AttachTest, AnAttachedAgentGetsItsListenerIdentityAndRowAndDetachTakesThemBack) {
  const auto attached = server->attach_agent(builder("b1"));
  ASSERT_TRUE(attached.listener);
  ASSERT_TRUE(attached.listener_added);
  const auto own_port = attached.listener->port();
  ASSERT_NE(own_port, port);
  EXPECT_EQ(proxy_get(own_port, other_url()).status, 200);  // decided with agents.builder
  EXPECT_EQ(last_row().agent, "b1");
  EXPECT_EQ(agents_row("b1"), R"(4321|127.0.0.1|{"cgroup":"v1"}|none|0)");
  EXPECT_EQ(server->counters().attached_agents, 1u) << "netbox_attached_agents";

  server->detach_agent(attached, {7, R"({"user_ms":1})"});
  EXPECT_EQ(agents_row("b1"), R"(4321|127.0.0.1|{"cgroup":"v1"}|7|1)");
  EXPECT_EQ(server->counters().attached_agents, 0u);
  EXPECT_EQ(proxy_get(port, other_url()).status, 403);  // anonymous again
  EXPECT_TRUE(refuses_connections(own_port)) << "the agent's listener should be closed";
}

TEST_F(AttachTest, AListenerAlreadyThereIsUsedAndKeptAfterDetach) {
  auto a = builder("b2");
  a.listen = ip::tcp::endpoint(ip::make_address("127.0.0.1"), port);
  const auto attached = server->attach_agent(a);
  EXPECT_FALSE(attached.listener_added);
  server->detach_agent(attached);
  EXPECT_EQ(proxy_get(port, upstream_url("/")).status, 200) << "the proxy's own listener was closed";
}

TEST_F(AttachTest, RefusedAttachmentsLeaveNothingBehind) {
  const auto before = server->local_endpoints().size();
  auto unknown_profile = builder("b3");
  unknown_profile.profile = "nope";
  EXPECT_THROW(server->attach_agent(unknown_profile), std::invalid_argument);
  auto bad_name = builder("anonymous");
  EXPECT_THROW(server->attach_agent(bad_name), std::invalid_argument);
  auto outside = builder("b4");
  outside.addr = ip::make_address("10.99.0.2");
  try {
    server->attach_agent(outside);
    ADD_FAILURE() << "an address outside the launch pool was attached";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("\"addr\" 10.99.0.2 is outside"), std::string::npos) << e.what();
  }
  auto taken = builder("b5");
  taken.listen = ip::tcp::endpoint(ip::make_address("127.0.0.1"), upstream.port());  // someone else's port
  EXPECT_THROW(server->attach_agent(taken), std::runtime_error);
  EXPECT_EQ(server->local_endpoints().size(), before);
  EXPECT_EQ(proxy_get(port, other_url()).status, 403);
  EXPECT_EQ(last_row().agent, "anonymous");
  EXPECT_EQ(agents_row("b3") + agents_row("b4") + agents_row("b5"), "");
  EXPECT_EQ(server->counters().attached_agents, 0u) << "a refused attachment is not counted";
}

}  // namespace
TEST_F(AttachTest, ASocksListenerComesAndGoesWithTheAgentAndSpeaksForIt) {
  auto a = builder("b6");
  a.socks_listen = ip::tcp::endpoint(ip::make_address("127.0.0.1"), 0);
  const auto attached = server->attach_agent(a);
  ASSERT_TRUE(attached.socks_listener);
  ASSERT_TRUE(attached.socks_listener_added);
  const auto socks_port = attached.socks_listener->port();
  // other.test is allowed only by agents.builder: the SOCKS listener decides as the agent.
  const auto r = run({"curl", "-sS", "--max-time", "20", "--socks5-hostname", "127.0.0.1:" + std::to_string(socks_port),
                      other_url()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto row = last_row();
  EXPECT_EQ(row.agent, "b6");
  EXPECT_EQ(row.kind, "socks");
  EXPECT_EQ(row.host, "other.test");
  server->detach_agent(attached);
  EXPECT_TRUE(refuses_connections(socks_port)) << "the agent's SOCKS listener should be closed";
}

// Issue 22 item 1: a connection on an agent's own listeners from an address not registered
// for that agent (one it made up on its link, as an IPv6 link-local address) is refused
// and counted: never decided as `anonymous` under the top-level policy, which allows
// upstream.test where agents.builder does not. The proxy's own listener, shared with host
// clients, still takes anyone.
TEST_F(AttachTest, AConnectionOnAnAgentsListenerFromAnotherAddressIsRefusedNeverAnonymous) {
  auto a = builder("b7");
  a.addr = ip::make_address("127.0.0.2");
  a.socks_listen = ip::tcp::endpoint(ip::make_address("127.0.0.1"), 0);
  const auto attached = server->attach_agent(a);
  ASSERT_TRUE(attached.listener_added);
  const auto http = "127.0.0.1:" + std::to_string(attached.listener->port());
  const auto socks = "127.0.0.1:" + std::to_string(attached.socks_listener->port());
  const auto curl = [&](const std::string& source, std::vector<std::string> how) {
    std::vector<std::string> argv{"curl", "-sS", "--max-time", "20", "--interface", source, "-o", "/dev/null",
                                  "-w", "%{http_code}"};
    argv.insert(argv.end(), how.begin(), how.end());
    argv.push_back(upstream_url());
    return run(argv);
  };
  auto r = curl("127.0.0.3", {"--proxy", "http://" + http});
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out, "200");
  r = curl("127.0.0.3", {"--socks5-hostname", socks});
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out, "200");
  EXPECT_EQ(server->counters().foreign_sources_refused, 2u);
  // The agent itself, from its address: decided with its profile.
  r = curl("127.0.0.2", {"--proxy", "http://" + http});
  EXPECT_EQ(r.out, "403") << r.err;
  // A host client on the proxy's own listener is anonymous, as before.
  r = curl("127.0.0.3", {"--proxy", "http://127.0.0.1:" + std::to_string(port)});
  EXPECT_EQ(r.out, "200") << r.err;
  std::size_t anonymous = 0, agent = 0;
  for (const auto& row : rows()) {
    anonymous += row.agent == "anonymous";
    agent += row.agent == "b7";
  }
  EXPECT_EQ(anonymous, 1u) << "only the host client's request on the proxy's own listener";
  EXPECT_EQ(agent, 1u);
  server->detach_agent(attached);
}

TEST_F(AttachTest, ASocksListenerThatCannotBindLeavesNothingBehind) {
  const auto before = server->local_endpoints().size();
  auto a = builder("b7");
  a.socks_listen = ip::tcp::endpoint(ip::make_address("127.0.0.1"), upstream.port());  // someone else's port
  EXPECT_THROW(server->attach_agent(a), std::runtime_error);
  EXPECT_EQ(server->local_endpoints().size(), before) << "the HTTP listener it added first is closed again";
  EXPECT_EQ(agents_row("b7"), "");
}

}  // namespace netbox::test

namespace netbox::test {
namespace {

// An agent known by its sockets (issue 24): a socket in the proxy's own network namespace
// could be reached by anyone on the host and pass as the agent, so it is never taken.
TEST_F(AttachTest, SocketsInTheProxysOwnNamespaceAreNeverAnAgentsIdentity) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  auto attachment = builder("impostor");
  attachment.sockets = proxy::AgentSockets{{fd}, {}, {}, -1, -1};
  try {
    server->attach_agent(attachment);
    ADD_FAILURE() << "a socket of the proxy's own namespace was taken as the agent's";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("not in a network namespace of the agent's own"));
  }
  EXPECT_EQ(agents_row("impostor"), "");
  ::close(fd);
}

}  // namespace
}  // namespace netbox::test
