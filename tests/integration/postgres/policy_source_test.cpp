// One policy for many proxies (docs/fleet.md): `netbox policy push` publishes a checked
// policy to a real PostgreSQL server; two real `netbox proxy` processes started with
// `--policy postgresql://...` LISTEN and reload it; a bad version, inserted behind push's
// back, is refused by both, which keep the one they run; every reload is an event naming
// the version; the password shows nowhere.
#include "support/background_process.hpp"
#include "support/postgres_server.hpp"
#include "support/process.hpp"
#include "support/proxy_client.hpp"
#include "support/temp_dir.hpp"
#include "support/upstream_server.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <functional>
#include <memory>
#include <thread>

namespace netbox::test {
namespace {

using namespace std::chrono_literals;

class PolicySource : public ::testing::Test {
 protected:
  // A policy allowing `host` (resolved to the loopback upstream) on the upstream's port.
  std::filesystem::path policy_allowing(const std::string& name, const std::string& host) {
    return dir.write(name, R"({"version": 1, "allow": [")" + host + R"("], "ports": [)" +
                               std::to_string(upstream.port()) + R"(], "internal": {"allow": ["127.0.0.1/32"]},
      "resolve": {")" + host + R"(": ["127.0.0.1"]}})");
  }

  RunResult push(const std::filesystem::path& file) {
    return run_netbox({"policy", "push", file.string(), "--policy", db});
  }

  struct Proxy {
    unsigned short port = 0;
    std::unique_ptr<BackgroundProcess> process;
  };
  Proxy start_proxy(const std::string& id) {
    Proxy p;
    p.port = free_port();
    p.process = std::make_unique<BackgroundProcess>(
        proxy_command(db, p.port, db, {"--proxy-id", id, "--log-format", "json"}), dir.path() / (id + ".log"));
    EXPECT_TRUE(wait_for_port(p.port)) << p.process->log();
    return p;
  }

  int status(const Proxy& p) {
    return proxy_get(p.port, "http://upstream.test:" + std::to_string(upstream.port()) + "/").status;
  }

  std::string scalar(const std::string& sql) { return server.query_column("fleet", sql)[0]; }

  // Polls (every 50 ms, at most 20 s: a bound, not a measurement) until `done`.
  static bool eventually(const std::function<bool()>& done) {
    for (int i = 0; i < 400; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(50ms);
    }
    return done();
  }

  PostgresServer server;
  TempDir dir;
  UpstreamServer upstream;
  std::string db = server.create_database("fleet");
};

TEST_F(PolicySource, APushedPolicyReloadsTwoProxiesAndABadOneIsRefusedByBoth) {
  auto r = push(policy_allowing("v1.json", "upstream.test"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("as version 1 of " + db), std::string::npos) << r.out;
  Proxy a = start_proxy("a"), b = start_proxy("b");
  EXPECT_EQ(status(a), 200);
  EXPECT_EQ(status(b), 200);

  // Version 2 no longer allows upstream.test: both proxies refuse it, without a restart.
  r = push(policy_allowing("v2.json", "elsewhere.test"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(eventually([&] { return status(a) == 403 && status(b) == 403; }))
      << a.process->log() << b.process->log();
  // Each proxy records which version it runs: an event naming it, with the digest.
  const std::string v2_digest = scalar("SELECT digest FROM policies WHERE version = 2");
  EXPECT_TRUE(eventually([&] {
    return scalar("SELECT COUNT(DISTINCT proxy_id) FROM events WHERE kind = 'policy_load' AND message LIKE "
                  "'reloaded policy %version 2' AND detail LIKE '%" + v2_digest + "%'") == "2";
  })) << scalar("SELECT string_agg(proxy_id || ': ' || message, E'\\n') FROM events");

  // A version that fails `policy check`, inserted with SQL (push would refuse it, below):
  // both proxies refuse it and keep version 2.
  server.query("fleet", "INSERT INTO policies (published, digest, body) VALUES ('now', 'x', "
                        "'{\"version\": 1, \"allow\": [\"*.*.bad\"]}')");
  EXPECT_TRUE(eventually([&] {
    return scalar("SELECT COUNT(DISTINCT proxy_id) FROM events WHERE kind = 'policy_reload_failed' AND message LIKE "
                  "'%version 3%'") == "2";
  })) << scalar("SELECT string_agg(proxy_id || ': ' || message, E'\\n') FROM events");
  EXPECT_EQ(status(a), 403) << "version 2 still decides";
  EXPECT_EQ(status(b), 403) << "version 2 still decides";
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM events WHERE kind = 'policy_load' AND message LIKE '%version 3'"), "0");

  // push checks before inserting: the same bad policy from a file is not published.
  const auto bad = dir.write("bad.json", R"({"version": 1, "allow": ["*.*.bad"]})");
  r = push(bad);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("bad.json"), std::string::npos) << r.err;
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM policies"), "3");

  // And a good version after the bad one is taken again.
  ASSERT_EQ(push(policy_allowing("v4.json", "upstream.test")).exit_code, 0);
  EXPECT_TRUE(eventually([&] { return status(a) == 200 && status(b) == 200; }))
      << a.process->log() << b.process->log();

  EXPECT_EQ(a.process->stop(SIGTERM), 0) << a.process->log();
  EXPECT_EQ(b.process->stop(SIGTERM), 0) << b.process->log();
  for (const auto* p : {&a, &b}) EXPECT_EQ(p->process->log().find(server.password()), std::string::npos);
}

TEST_F(PolicySource, APasswordInThePolicyAddressIsRefusedAndNotRepeated) {
  const auto with_password = "postgresql://" + server.user() + ":" + server.password() + "@127.0.0.1:" +
                             std::to_string(server.port()) + "/fleet";
  const auto r = run_netbox({"policy", "push", policy_allowing("p.json", "upstream.test").string(), "--policy",
                             with_password});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("PGPASSFILE"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(server.password()), std::string::npos) << r.err;
  const auto proxy = run_netbox({"proxy", "--policy", with_password, "--listen", "127.0.0.1:0", "--audit-db",
                                 (dir.path() / "audit.db").string()});
  EXPECT_EQ(proxy.exit_code, 2) << proxy.err;
  EXPECT_NE(proxy.err.find("--policy"), std::string::npos) << proxy.err;
  EXPECT_EQ(proxy.err.find(server.password()), std::string::npos) << proxy.err;
}

TEST_F(PolicySource, AProxyWithNothingPublishedRefusesToStart) {
  ASSERT_EQ(push(policy_allowing("v1.json", "upstream.test")).exit_code, 0);  // creates the schema
  server.query("fleet", "DELETE FROM policies");
  const auto r = run_netbox({"proxy", "--policy", db, "--listen", "127.0.0.1:0", "--audit-db",
                             (dir.path() / "audit.db").string()},
                            std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("netbox policy push"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace netbox::test
