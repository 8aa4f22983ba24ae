// Retention on a PostgreSQL store: requests live in day partitions; pruning drops whole days
// older than the cutoff at once and deletes the rest row by row, keeping a row never
// completed until it is twice as old as the cutoff (its exchange may still be open).
#include "netbox/audit/prune.hpp"
#include "netbox/audit/writer.hpp"
#include "support/postgres_server.hpp"
#include "support/sample_records.hpp"

#include <gtest/gtest.h>

namespace netbox::test {
namespace {

using audit::Clock;
using namespace std::chrono_literals;

TEST(PostgresRetention, OldDaysArePrunedByPartitionAndOpenRowsStayAsLongAsOnSqlite) {
  PostgresServer server;
  const auto db = server.create_database("retention");
  const auto now = Clock::now();
  {
    audit::WriterOptions o;
    o.db_path = db;
    audit::Writer w(o);
    for (int days_ago : {10, 10, 9, 5, 0}) {
      auto r = audit::testing::request("old", "x.test", "allow", now - std::chrono::days(days_ago));
      w.complete(w.insert(r), audit::Completion{200, 1, 2, 3, {}, {}, {}, {}, {}});
    }
    // Never completed, 9 days old: older than a 7-day cutoff but not twice as old.
    w.insert(audit::testing::request("open", "x.test", "allow", now - std::chrono::days(9) - 1h));
    w.flush();
  }
  const auto partitions = [&] {
    return server.query_column("retention",
                               "SELECT COUNT(*) FROM pg_inherits WHERE inhparent = 'requests'::regclass")[0];
  };
  ASSERT_EQ(partitions(), "4") << "one partition per day written";
  const auto n = audit::prune(db, now - std::chrono::days(7), false);
  EXPECT_EQ(n.requests, 3u);
  EXPECT_EQ(server.query_column("retention", "SELECT string_agg(agent, ',' ORDER BY ts) FROM requests")[0],
            "open,old,old");
  EXPECT_EQ(partitions(), "3") << "the day 10 days back went as a whole; day 9 holds an open row";
  EXPECT_EQ(server.query_column("retention", "SELECT COUNT(*) FROM events WHERE kind = 'audit_prune'")[0], "1");
}

}  // namespace
}  // namespace netbox::test
