// Audit flood (issue 12, item 8): one agent sent 20,000 denied requests with 7 KB paths in
// under two seconds and grew the database by about 90 MB/s. Now agent-chosen text is
// capped and repeated refusals fold into counted rows: the database grows by a bounded
// amount, and SUM(count) still equals the number of requests.
#include "durability_fixture.hpp"
#include "pipelined_flood.hpp"

#include "support/sqlite_query.hpp"

#include <sqlite3.h>

#include <csignal>

namespace netbox::test {
namespace {

constexpr std::size_t kRequests = 20000;
constexpr std::size_t kConnections = 4;

std::uintmax_t checkpointed_size(const std::filesystem::path& db) {
  sqlite3* h = nullptr;
  sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READWRITE, nullptr);
  sqlite3_exec(h, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr);
  sqlite3_close_v2(h);
  return std::filesystem::file_size(db);
}

TEST_F(DurabilityTest, TwentyThousandDeniedRequestsWith7KBPathsGrowTheStoreByABoundedAmount) {
  start_proxy();
  const std::string long_path = "/" + std::string(7 * 1024, 'a');
  std::vector<FloodResult> results(kConnections);
  std::vector<std::thread> floods;
  for (std::size_t c = 0; c < kConnections; ++c)
    floods.emplace_back([&, c] {
      results[c] = pipelined_flood(port, kRequests / kConnections, [&](std::size_t i) {
        return "GET http://denied.test" + long_path + std::to_string(i) +
               " HTTP/1.1\r\nHost: denied.test\r\nUser-Agent: " + std::string(2000, 'u') + "\r\n\r\n";
      });
    });
  for (auto& t : floods) t.join();
  std::size_t denied = 0;
  for (const auto& r : results) {
    EXPECT_EQ(r.answers, kRequests / kConnections) << r.error;
    denied += r.statuses.count(403) ? r.statuses.at(403) : 0;
  }
  EXPECT_EQ(denied, kRequests);
  ASSERT_EQ(proxy->stop(SIGTERM), 0) << proxy->log();

  EXPECT_EQ(query_column(db_path, "SELECT SUM(count) FROM requests WHERE host = 'denied.test'"),
            std::vector<std::string>{std::to_string(kRequests)})
      << "every request is accounted for";
  const auto rows = std::stoul(query_column(db_path, "SELECT COUNT(*) FROM requests")[0]);
  EXPECT_LT(rows, 1000u) << "repeated refusals were not folded";
  EXPECT_LE(std::stoul(query_column(db_path, "SELECT MAX(length(CAST(path AS BLOB))) FROM requests")[0]), 2100u)
      << "paths are capped";
  // Without caps and folding: 20,000 rows of 7 KB, about 140 MB.
  EXPECT_LT(checkpointed_size(db_path), 4u * 1024 * 1024);
}

}  // namespace
}  // namespace netbox::test
