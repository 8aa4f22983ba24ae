// The agent's link to its embedded proxy is a set of sockets made inside its own network
// namespace (issue 24): no device leads out of it, it reaches no host address and no other
// agent, and every connection the proxy accepts there is that agent's. Attacked from
// inside real launches.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>

namespace netbox::launch_test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

std::string db_flag(const test::TempDir& dir, const std::string& name = "a.db") {
  return (dir.path() / name).string();
}

TEST(LaunchSocketLink, TheAgentHasNoInterfaceLeadingOutOfItsNamespace) {
  NETBOX_REQUIRE_ROOT();
  test::TempDir dir;
  auto r = test::run_netbox({"launch", "--audit-db", db_flag(dir), "--", kSh, "-c",
                             "ls /sys/class/net; echo --; cat /proc/net/dev | tail -n +3 | cut -d: -f1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "lo\n--\n    lo\n");
}

TEST(LaunchSocketLink, TheAgentReachesNoHostAddress) {
  NETBOX_REQUIRE_ROOT();
  HttpServer host_server("0.0.0.0");  // on every host address
  const auto addresses = host_addresses();
  if (addresses.empty()) GTEST_SKIP() << "the host has no address but loopback";
  test::TempDir dir;
  // Raw TCP and curl, around the proxy and through it, to every host address on the
  // server's port, and the host's loopback (which is the agent's own there).
  std::string script = "for a in 127.0.0.1";
  for (const auto& a : addresses) script += " " + a;
  const std::string port = std::to_string(host_server.port());
  script += "; do " + std::string(kCurl) + " -s -m 5 -o /dev/null -w '%{http_code}' --noproxy '*' -g http://$(echo $a | sed 's/.*:.*/[&]/'):" +
            port + "/ | grep -q 200 && echo reached-direct $a; " + kCurl + " -s -m 5 -o /dev/null -g http://$(echo $a | sed 's/.*:.*/[&]/'):" +
            port + "/ -w '%{http_code}' | grep -q 200 && echo reached-proxied $a; done; echo finished";
  // A permissive policy: the proxy's own rule (every host address is netbox's) refuses.
  const auto policy = dir.path() / "policy.json";
  std::ofstream(policy) << R"({"version": 1, "allow": ["0.0.0.0/0", "::/0"], "internal": {"allow": ["0.0.0.0/0", "::/0"]}})";
  auto r = test::run_netbox({"launch", "--policy", policy.string(), "--audit-db", db_flag(dir), "--", kSh, "-c", script});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("finished"));
  EXPECT_THAT(r.out, Not(HasSubstr("reached"))) << r.out;
  EXPECT_EQ(host_server.connections(), 0);
}

TEST(LaunchSocketLink, AnotherAgentsServicesAndProxyPortAreOutOfReach) {
  NETBOX_REQUIRE_ROOT();
  test::TempDir dir;
  fs::permissions(dir.path(), fs::perms(0755));
  HttpServer upstream;
  const auto policy = dir.path() / "policy.json";
  std::ofstream(policy) << policy_json(upstream.port());
  fs::permissions(policy, fs::perms(0644));
  // Agent A serves on 127.0.0.1:8765 of its namespace and stays up.
  Background a({test::netbox_binary().string(), "launch", "--name", "agent-a", "--policy", policy.string(),
                "--audit-db", db_flag(dir, "a.db"), "--", kPython, "-c",
                "import http.server,sys\n"
                "s=http.server.HTTPServer(('127.0.0.1',8765),http.server.SimpleHTTPRequestHandler)\n"
                "print('serving',flush=True)\ns.serve_forever()"},
               dir.path(), "a");
  ASSERT_TRUE(eventually([&] { return a.out().find("serving") != std::string::npos; })) << a.err();
  // Agent B: A's port is nothing in B's namespace, and B's own proxy port is B's proxy.
  auto b = test::run_netbox({"launch", "--name", "agent-b", "--policy", policy.string(), "--audit-db",
                             db_flag(dir, "b.db"), "--", kSh, "-c",
                             std::string(kCurl) + " -s -m 5 --noproxy '*' http://127.0.0.1:8765/ && echo reached-a; " +
                                 kCurl + " -s -m 10 http://allowed.test:" + std::to_string(upstream.port()) + "/b; echo"});
  ::kill(a.pid(), SIGTERM);
  a.wait();
  EXPECT_EQ(b.exit_code, 0) << b.err;
  EXPECT_THAT(b.out, Not(HasSubstr("reached-a")));
  EXPECT_THAT(b.out, HasSubstr(HttpServer::kBody));
  // B's request is B's row in B's store; A's proxy never saw it.
  EXPECT_EQ(query(db_flag(dir, "b.db"), "SELECT agent FROM requests WHERE path = '/b'"),
            (std::vector<std::vector<std::string>>{{"agent-b"}}));
  EXPECT_TRUE(query(db_flag(dir, "a.db"), "SELECT agent FROM requests").empty());
}

TEST(LaunchSocketLink, ToolsWorkAndTheAgentsOwnLoopbackServerToo) {
  NETBOX_REQUIRE_ROOT();
  test::TempDir dir;
  fs::permissions(dir.path(), fs::perms(0755));
  HttpServer upstream;
  const auto policy = dir.path() / "policy.json";
  std::ofstream(policy) << policy_json(upstream.port());
  fs::permissions(policy, fs::perms(0644));
  const std::string port = std::to_string(upstream.port());
  const std::string raw = "import socket, sys\n"
                          "s = socket.create_connection(('allowed.test', int(sys.argv[1])), timeout=10)\n"
                          "s.sendall(b'GET /raw HTTP/1.0\\r\\nHost: allowed.test\\r\\n\\r\\n')\n"
                          "print('raw=' + s.recv(4096).decode().split('\\r\\n')[0])\n";
  const std::string script =
      "getent ahosts allowed.test | grep -m1 STREAM | cut -d' ' -f1 | sed 's/^/getent=/'; "
      "getent hosts denied.test || echo getent-denied; " +
      std::string(kCurl) + " -s -m 10 http://allowed.test:" + port + "/vars; echo; " + kCurl +
      " -s -m 10 --noproxy '*' http://allowed.test:" + port + "/captured; echo; " + "timeout 20 " + kPython + " -u -c \"$1\" " + port +
      "; " + kPython + " -m http.server --bind 127.0.0.1 8080 >/dev/null 2>&1 & " + kCurl +
      " -s -m 5 --retry 20 --retry-delay 1 --retry-connrefused -o /dev/null -w 'local=%{http_code}\\n' --noproxy '*' http://127.0.0.1:8080/; kill $!";
  auto r = test::run_netbox(
      {"launch", "--policy", policy.string(), "--audit-db", db_flag(dir), "--", kSh, "-c", script, "sh", raw});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("getent=198.18."));
  EXPECT_THAT(r.out, HasSubstr("getent-denied"));
  EXPECT_THAT(r.out, HasSubstr("raw=HTTP/1.0 200"));
  EXPECT_THAT(r.out, HasSubstr("local=200"));
  auto rows = query(db_flag(dir), "SELECT kind, path FROM requests WHERE host = 'allowed.test' ORDER BY id");
  std::set<std::string> kinds;
  for (const auto& row : rows) kinds.insert(row[0] + " " + row[1]);
  EXPECT_TRUE(kinds.contains("http /vars")) << r.out;
  EXPECT_TRUE(kinds.contains("transparent /captured")) << r.out;
}


