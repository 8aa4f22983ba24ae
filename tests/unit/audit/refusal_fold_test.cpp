// A flood of refusals costs a bounded number of rows, and every request is still counted:
// SUM(count) over the rows is the number of requests, in the views and `netbox audit` too.
#include "netbox/audit/query.hpp"
#include "netbox/audit/writer.hpp"
#include "support/sample_records.hpp"
#include "sqlite_probe.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

namespace netbox::audit {
namespace {

using testing::request;
using testing::SqliteProbe;

class RefusalFold : public ::testing::Test {
 protected:
  WriterOptions options() const {
    WriterOptions o;
    o.db_path = path;
    o.flush_interval = std::chrono::hours(1);
    return o;
  }
  static AuditRecord denial(const std::string& agent, const std::string& host, int i) {
    auto r = request(agent, host, "deny");
    r.status = 403;
    r.path = "/" + std::to_string(i) + std::string(7000, 'x');  // paths vary; the key does not
    return r;
  }
  test::TempDir dir;
  std::filesystem::path path = dir.path() / "audit.db";
};

TEST_F(RefusalFold, IdenticalRefusalsPastTheFirstFewBecomeOneCountedRow) {
  {
    Writer writer(options());
    for (int i = 0; i < 5000; ++i) ASSERT_TRUE(writer.insert_complete(denial("a", "evil.example", i)));
    EXPECT_GE(writer.stats().folded, 4000u);
  }
  SqliteProbe probe(path);
  EXPECT_EQ(probe.number("SELECT SUM(count) FROM requests"), 5000);
  // The first 8 have rows of their own; the rest of each one-second window share one.
  EXPECT_LE(probe.number("SELECT COUNT(*) FROM requests"), 8 * 10 + 10);
  EXPECT_EQ(probe.number("SELECT denied FROM denied_by_host WHERE host = 'evil.example'"), 5000);
  EXPECT_EQ(probe.number("SELECT denied FROM agent_activity WHERE agent = 'a'"), 5000);
  EXPECT_EQ(probe.number("SELECT SUM(denied) FROM hourly_traffic"), 5000);
  Filter f;
  f.limit = 0;
  std::uint64_t total = 0;
  for (const auto& r : query_requests(path, f)) total += r.count;
  EXPECT_EQ(total, 5000u);
  const auto summary = summarize(path, f);
  ASSERT_EQ(summary.size(), 1u);
  EXPECT_EQ(summary[0].denied, 5000u);
  EXPECT_NE(format_requests(query_requests(path, f), "table").find("COUNT"), std::string::npos);
}

TEST_F(RefusalFold, RefusalsWithEverChangingDestinationsFoldPerAgentPastItsRowsASecond) {
  {
    Writer writer(options());
    for (int i = 0; i < 5000; ++i)
      ASSERT_TRUE(writer.insert_complete(denial("a", "h" + std::to_string(i) + ".example", i)));
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(writer.insert_complete(denial("b", "other.example", i)));
  }
  SqliteProbe probe(path);
  EXPECT_EQ(probe.number("SELECT SUM(count) FROM requests WHERE agent = 'a'"), 5000);
  EXPECT_LE(probe.number("SELECT COUNT(*) FROM requests WHERE agent = 'a'"), (256 + 1) * 10);
  EXPECT_GE(probe.number("SELECT MAX(count) FROM requests WHERE agent = 'a' AND host = '*'"), 2);
  EXPECT_EQ(probe.number("SELECT SUM(count) FROM requests WHERE agent = 'b'"), 10)
      << "another agent's refusals are its own";
}

TEST_F(RefusalFold, ForwardedRequestsAreNeverFolded) {
  {
    Writer writer(options());
    for (int i = 0; i < 100; ++i) ASSERT_NE(writer.insert(request("a", "ok.example", "allow")), kNoRow);
  }
  SqliteProbe probe(path);
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM requests"), 100);
  EXPECT_EQ(probe.number("SELECT MAX(count) FROM requests"), 1);
}

TEST_F(RefusalFold, OffKeepsARowPerRefusal) {
  auto o = options();
  o.fold_refusals = false;
  {
    Writer writer(o);
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(writer.insert_complete(denial("a", "evil.example", i)));
  }
  SqliteProbe probe(path);
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM requests"), 100);
}

// What was done about an agent (a guardian's kill, an operator's, a grant) is a row of its
// own with its particulars, however many events the agent caused in the same minute: an
// agent flooding events first must not have its kill or a grant's grantor stored as "*".
TEST_F(RefusalFold, ActionsAboutAnAgentAreNeverFoldedAfterItsFlood) {
  {
    Writer writer(options());
    for (int i = 0; i < 100; ++i) {
      Event e(Clock::now(), "exfiltration_attempt", "placeholder sent", R"({"agent":"a","host":"h)" + std::to_string(i) + R"("})");
      e.agent = "a";
      e.fold_key = "h" + std::to_string(i);
      ASSERT_TRUE(writer.event(std::move(e)));
    }
    Event kill(Clock::now(), "guardian_action", "killed agent a", R"({"agent":"a","rule":"guardian[0]","result":"killed"})");
    kill.agent = "a";
    kill.may_fold = false;
    ASSERT_TRUE(writer.event(std::move(kill)));
  }
  SqliteProbe probe(path);
  EXPECT_EQ(probe.number("SELECT SUM(count) FROM events WHERE kind = 'exfiltration_attempt'"), 100);
  EXPECT_LT(probe.number("SELECT COUNT(*) FROM events WHERE kind = 'exfiltration_attempt'"), 100) << "the flood folds";
  EXPECT_EQ(probe.number("SELECT COUNT(*) FROM events WHERE kind = 'guardian_action' AND count = 1 AND "
                         "json_extract(detail, '$.rule') = 'guardian[0]' AND json_extract(detail, '$.result') = 'killed'"),
            1);
}

}  // namespace
}  // namespace netbox::audit
