// The local spool of a PostgreSQL audit store (docs/audit.md, "When the server is away"):
// while the server is stopped, a proxy whose in-memory queue is far too small for the outage
// answers every request, its rows going to an SQLite spool (0600); once the server is back
// they arrive exactly once and in order, and the spool is empty. A proxy killed with rows in
// its spool ships them at its next start, none twice. A full spool refuses (503), never drops.
#include "fleet_fixture.hpp"
#include "netbox/audit/verify.hpp"
#include "support/proxy_client.hpp"
#include "support/proxy_load.hpp"
#include "support/sqlite_query.hpp"

#include <sqlite3.h>
#include <sys/stat.h>

#include <csignal>
#include <memory>
#include <thread>

namespace netbox::test {
namespace {

using namespace std::chrono_literals;

// Request rows waiting in a spool file ("" when it cannot be read yet).
std::size_t spooled_rows(const std::filesystem::path& spool) {
  try {
    return std::stoul(query_column(spool, "SELECT COUNT(*) FROM items WHERE is_row = 1").at(0));
  } catch (const std::exception&) {
    return 0;
  }
}

bool wait_for(const std::function<bool()>& done, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(50ms);
  }
  return true;
}

class PostgresSpool : public PostgresFleet {
 protected:
  // A queue and a hold far smaller than the outage: without the spool this proxy refuses.
  RunningProxy start_spooling(const std::string& db, const std::string& id, std::vector<std::string> extra = {}) {
    extra.insert(extra.end(), {"--audit-queue", "64", "--audit-hold", "64", "--audit-spool", spool.string()});
    return start_proxy(db, id, extra);
  }

  void expect_every_answer_stored_once(const ProxyLoad& load, const std::string& database, const std::string& tag) {
    const auto answered = load.answered();
    const auto got = rows(database);  // fails on a path stored twice
    std::size_t lost = 0;
    for (const auto& [path, when] : answered) lost += got.contains(path) ? 0 : 1;
    EXPECT_EQ(lost, 0u) << "of " << answered.size() << " answered requests";
    for (const auto& [path, row] : got) EXPECT_TRUE(path.starts_with("/load/" + tag + "-")) << path;
    expect_in_order(got);
  }

  // A --audit-sync proxy answers `first` requests, then `while_away` more with the server
  // stopped (each answered once its row is durable in the spool), and is killed with rows
  // in its spool. The load, stopped, says what was answered.
  std::unique_ptr<ProxyLoad> spool_then_kill(const std::string& db, const std::string& id, const std::string& tag,
                                             unsigned clients, std::size_t first, std::size_t while_away) {
    auto p = start_spooling(db, id, {"--audit-sync"});
    auto load = std::make_unique<ProxyLoad>(p.port, url_base(), tag, clients);
    load->wait_until_answered(first, 60s);
    server.stop();
    load->wait_until_answered(load->answered_count() + while_away, 120s);
    load->stop();
    EXPECT_TRUE(wait_for([&] { return spooled_rows(spool) > 1; }, 30s)) << p.process->log();
    p.process->stop(SIGKILL);
    return load;
  }

