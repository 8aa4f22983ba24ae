// One policy for many proxies (docs/fleet.md): `netbox policy push` publishes a checked
// policy to a real PostgreSQL server; two real `netbox proxy` processes started with
// `--policy postgresql://...` LISTEN and reload it; a bad version, inserted behind push's
// back, is refused by both, which keep the one they run; every reload is an event naming
// the version; the password shows nowhere. A row changed by SQL reaches both proxies by
// LISTEN/NOTIFY: the proxies poll nothing (a lost connection is retried, every second,
// but only to LISTEN again), so a reload seen at all is the notification's.
#include "support/background_process.hpp"
#include "support/curl.hpp"
#include "support/postgres_server.hpp"
#include "support/process.hpp"
#include "support/proxy_client.hpp"
#include "support/temp_dir.hpp"
#include "support/upstream_server.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
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
    unsigned short port = 0, admin = 0;
    std::unique_ptr<BackgroundProcess> process;
  };
  Proxy start_proxy(const std::string& id) {
    Proxy p;
    p.port = free_port();
    p.admin = free_port();
    p.process = std::make_unique<BackgroundProcess>(
        proxy_command(db, p.port, db,
                      {"--proxy-id", id, "--log-format", "json", "--admin", "127.0.0.1:" + std::to_string(p.admin),
                       "--admin-insecure",
                       // Its own spool: the default (/var/lib/netbox/audit-spool-ID.db) is
                       // one file for every test's proxy "a", which ctest runs side by side.
                       "--audit-spool", (dir.path() / ("spool-" + id + ".db")).string()}),
        dir.path() / (id + ".log"));
    EXPECT_TRUE(wait_for_port(p.port)) << p.process->log();
    EXPECT_TRUE(wait_for_port(p.admin)) << p.process->log();
    return p;
  }
  // The digest netbox_policy_info names on the proxy's /metrics ("" if none).
  static std::string metric_digest(const Proxy& p) {
    const auto body = body_of(curl_with_status({"http://127.0.0.1:" + std::to_string(p.admin) + "/metrics"}));
    const std::string label = "netbox_policy_info{digest=\"";
    const auto at = body.find(label);
    if (at == std::string::npos) return "";
    const auto from = at + label.size();
    return body.substr(from, body.find('"', from) - from);
  }
  std::string loaded_by(const std::string& kind, const std::string& version_like) {
    return scalar("SELECT COUNT(DISTINCT proxy_id) FROM events WHERE kind = '" + kind + "' AND message LIKE '" +
                  version_like + "'");
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

// The issue's test: a policy row changed in the database reloads two proxies, and a bad
// one is refused by both. Nothing here goes through `netbox policy push` or SIGHUP: the
// rows are written with SQL, and the only thing that tells a proxy is the trigger's
// NOTIFY on the channel it LISTENs on. The 20 s bound is a wait, not a measurement (the
// issue asks for 2 s; speed belongs to benchmarks); with LISTEN broken nothing ever
// reloads, which is what this test tells apart.
TEST_F(PolicySource, ARowChangedBySqlReachesBothProxiesByNotifyAndABadOneIsRefusedByBoth) {
  ASSERT_EQ(push(policy_allowing("v1.json", "upstream.test")).exit_code, 0);
  Proxy a = start_proxy("a"), b = start_proxy("b");
  const std::string v1_digest = scalar("SELECT digest FROM policies WHERE version = 1");
  ASSERT_EQ(metric_digest(a), v1_digest) << a.process->log();
  ASSERT_EQ(metric_digest(b), v1_digest) << b.process->log();
  EXPECT_EQ(status(a), 200) << a.process->log();

  // Version 2, inserted by hand: it no longer allows upstream.test. The digest column is
  // what the operator wrote; the proxies name the digest of the text they loaded.
  const auto v2_text = std::string(R"({"version": 1, "allow": ["elsewhere.test"], "ports": [)") +
                       std::to_string(upstream.port()) + "]}";
  server.query("fleet", "INSERT INTO policies (published, digest, body) VALUES ('now', 'by-hand', '" + v2_text + "')");
  const auto reloaded = [&](const Proxy& p) { return metric_digest(p) != v1_digest && !metric_digest(p).empty(); };
  const bool both = eventually(
      [&] { return loaded_by("policy_load", "reloaded policy %version 2") == "2" && reloaded(a) && reloaded(b); });
  ASSERT_TRUE(both) << "both proxies should have reloaded version 2 on the notification\n"
                    << scalar("SELECT string_agg(proxy_id || ': ' || kind || ': ' || message, E'\\n') FROM events")
                    << a.process->log() << b.process->log();
  const std::string v2_digest = metric_digest(a);
  EXPECT_EQ(metric_digest(b), v2_digest) << "the same text, the same digest";
  EXPECT_EQ(scalar("SELECT COUNT(DISTINCT proxy_id) FROM events WHERE kind = 'policy_load' AND message LIKE "
                   "'reloaded policy %version 2' AND detail LIKE '%" + v2_digest + "%'"),
            "2")
      << "each proxy's event names the digest its metric shows";
  EXPECT_EQ(status(a), 403);
  EXPECT_EQ(status(b), 403);

  // Version 3 fails `policy check`: both refuse it, say so, and keep version 2.
  server.query("fleet", "INSERT INTO policies (published, digest, body) VALUES ('now', 'x', "
                        "'{\"version\": 1, \"allow\": [\"*.*.bad\"]}')");
  const bool refused = eventually([&] { return loaded_by("policy_reload_failed", "%version 3%") == "2"; });
  ASSERT_TRUE(refused) << scalar("SELECT string_agg(proxy_id || ': ' || kind || ': ' || message, E'\\n') FROM events")
                       << a.process->log() << b.process->log();
  EXPECT_EQ(metric_digest(a), v2_digest);
  EXPECT_EQ(metric_digest(b), v2_digest);
  EXPECT_EQ(loaded_by("policy_load", "%version 3"), "0");
  EXPECT_EQ(status(a), 403) << "version 2 still decides";
  EXPECT_EQ(status(b), 403) << "version 2 still decides";

  EXPECT_EQ(a.process->stop(SIGTERM), 0) << a.process->log();
  EXPECT_EQ(b.process->stop(SIGTERM), 0) << b.process->log();
}

// A notification is not repeated: a proxy that cannot read the table when it is told of a
// change (here the table is renamed away while the LISTEN connection stands) asks again
// every second until it can, instead of staying on the old version for good.
TEST_F(PolicySource, AChangeThatCannotBeReadWhenNotifiedIsReadOnceTheTableIsBack) {
  ASSERT_EQ(push(policy_allowing("v1.json", "upstream.test")).exit_code, 0);
  Proxy a = start_proxy("a");
  const std::string v1_digest = scalar("SELECT digest FROM policies WHERE version = 1");
  ASSERT_TRUE(eventually([&] { return metric_digest(a) == v1_digest; })) << a.process->log();
  ASSERT_EQ(status(a), 200) << a.process->log();

  server.query("fleet", "ALTER TABLE policies RENAME TO policies_away");
  const auto v2_text = std::string(R"({"version": 1, "allow": ["elsewhere.test"], "ports": [)") +
                       std::to_string(upstream.port()) + "]}";
  server.query("fleet", "INSERT INTO policies_away (published, digest, body) VALUES ('now', 'by-hand', '" + v2_text +
                            "')");  // the trigger follows the table: the proxy is told, and cannot read
  std::this_thread::sleep_for(1500ms);  // long enough for the notification and a first retry to fail
  EXPECT_EQ(status(a), 200) << "nothing readable was published yet";
  server.query("fleet", "ALTER TABLE policies_away RENAME TO policies");
  EXPECT_TRUE(eventually([&] { return status(a) == 403; }))
      << "the proxy should read version 2 once the table is back, with no further notification\n"
      << a.process->log();
  EXPECT_NE(metric_digest(a), v1_digest);
  EXPECT_EQ(a.process->stop(SIGTERM), 0) << a.process->log();
}

// docs/fleet.md, "Privileges": the proxies' role, which writes the audit (and owns its
// tables: it makes a partition a day), must not be able to publish the fleet's policy, or
// one compromised proxy host would decide for every proxy. With `policies` (and its
// trigger's function) handed to a publisher role and only SELECT granted back, the proxy
// still loads and reloads the policy and writes its rows; a push with its role is refused
// by the server; the publisher's push reaches it.
TEST_F(PolicySource, AProxyRoleThatMayOnlyReadThePoliciesRunsAndCannotPublish) {
  const std::string port = std::to_string(server.port());
  server.query("fleet", "CREATE ROLE netbox_proxy LOGIN PASSWORD 'proxy-pw'");
  server.query("fleet", "CREATE ROLE netbox_publisher LOGIN PASSWORD 'publisher-pw'");
  server.query("fleet", "GRANT CREATE, USAGE ON SCHEMA public TO netbox_proxy");
  {
    std::ofstream pass(std::getenv("PGPASSFILE"), std::ios::app);
    pass << "*:*:*:netbox_proxy:proxy-pw\n*:*:*:netbox_publisher:publisher-pw\n";
  }
  const auto as_proxy = "postgresql://netbox_proxy@127.0.0.1:" + port + "/fleet";
  const auto as_publisher = "postgresql://netbox_publisher@127.0.0.1:" + port + "/fleet";
  // The first push, with the proxies' role, makes the schema (as a first proxy would).
  auto r = run_netbox({"policy", "push", policy_allowing("v1.json", "upstream.test").string(), "--policy", as_proxy});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // The operator's step (docs/fleet.md): the policies go to the publisher.
  server.query("fleet", "ALTER TABLE policies OWNER TO netbox_publisher");
  server.query("fleet", "ALTER FUNCTION netbox_policy_changed() OWNER TO netbox_publisher");
  server.query("fleet", "GRANT SELECT ON policies TO netbox_proxy");
  server.query("fleet", "GRANT USAGE ON SCHEMA public TO netbox_publisher");
  server.query("fleet", "GRANT SELECT ON ALL TABLES IN SCHEMA public TO netbox_publisher");

  Proxy p;
  p.port = free_port();
  p.admin = free_port();
  p.process = std::make_unique<BackgroundProcess>(
      proxy_command(as_proxy, p.port, as_proxy,
                    {"--proxy-id", "ro", "--audit-spool", (dir.path() / "spool-ro.db").string()}),
      dir.path() / "ro.log");
  ASSERT_TRUE(wait_for_port(p.port)) << p.process->log();
  EXPECT_EQ(status(p), 200) << p.process->log();

  r = run_netbox({"policy", "push", policy_allowing("v2.json", "elsewhere.test").string(), "--policy", as_proxy});
  EXPECT_NE(r.exit_code, 0) << "the proxies' role published a policy\n" << r.out << r.err;
  EXPECT_NE(r.err.find("permission denied"), std::string::npos) << r.err;
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM policies"), "1");

  r = run_netbox({"policy", "push", policy_allowing("v2.json", "elsewhere.test").string(), "--policy", as_publisher});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(eventually([&] { return status(p) == 403; })) << "the proxy reloads what the publisher pushed\n"
                                                             << p.process->log();
  EXPECT_EQ(p.process->stop(SIGTERM), 0) << p.process->log();
  // Its rows arrived, under either version: what it allowed, then what it refused.
  EXPECT_EQ(scalar("SELECT string_agg(DISTINCT decision, ',' ORDER BY decision) FROM requests WHERE proxy_id = 'ro' "
                   "AND host = 'upstream.test'"),
            "allow,deny")
      << p.process->log();
}

// Any role that may connect can NOTIFY the proxies' channel: a flood of notifications is
// read as one change a second, not one query of the policies per notification per proxy.
TEST_F(PolicySource, AFloodOfNotificationsIsReadAtMostOnceASecond) {
  ASSERT_EQ(push(policy_allowing("v1.json", "upstream.test")).exit_code, 0);
  Proxy a = start_proxy("a");
  ASSERT_EQ(status(a), 200) << a.process->log();
  // Reads of the table, as the server counts them (a proxy reads with a connection of its
  // own, whose counts the server has once it closes).
  const auto reads = [&] {
    std::this_thread::sleep_for(1500ms);
    return std::stoll(scalar("SELECT COALESCE(seq_scan, 0) + COALESCE(idx_scan, 0) FROM pg_stat_user_tables WHERE "
                             "relname = 'policies'"));
  };
  const auto before = reads();
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) {  // each its own transaction: delivered one by one
    server.query("fleet", "SELECT pg_notify('netbox_policy', 'flood " + std::to_string(i) + "')");
    std::this_thread::sleep_for(20ms);
  }
  const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const auto after = reads();
  EXPECT_LE(after - before, static_cast<long long>(seconds) + 3)
      << "reads of the policies during " << seconds << " s of notifications";
  EXPECT_GE(after - before, 1) << "a notification must still be read";
  EXPECT_EQ(status(a), 200) << a.process->log();
  EXPECT_EQ(a.process->stop(SIGTERM), 0) << a.process->log();
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
