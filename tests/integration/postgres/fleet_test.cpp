// Proxies writing one PostgreSQL audit store (docs/audit.md, "PostgreSQL"): a real server
// from Debian's package, real `netbox proxy` processes, real clients. Every forwarded
// request has exactly one row, whatever happens to the proxies or the server, and the
// database password shows up nowhere.
#include "netbox/audit/verify.hpp"
#include "fleet_fixture.hpp"
#include "support/background_process.hpp"
#include "support/postgres_server.hpp"
#include "support/process.hpp"
#include "support/proxy_client.hpp"
#include "support/proxy_load.hpp"
#include "support/temp_dir.hpp"
#include "support/upstream_server.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

namespace netbox::test {
namespace {

using namespace std::chrono_literals;

TEST_F(PostgresFleet, TwoProxiesWriteOneDatabaseEveryRequestOnceWithIdsUniqueAcrossThem) {
  const auto db = server.create_database("two");
  // Each proxy signs its batches with a key of its own (the audit chain, docs/audit.md).
  std::map<std::string, std::filesystem::path> pub;
  for (const std::string id : {"a", "b"}) {
    const auto key = dir.path() / (id + ".key");
    pub[id] = dir.path() / (id + ".pub");
    ASSERT_EQ(run({"openssl", "genpkey", "-algorithm", "ed25519", "-out", key.string()}).exit_code, 0);
    ASSERT_EQ(run({"openssl", "pkey", "-in", key.string(), "-pubout", "-out", pub[id].string()}).exit_code, 0);
  }
  auto a = start_proxy(db, "proxy-a", {"--audit-signing-key", (dir.path() / "a.key").string()});
  auto b = start_proxy(db, "proxy-b", {"--audit-signing-key", (dir.path() / "b.key").string()});
  {
    ProxyLoad la(a.port, url_base(), "a", 3, 400);
    ProxyLoad lb(b.port, url_base(), "b", 3, 400);
    la.stop();
    lb.stop();
    EXPECT_EQ(la.answered_count(), 1200u);
    EXPECT_EQ(lb.answered_count(), 1200u);
  }
  EXPECT_EQ(a.process->stop(SIGTERM), 0) << a.process->log();  // drains its writer
  EXPECT_EQ(b.process->stop(SIGTERM), 0) << b.process->log();
  const auto got = rows("two");
  EXPECT_EQ(got.size(), 2400u);
  EXPECT_EQ(server.query_column("two", "SELECT COUNT(*) FROM requests")[0], "2400");
  EXPECT_EQ(server.query_column("two", "SELECT COUNT(DISTINCT id) FROM requests")[0], "2400");
  EXPECT_EQ(server.query_column("two", "SELECT string_agg(proxy_id || '=' || n, ',' ORDER BY proxy_id) FROM "
                                       "(SELECT proxy_id, COUNT(*) AS n FROM requests GROUP BY proxy_id) c")[0],
            "proxy-a=1200,proxy-b=1200");
  for (const auto& [path, row] : got) EXPECT_EQ(path.substr(6, 1), row.second.substr(6, 1)) << path;
  expect_in_order(got);
  // Each proxy's policy load is an event of its own, named by the proxy.
  EXPECT_EQ(server.query_column("two", "SELECT COUNT(DISTINCT proxy_id) FROM events WHERE kind = 'policy_load'")[0],
            "2");
  // Two chains, written concurrently, each whole; a's key vouches for a's batches only.
  const auto chain = audit::verify_chain(db);
  EXPECT_TRUE(chain.ok()) << (chain.problems.empty() ? "" : chain.problems[0]);
  EXPECT_EQ(chain.proxies.size(), 2u);
  const auto signed_by_a = audit::verify_chain(db, pub["a"]);
  ASSERT_FALSE(signed_by_a.ok());
  for (const auto& problem : signed_by_a.problems)
    EXPECT_NE(problem.find("proxy 'proxy-b'"), std::string::npos) << problem;
}

TEST_F(PostgresFleet, KillNineWithAuditSyncLosesNoRowOfAForwardedRequest) {
  const auto db = server.create_database("sync");
  auto p = start_proxy(db, "proxy-s", {"--audit-sync"});
  ProxyLoad load(p.port, url_base(), "s", 4);
  load.wait_until_answered(800, 60s);
  EXPECT_EQ(p.process->stop(SIGKILL), 128 + SIGKILL);
  load.stop();
  const auto answered = load.answered();
  ASSERT_GE(answered.size(), 800u) << p.process->log();
  const auto got = rows("sync");
  std::size_t lost = 0;
  for (const auto& [path, when] : answered) lost += got.contains(path) ? 0 : 1;
  EXPECT_EQ(lost, 0u) << "of " << answered.size() << " forwarded requests";
}

TEST_F(PostgresFleet, ServerStoppedFiveSecondsUnderLoadEveryRowArrivesOnceAndInOrder) {
  const auto db = server.create_database("outage");
  auto p = start_proxy(db, "proxy-o");
  ProxyLoad load(p.port, url_base(), "o", 4);
  load.wait_until_answered(500, 60s);
  server.stop();
  std::this_thread::sleep_for(5s);
  server.start();
  const std::size_t before = load.answered_count();
  load.wait_until_answered(before + 500, 60s);
  load.stop();
  EXPECT_EQ(p.process->stop(SIGTERM), 0) << p.process->log();
  const auto answered = load.answered();
  const auto got = rows("outage");
  std::size_t lost = 0;
  for (const auto& [path, when] : answered) lost += got.contains(path) ? 0 : 1;
  EXPECT_EQ(lost, 0u) << "of " << answered.size() << " answered requests\n" << p.process->log();
  for (const auto& [path, row] : got) EXPECT_TRUE(path.starts_with("/load/o-")) << path;
  expect_in_order(got);
  // The outage is on record once the server is back.
  EXPECT_EQ(server.query_column("outage", "SELECT COUNT(*) FROM events WHERE kind = 'audit_recovered'")[0], "1");
  // Batches retried across the outage (one may have committed with its answer lost) still
  // leave one unbroken chain whose latest links match the rows.
  const auto chain = audit::verify_chain(db);
  EXPECT_TRUE(chain.ok()) << (chain.problems.empty() ? "" : chain.problems[0]);
}

std::string file_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A proxy id is stored with every row and chain link: one that is not UTF-8 would make
// every PostgreSQL batch fail, one with control characters would drive the terminal of
// whoever reads `audit verify`. Refused at the flag, before anything is written.
TEST_F(PostgresFleet, AProxyIdThatIsNotPrintableUtf8IsRefusedAtTheFlag) {
  const auto db = server.create_database("badid");
  const auto policy = dir.write("policy.json", R"({"version": 1})");
  for (const std::string& id : {std::string("proxy-\xff\xfe"), std::string("proxy\x1b[2J"), std::string("a\nb")}) {
    auto argv = proxy_command(policy, free_port(), db, {"--proxy-id", id});
    argv.erase(argv.begin());  // proxy_command names the binary first; run_netbox adds it
    const auto r = run_netbox(argv, std::chrono::seconds(20));
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("--proxy-id"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(id), std::string::npos) << "the refusal shows the bytes escaped";
  }
  EXPECT_EQ(server.query_column("badid", "SELECT COUNT(*) FROM pg_tables WHERE tablename = 'requests'")[0], "0")
      << "refused before the store was opened";
}

// Bytes a hostile client chooses (a host, a path, a header value) that are not UTF-8 reach a
// PostgreSQL store as text it accepts: the rows are written and the writer goes on.
TEST_F(PostgresFleet, ClientBytesThatAreNotUtf8AreStoredAndTheWriterGoesOn) {
  const auto db = server.create_database("hostile");
  auto p = start_proxy(db, "proxy-h");
  const std::string bad = "\xff\xfe\xc3(";
  const auto denied = proxy_connect(p.port, "evil" + bad + ".test:443");
  EXPECT_GE(denied.status, 400);
  const auto hostile = proxy_get(p.port, url_base() + "/hostile" + bad, "X-Odd: " + bad + "\r\nUser-Agent: " + bad + "\r\n");
  EXPECT_NE(hostile.status, 0);
  EXPECT_EQ(proxy_get(p.port, url_base() + "/plain").status, 200);
  EXPECT_EQ(p.process->stop(SIGTERM), 0) << p.process->log();  // drains its writer
  EXPECT_EQ(server.query_column("hostile", "SELECT COUNT(*) FROM requests WHERE path = '/plain'")[0], "1")
      << p.process->log();
  EXPECT_EQ(server.query_column("hostile", "SELECT COUNT(*) FROM requests WHERE host LIKE 'evil%'")[0], "1")
      << p.process->log();
  EXPECT_EQ(server.query_column("hostile", "SELECT COUNT(*) FROM requests WHERE path LIKE '/hostile%'")[0], "1")
      << p.process->log();
  EXPECT_EQ(p.process->log().find("cannot write"), std::string::npos) << p.process->log();
  const auto chain = audit::verify_chain(db);
  EXPECT_TRUE(chain.ok()) << (chain.problems.empty() ? "" : chain.problems[0]);
}

TEST_F(PostgresFleet, ThePasswordIsInNoCommandLineLogOrRow) {
  const auto db = server.create_database("secret");
  // On the command line it is refused before anything connects, and the refusal does not repeat it.
  const auto with_password = "postgresql://" + server.user() + ":" + server.password() + "@127.0.0.1:" +
                             std::to_string(server.port()) + "/secret";
  for (const auto& address : {with_password, server.url("secret") + "?password=" + server.password()}) {
    const auto r = run_netbox({"proxy", "--policy", dir.write("p.json", R"({"version": 1})").string(), "--listen",
                               "127.0.0.1:0", "--audit-db", address});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("PGPASSFILE"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(server.password()), std::string::npos) << r.err;
    const auto audit = run_netbox({"audit", "--db", address});
    EXPECT_EQ(audit.exit_code, 2) << audit.err;
    EXPECT_EQ(audit.err.find(server.password()), std::string::npos) << audit.err;
  }
  // The client key's passphrase is a secret too.
  const auto key_secret = run_netbox({"proxy", "--policy", dir.write("p.json", R"({"version": 1})").string(), "--listen",
                                      "127.0.0.1:0", "--audit-db", server.url("secret") + "?sslpassword=S3CRET-key"});
  EXPECT_EQ(key_secret.exit_code, 2) << key_secret.err;
  EXPECT_NE(key_secret.err.find("holds a sslpassword"), std::string::npos) << key_secret.err;
  EXPECT_EQ(key_secret.err.find("S3CRET-key"), std::string::npos) << key_secret.err;
  // From PGPASSFILE it works, and shows nowhere: not in ps, not in the proxy's log, not in any row.
  auto p = start_proxy(db, "proxy-p");
  {
    ProxyLoad load(p.port, url_base(), "p", 2, 50);
    load.stop();
    EXPECT_EQ(load.answered_count(), 100u);
  }
  const auto ps = run({"ps", "-eo", "pid,args", "-ww"});
  EXPECT_NE(ps.out.find(db), std::string::npos) << "ps shows the proxy's address";
  EXPECT_EQ(ps.out.find(server.password()), std::string::npos);
  EXPECT_EQ(file_text("/proc/" + std::to_string(p.process->pid()) + "/cmdline").find(server.password()),
            std::string::npos);
  EXPECT_EQ(p.process->stop(SIGTERM), 0);
  EXPECT_EQ(p.process->log().find(server.password()), std::string::npos);
  for (const char* table : {"requests", "events", "agents"})
    EXPECT_EQ(server.query_column("secret", std::string("SELECT COUNT(*) FROM ") + table + " t WHERE t::text LIKE '%" +
                                                server.password() + "%'")[0],
              "0")
        << table;
  EXPECT_EQ(server.query_column("secret", "SELECT COUNT(*) FROM requests")[0], "100");
  const auto listed = run_netbox({"audit", "--db", db, "--limit", "0", "--format", "json"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(listed.out.find(server.password()), std::string::npos);
}

}  // namespace
}  // namespace netbox::test