  std::filesystem::path spool = dir.path() / "spool.db";
};

TEST_F(PostgresSpool, ServerAwayLongerThanTheQueueHoldsEveryRequestAnsweredEveryRowShippedOnceInOrder) {
  const auto db = server.create_database("spooled");
  auto p = start_spooling(db, "proxy-s");
  ProxyLoad load(p.port, url_base(), "s", 4);
  load.wait_until_answered(200, 60s);
  server.stop();
  // Far more requests than the 64 rows the proxy may keep in memory.
  const std::size_t before = load.answered_count();
  load.wait_until_answered(before + 2000, 120s);
  EXPECT_GE(load.answered_count(), before + 2000) << p.process->log();
  EXPECT_GT(spooled_rows(spool), 0u);
  struct stat st {};
  ASSERT_EQ(::stat(spool.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  server.start();
  EXPECT_TRUE(wait_for([&] { return spooled_rows(spool) == 0; }, 120s)) << p.process->log();
  load.wait_until_answered(load.answered_count() + 200, 60s);
  load.stop();
  EXPECT_TRUE(load.other_statuses().empty()) << "a request was refused: " << load.other_statuses().begin()->first;
  EXPECT_EQ(p.process->stop(SIGTERM), 0) << p.process->log();
  expect_every_answer_stored_once(load, "spooled", "s");
  EXPECT_EQ(spooled_rows(spool), 0u);
  EXPECT_EQ(server.query_column("spooled", "SELECT COUNT(*) FROM events WHERE kind = 'audit_spool_started'")[0], "1");
  EXPECT_NE(server.query_column("spooled", "SELECT COUNT(*) FROM events WHERE kind = 'audit_spool_shipped'")[0], "0");
  const auto chain = audit::verify_chain(db);
  EXPECT_TRUE(chain.ok()) << (chain.problems.empty() ? "" : chain.problems[0]);
}

TEST_F(PostgresSpool, AProxyKilledWithRowsInItsSpoolShipsThemAtItsNextStartNoneTwice) {
  const auto db = server.create_database("killed");
  // --audit-sync: a request is answered once its row is durable, in the spool while the
  // server is away, so every answered request must survive the kill.
  const auto load = spool_then_kill(db, "proxy-k", "k", 4, 100, 1000);
  const std::size_t left = spooled_rows(spool);
  EXPECT_GT(left, 0u);
  // `netbox audit` says the rows are in the spool, not in the store (which is away).
  const auto shown = run_netbox({"audit", "--db", db, "--audit-spool", spool.string()});
  EXPECT_NE(shown.err.find("holds " + std::to_string(left) + " request rows"), std::string::npos) << shown.err;
  server.start();
  auto again = start_spooling(db, "proxy-k", {"--audit-sync"});
  EXPECT_TRUE(wait_for([&] { return spooled_rows(spool) == 0; }, 120s)) << again.process->log();
  EXPECT_EQ(again.process->stop(SIGTERM), 0) << again.process->log();
  expect_every_answer_stored_once(*load, "killed", "k");
}

// A spool damaged while the proxy was down (a body that does not read back, as a disk error,
// a hand edit or another version could leave): the next start ships everything else, puts an
// `audit_spool_unreadable` event where the damaged item was, and keeps running; before,
// the writer thread threw at that item on every start and took the proxy down.
TEST_F(PostgresSpool, ADamagedSpoolItemIsShippedAsAnEventSayingSoAndTheRestArrives) {
  const auto db = server.create_database("damaged");
  const auto load = spool_then_kill(db, "proxy-d", "d", 2, 20, 100);
  const std::size_t left = spooled_rows(spool);
  {
    sqlite3* s = nullptr;
    ASSERT_EQ(sqlite3_open(spool.c_str(), &s), SQLITE_OK);
    char* err = nullptr;
    const int rc = sqlite3_exec(
        s, "UPDATE items SET body = '{\"t\":\"insert\",\"handle\":' WHERE seq = (SELECT MIN(seq) FROM items WHERE is_row = 1)",
        nullptr, nullptr, &err);
    EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
    EXPECT_EQ(sqlite3_changes(s), 1);
    sqlite3_close(s);
  }
  server.start();
  auto again = start_spooling(db, "proxy-d", {"--audit-sync"});
  EXPECT_TRUE(wait_for([&] { return spooled_rows(spool) == 0; }, 120s)) << again.process->log();
  EXPECT_EQ(proxy_get(again.port, url_base() + "/after").status, 200) << "the proxy is still up\n" << again.process->log();
  EXPECT_EQ(again.process->stop(SIGTERM), 0) << again.process->log();
  const auto events = server.query_column(
      "damaged", "SELECT message FROM events WHERE kind = 'audit_spool_unreadable'");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_NE(events[0].find("could not be read and is lost"), std::string::npos) << events[0];
  // Every answered request but the damaged one has its row, once.
  const auto answered = load->answered();
  const auto got = rows("damaged");
  std::size_t lost = 0;
  for (const auto& [path, when] : answered) lost += got.contains(path) ? 0 : 1;
  EXPECT_EQ(lost, 1u) << "of " << answered.size() << " answered requests (" << left << " were spooled)";
}

// What a spool shipped is known by the spool's own key, not by the proxy's id: a spool put
// back as it was before shipping (a commit whose answer was lost looks the same to it) and
// reopened under another --proxy-id (a renamed host) ships nothing twice.
TEST_F(PostgresSpool, ASpoolReopenedUnderAnotherProxyIdDoesNotShipTwiceWhatItShipped) {
  const auto db = server.create_database("renamed");
  const auto load = spool_then_kill(db, "proxy-r1", "r", 2, 20, 200);
  ASSERT_GT(spooled_rows(spool), 0u);
  const auto before_shipping = dir.path() / "spool-copy.db";
  {
    sqlite3* s = nullptr;
    ASSERT_EQ(sqlite3_open(spool.c_str(), &s), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(s, ("VACUUM INTO '" + before_shipping.string() + "'").c_str(), nullptr, nullptr, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(s);
    sqlite3_close(s);
  }
  ::chmod(before_shipping.c_str(), 0600);
  server.start();
  auto shipping = start_spooling(db, "proxy-r1", {"--audit-sync"});
  ASSERT_TRUE(wait_for([&] { return spooled_rows(spool) == 0; }, 120s)) << shipping.process->log();
  EXPECT_EQ(shipping.process->stop(SIGTERM), 0) << shipping.process->log();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(spool.string() + suffix);
  std::filesystem::rename(before_shipping, spool);
  ASSERT_GT(spooled_rows(spool), 0u) << "the spool as it was before it shipped";
  auto renamed = start_spooling(db, "proxy-r2", {"--audit-sync"});
  EXPECT_TRUE(wait_for([&] { return spooled_rows(spool) == 0; }, 60s)) << renamed.process->log();
  EXPECT_EQ(renamed.process->stop(SIGTERM), 0) << renamed.process->log();
  expect_every_answer_stored_once(*load, "renamed", "r");  // fails on a path stored twice
}

TEST_F(PostgresSpool, AFullSpoolRefusesWith503AndDropsNoRow) {
  const auto db = server.create_database("spoolfull");
  auto p = start_spooling(db, "proxy-f", {"--audit-spool-size", "200000"});
  ProxyLoad load(p.port, url_base(), "f", 4);
  load.wait_until_answered(100, 60s);
  server.stop();
  ASSERT_TRUE(wait_for([&] { return load.other_statuses().contains(503); }, 120s)) << p.process->log();
  {
    ProxyConnection conn(p.port, 10s);
    const auto r = conn.send("GET " + url_base() + "/full HTTP/1.1\r\nHost: upstream.test\r\n\r\n");
    EXPECT_EQ(r.status, 503);
    EXPECT_NE(r.body.find("audit"), std::string::npos) << r.body;
  }
  EXPECT_NE(p.process->log().find("is full"), std::string::npos) << p.process->log();
  load.stop();
  server.start();
  EXPECT_TRUE(wait_for([&] { return spooled_rows(spool) == 0; }, 120s)) << p.process->log();
  EXPECT_EQ(p.process->stop(SIGTERM), 0) << p.process->log();
  expect_every_answer_stored_once(load, "spoolfull", "f");
}

TEST_F(PostgresSpool, ASpoolForAnSqliteStoreOrInAWritableDirectoryIsRefusedAtTheFlag) {
  const auto policy = dir.write("p.json", R"({"version": 1})");
  auto r = run(proxy_command(policy, free_port(), dir.path() / "a.db", {"--audit-spool", spool.string()}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--audit-spool"), std::string::npos) << r.err;
  const auto open_dir = dir.path() / "open";
  std::filesystem::create_directory(open_dir);
  std::filesystem::permissions(open_dir, std::filesystem::perms::all);
  r = run(proxy_command(policy, free_port(), server.create_database("flag"),
                        {"--audit-spool", (open_dir / "s.db").string()}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--audit-spool"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace netbox::test
