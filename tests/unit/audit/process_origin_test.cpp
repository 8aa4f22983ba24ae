// Who made a request (issue 27): the writer takes the answer of a process lookup still
// under way before it writes the row, waits a bounded time for it and writes "unknown"
// when it does not come; `--exe` (Filter::exe) selects rows by path or file name.
#include "netbox/audit/query.hpp"
#include "netbox/audit/writer.hpp"
#include "support/sample_records.hpp"
#include "sqlite_probe.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <future>
#include <thread>

namespace netbox::audit {
namespace {

using testing::request;
using testing::SqliteProbe;

WriterOptions options_for(const std::filesystem::path& path) {
  WriterOptions o;
  o.db_path = path;
  o.flush_interval = std::chrono::hours(1);  // rows reach the file by flush() only
  return o;
}

class AuditProcessOrigin : public ::testing::Test {
 protected:
  test::TempDir dir;
  std::filesystem::path path = dir.path() / "audit.db";
};

AuditRecord with_origin(std::string host, std::shared_future<ProcessOrigin> later) {
  AuditRecord r = request("agent-1", std::move(host), "allow");
  r.origin_later = std::move(later);
  return r;
}

TEST_F(AuditProcessOrigin, AnAnswerThatComesAfterTheInsertIsWrittenWithTheRow) {
  Writer writer(options_for(path));
  std::promise<ProcessOrigin> lookup;
  ASSERT_NE(writer.insert(with_origin("a.example", lookup.get_future().share())), kNoRow);
  // A refusal, final at once, folded or not: its row names the process too.
  std::promise<ProcessOrigin> refused;
  AuditRecord r = with_origin("b.example", refused.get_future().share());
  r.decision = "deny";
  ASSERT_TRUE(writer.insert_complete(r));
  lookup.set_value({7, "/usr/bin/curl", "curl -s http://a.example/"});
  refused.set_value({8, "/usr/bin/python3.11", "innocent-tool"});
  writer.flush();
  SqliteProbe probe(path);
  EXPECT_EQ(probe.text("SELECT client_pid || '|' || client_exe || '|' || client_argv FROM requests WHERE host = "
                       "'a.example'"),
            "7|/usr/bin/curl|curl -s http://a.example/");
  EXPECT_EQ(probe.text("SELECT client_pid || '|' || client_exe FROM requests WHERE host = 'b.example'"),
            "8|/usr/bin/python3.11");
}

TEST_F(AuditProcessOrigin, ALookupThatNeverAnswersIsUnknownAndHoldsNothingUp) {
  Writer writer(options_for(path));
  std::promise<ProcessOrigin> never;
  ASSERT_NE(writer.insert(with_origin("a.example", never.get_future().share())), kNoRow);
  std::promise<ProcessOrigin> dropped;
  ASSERT_NE(writer.insert(with_origin("b.example", dropped.get_future().share())), kNoRow);
  dropped = std::promise<ProcessOrigin>();  // abandoned unanswered: a broken promise
  ASSERT_NE(writer.insert(request("agent-1", "c.example", "allow")), kNoRow);  // not launched: no lookup
  writer.flush();
  SqliteProbe probe(path);
  EXPECT_EQ(probe.text("SELECT group_concat(host || ':' || IFNULL(client_exe, 'NULL') || ':' || "
                       "IFNULL(client_pid, 'NULL'), ' ') FROM (SELECT * FROM requests ORDER BY host)"),
            "a.example:unknown:NULL b.example:unknown:NULL c.example:NULL:NULL");
  never.set_value({1, "/late", ""});  // after the row was written: changes nothing
}

TEST_F(AuditProcessOrigin, ExeFiltersByPathOrByFileNameInAnyFolder) {
  {
    Writer writer(options_for(path));
    auto row = [&](std::string host, std::string exe) {
      AuditRecord r = request("agent-1", std::move(host), "allow");
      r.origin = {1, std::move(exe), "x"};
      ASSERT_NE(writer.insert(r), kNoRow);
    };
    row("curl.example", "/usr/bin/curl");
    row("other-curl.example", "/tmp/bin/curl");
    row("curly.example", "/usr/bin/curly");
    row("glob.example", "/usr/bin/c*rl");
    row("unknown.example", "unknown");
    writer.flush();
  }
  auto hosts = [&](std::string exe) {
    Filter f;
    f.exe = std::move(exe);
    f.limit = 0;
    std::string out;
    for (const auto& r : query_requests(path, f)) out += (out.empty() ? "" : " ") + r.host;
    return out;
  };
  EXPECT_EQ(hosts("curl"), "other-curl.example curl.example");
  EXPECT_EQ(hosts("/usr/bin/curl"), "curl.example");
  EXPECT_EQ(hosts("c*rl"), "glob.example") << "a name's glob characters are literal";
  EXPECT_EQ(hosts("unknown"), "unknown.example");
  EXPECT_EQ(hosts("url"), "");
  Filter curly;
  curly.exe = "/usr/bin/curly";
  const auto rows = query_requests(path, curly);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].origin.exe, "/usr/bin/curly");
  EXPECT_EQ(rows[0].origin.pid, 1);
  EXPECT_EQ(rows[0].origin.argv, "x");
}

}  // namespace
}  // namespace netbox::audit
