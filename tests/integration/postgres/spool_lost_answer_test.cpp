// A piece of the spool whose commit's answer is lost (tests/support/pg_cut_relay.hpp): the
// writer cannot tell whether it committed, asks the server's shipped-up-to marker, finds it
// did, and drops the piece from the spool instead of shipping it twice. The rows of that
// piece that are still open (a request whose answer had not ended when it was spooled) must
// then still be completed when their completions come: the writer keeps the ids the lost
// attempt gave them, and a completion spooled before the marker could be read carries that
// id, so that it completes its row even after a restart.
#include "netbox/audit/writer.hpp"
#include "support/pg_cut_relay.hpp"
#include "support/postgres_server.hpp"
#include "support/sample_records.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace netbox::test {
namespace {

using namespace std::chrono_literals;

bool eventually(const std::function<bool()>& done, std::chrono::seconds timeout = 60s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

// A writer on `database` through the relay, with a spool, flushing often and holding little
// while the server cannot be written.
audit::WriterOptions through_relay(PostgresServer& server, const PgCutRelay& relay, const TempDir& dir,
                                   const std::string& database) {
  audit::WriterOptions o;
  o.db_path = "postgresql://" + server.user() + "@127.0.0.1:" + std::to_string(relay.port()) + "/" + database;
  o.proxy_id = "proxy-l";
  o.spool_path = dir.path() / "spool.db";
  o.flush_interval = 5ms;
  o.queue_capacity = 8;
  o.held_while_failing = 2;
  return o;
}

TEST(PostgresSpoolLostAnswer, RowsOfAPieceThatCommittedUnbeknownAreStillCompleted) {
  PostgresServer server;
  server.create_database("lost");
  PgCutRelay relay(server.port());
  TempDir dir;
  audit::Writer writer(through_relay(server, relay, dir, "lost"));
  using audit::testing::request;
  writer.insert(request("a", "before.test", "allow"));
  writer.flush();
  ASSERT_EQ(writer.stats().write_errors, 0u);

  // The server goes away; requests that have not ended yet are spooled.
  server.stop();
  std::vector<audit::RowHandle> open;
  for (int i = 0; i < 20; ++i) {
    open.push_back(writer.insert(request("a", "open-" + std::to_string(i) + ".test", "allow")));
    ASSERT_NE(open.back(), audit::kNoRow) << i;
  }
  ASSERT_TRUE(eventually([&] { return writer.stats().spool_rows == 20; })) << writer.stats().spool_rows;

  // It comes back, and the answer to the first piece shipped is lost after its commit.
  relay.arm("audit_spool_shipped");
  server.start();
  ASSERT_TRUE(eventually([&] {
    writer.flush();
    return writer.stats().spool_rows == 0;
  }));
  ASSERT_EQ(relay.cuts(), 1) << "no piece's answer was lost: the test did not test";

  audit::Completion done;
  done.status = 201;
  for (const auto h : open) EXPECT_TRUE(writer.complete(h, done));
  writer.flush();
  EXPECT_EQ(writer.stats().unknown_completions, 0u);
  EXPECT_EQ(server.query_column("lost", "SELECT COUNT(*) FROM requests WHERE host LIKE 'open-%'")[0], "20")
      << "a spooled row was lost or shipped twice";
  EXPECT_EQ(server.query_column("lost", "SELECT COUNT(*) FROM requests WHERE host LIKE 'open-%' AND status = 201")[0],
            "20")
      << "rows of the piece whose answer was lost stayed open";
}

// The server looks away right after the lost answer, the rows are completed meanwhile (their
// completions spooled) and the proxy stops; the next writer on the spool finds the piece
// committed by the marker, and the completions, which carry the ids the lost attempt gave,
// complete those rows.
TEST(PostgresSpoolLostAnswer, CompletionsSpooledBeforeTheMarkerWasReadCompleteTheirRowsAfterARestart) {
  PostgresServer server;
  server.create_database("lost2");
  PgCutRelay relay(server.port());
  TempDir dir;
  auto o = through_relay(server, relay, dir, "lost2");
  o.shutdown_grace = 300ms;
  using audit::testing::request;
  {
    audit::Writer writer(o);
    writer.insert(request("a", "before.test", "allow"));
    writer.flush();
    ASSERT_EQ(writer.stats().write_errors, 0u);
    server.stop();
    std::vector<audit::RowHandle> open;
    for (int i = 0; i < 20; ++i) open.push_back(writer.insert(request("a", "open-" + std::to_string(i) + ".test", "allow")));
    ASSERT_TRUE(eventually([&] { return writer.stats().spool_rows == 20; })) << writer.stats().spool_rows;
    relay.arm("audit_spool_shipped");
    relay.hold_after_cut();
    server.start();
    ASSERT_TRUE(eventually([&] { return relay.cuts() == 1; })) << "no piece's answer was lost: the test did not test";
    audit::Completion done;
    done.status = 201;
    for (const auto h : open) EXPECT_TRUE(writer.complete(h, done));
    writer.flush();
  }  // stopped with the piece's outcome unknown and the completions spooled
  EXPECT_EQ(server.query_column("lost2", "SELECT COUNT(*) FROM requests WHERE host LIKE 'open-%' AND status IS NULL")[0],
            "20")
      << "the piece had to commit, its rows still open";
  relay.release();
  {
    audit::Writer writer(o);
    ASSERT_TRUE(eventually([&] {
      writer.flush();
      return writer.stats().spool_rows == 0 && writer.stats().spool_bytes == 0;
    }));
    writer.flush();
    EXPECT_EQ(writer.stats().unknown_completions, 0u);
  }
  EXPECT_EQ(server.query_column("lost2", "SELECT COUNT(*) FROM requests WHERE host LIKE 'open-%'")[0], "20")
      << "a spooled row was lost or shipped twice";
  EXPECT_EQ(server.query_column("lost2", "SELECT COUNT(*) FROM requests WHERE host LIKE 'open-%' AND status = 201")[0],
            "20")
      << "completions spooled before the marker was read did not complete their rows";
}

}  // namespace
}  // namespace netbox::test