TEST(LaunchSocketLink, ManySequentialLaunchesLeaveNoNamespaceMountOrProcessBehind) {
  NETBOX_REQUIRE_ROOT();
  test::TempDir dir;
  const auto mounts_before = host_mounts();
  const auto namespaces_before = network_namespaces().size();
  for (int i = 0; i < 200; ++i) {
    auto r = test::run_netbox({"launch", "--quiet", "--audit-db", db_flag(dir), "--", "true"});
    ASSERT_EQ(r.exit_code, 0) << "launch " << i << ": " << r.err;
    // The first launch made the schema, one large transaction; the WAL's size below is
    // what the launches after it made it.
    if (i == 0) {
      ASSERT_EQ(test::run({"sqlite3", db_flag(dir), "PRAGMA wal_checkpoint(TRUNCATE)"}).exit_code, 0);
    }
  }
  EXPECT_EQ(host_mounts(), mounts_before);
  // The kernel takes each namespace down after its launch has returned: eventually gone.
  EXPECT_TRUE(eventually([&] { return network_namespaces().size() <= namespaces_before; }))
      << network_namespaces().size() << " network namespaces, " << namespaces_before << " before";
  EXPECT_EQ(query(db_flag(dir), "SELECT count(*) FROM agents WHERE ended IS NOT NULL")[0][0], "200");
  // Each launch's open re-reads the store's whole WAL: a launch's close empties it past 64
  // pages (EmbeddedProxy), where it grew to SQLite's 1,000 (4 MB), and further (7.5 MB here:
  // a launch's few commits rarely let SQLite restart the log) before.
  const auto wal = fs::file_size(db_flag(dir) + "-wal");
  EXPECT_LE(wal, 128u * (4096 + 24) + 32) << "the WAL grew to " << wal << " bytes";
  EXPECT_EQ(query(db_flag(dir), "PRAGMA integrity_check")[0][0], "ok");
}

TEST(LaunchSocketLink, FiftyLaunchesAtOnceEachHaveTheirOwnIdentityAndRows) {
  NETBOX_REQUIRE_ROOT();
  test::TempDir dir;
  fs::permissions(dir.path(), fs::perms(0755));
  HttpServer upstream;
  const auto policy = dir.path() / "policy.json";
  std::ofstream(policy) << policy_json(upstream.port());
  fs::permissions(policy, fs::perms(0644));
  constexpr int kLaunches = 50;
  std::vector<std::unique_ptr<Background>> launches;
  for (int i = 0; i < kLaunches; ++i)
    launches.push_back(std::make_unique<Background>(
        std::vector<std::string>{test::netbox_binary().string(), "launch", "--quiet", "--name", "agent-" + std::to_string(i),
                                 "--policy", policy.string(), "--audit-db", db_flag(dir, std::to_string(i) + ".db"), "--",
                                 kCurl, "-s", "-m", "60",
                                 "http://allowed.test:" + std::to_string(upstream.port()) + "/from-" + std::to_string(i)},
        dir.path(), "l" + std::to_string(i)));
  for (int i = 0; i < kLaunches; ++i) {
    EXPECT_EQ(launches[i]->wait(), 0) << i << ": " << launches[i]->err();
    EXPECT_EQ(launches[i]->out(), HttpServer::kBody) << i;
    const auto db = db_flag(dir, std::to_string(i) + ".db");
    EXPECT_EQ(query(db, "SELECT agent, path FROM requests"),
              (std::vector<std::vector<std::string>>{{"agent-" + std::to_string(i), "/from-" + std::to_string(i)}}));
    EXPECT_EQ(query(db, "SELECT name FROM agents WHERE exit_status = 0"),
              (std::vector<std::vector<std::string>>{{"agent-" + std::to_string(i)}}));
  }
}

}  // namespace
}  // namespace netbox::launch_test
