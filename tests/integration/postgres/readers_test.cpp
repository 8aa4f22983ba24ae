// Reading the audit from either backend: the same rows written through the Writer into an
// SQLite file and into a real PostgreSQL server read back the same through every reader
// (netbox audit's rows and summary in every format, the dashboard's totals, top denied
// hosts and agents) and every filter, including text an agent chose to be awkward.
#include "netbox/audit/query.hpp"
#include "netbox/audit/writer.hpp"
#include "support/postgres_server.hpp"
#include "support/process.hpp"
#include "support/sample_records.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>

namespace netbox::test {
namespace {

using namespace std::chrono_literals;
using audit::Clock;
using audit::Filter;

PostgresServer& shared_server() {
  static auto server = std::make_unique<PostgresServer>();
  return *server;
}

Clock::time_point at(int minute) {
  return Clock::time_point{} + std::chrono::sys_days{std::chrono::year{2026} / 11 / 20}.time_since_epoch() +
         std::chrono::minutes(minute) + 123ms;
}

// Rows with every shape the readers meet: decisions, agents, hosts, folded counts, a
// tunnel with a request inside, rows never completed, and text that is not plain.
void write_rows(const std::string& store) {
  audit::WriterOptions o;
  o.db_path = store;
  o.proxy_id = "proxy-a";
  o.fold_refusals = false;
  audit::Writer w(o);
  using audit::testing::request;
  const char* hosts[] = {"api.a.example.com", "api.b.example.com", "b.example.com", "evil.example", "x.test"};
  const char* agents[] = {"builder", "tester", "anonymous"};
  const char* decisions[] = {"allow", "deny", "report", "cap", "error", "allow"};
  int minute = 0;
  for (int i = 0; i < 30; ++i) {
    auto r = request(agents[i % 3], hosts[i % 5], decisions[i % 6], at(minute += 7));
    r.path = "/p/" + std::to_string(i);
    if (i % 6 == 1) r.status = 403;
    if (i % 7 == 3) r.reason = "reason " + std::to_string(i % 2);
    // The process that opened the connection (issue 27): two programs, and none for some.
    if (i % 3 == 0) r.origin = {i, "/usr/bin/curl", "curl -s http://x/"};
    if (i % 3 == 1) r.origin = {i, "/usr/lib/c*rl", "innocent"};
    if (i % 6 == 1 || i % 6 == 3) {
      r.count = 1 + static_cast<std::uint64_t>(i % 4);
      ASSERT_TRUE(w.insert_complete(r));
      continue;
    }
    const auto h = w.insert(r);
    ASSERT_NE(h, audit::kNoRow);
    if (i % 5 != 4) {
      audit::Completion c;
      c.status = 200;
      c.bytes_up = 10u * static_cast<unsigned>(i);
      c.bytes_down = 1000u + static_cast<unsigned>(i);
      c.duration_ms = i;
      if (i % 6 == 4) c.error = "connection refused";
      w.complete(h, c);
    }
  }
  // A tunnel, and a request inside it.
  auto tunnel = request("builder", "api.a.example.com", "allow", at(minute += 3));
  tunnel.kind = "connect";
  tunnel.method = "CONNECT";
  tunnel.path.clear();
  tunnel.port = 443;
  const auto t = w.insert(tunnel);
  auto inner = request("builder", "api.a.example.com", "allow", at(minute += 1));
  inner.parent = t;
  w.insert(inner);
  // Text an agent chose: control characters, quotes, a formula, bytes that are not UTF-8.
  auto odd = request("tester", "odd.test", "deny", at(minute += 1));
  odd.path = std::string("/a\tb\r\n\x1b[31m\"quoted\",=HYPERLINK(x)\\\xff\xfe") + "\xc3\xa9";
  odd.reason = "x' OR '1'='1";
  odd.status = 403;
  odd.origin = {99, "/tmp/\x1b[31m[x]?", "=cmd\xff"};
  ASSERT_TRUE(w.insert_complete(odd));
  // A request refused before it named a host: empty text in NOT NULL columns.
  auto nameless = request("", "", "error", at(minute += 1));
  nameless.kind = "http";
  nameless.status = 400;
  ASSERT_TRUE(w.insert_complete(nameless));
  w.flush();
}

enum class Backend { sqlite, postgresql };

std::string name_of(const ::testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::sqlite ? "SQLite" : "PostgreSQL";
}

// One store per backend for the whole suite, written once.
const std::string& store_for(Backend b) {
  static TempDir dir;
  static std::string sqlite, postgresql;
  std::string& s = b == Backend::sqlite ? sqlite : postgresql;
  if (s.empty()) {
    s = b == Backend::sqlite ? (dir.path() / "audit.db").string() : shared_server().create_database("readers");
    write_rows(s);
  }
  return s;
}

std::vector<Filter> filters() {
  std::vector<Filter> out;
  out.emplace_back();
  Filter f;
  f.agent = "builder";
  out.push_back(f);
  f = {};
  f.decision = "deny";
  out.push_back(f);
  for (const char* glob : {"*.example.com", "api.?.example.com", "[ab]*.example.com", "[^a]*", "*.example",
                           "api.[a-b].example.com", "x' OR '1'='1", "odd.test"}) {
    f = {};
    f.host_glob = glob;
    out.push_back(f);
  }
  for (const char* exe : {"curl", "/usr/bin/curl", "c*rl", "/usr/lib/c*rl", "[x]?", "unknown"}) {
    f = {};
    f.exe = exe;
    out.push_back(f);
  }
  f = {};
  f.since = at(100);
  out.push_back(f);
  f.limit = 3;
  out.push_back(f);
  f = {};
  f.limit = 0;
  out.push_back(f);
  f.agent = "tester";
  f.decision = "deny";
  f.host_glob = "*";
  f.since = at(50);
  out.push_back(f);
  return out;
}

std::string totals_text(const audit::Totals& t) {
  std::string s = std::to_string(t.requests) + " " + std::to_string(t.bytes_up) + " " + std::to_string(t.bytes_down);
  for (const auto& d : t.decisions) s += " " + d.decision + "=" + std::to_string(d.requests);
  return s;
}

std::string denied_text(const std::vector<audit::DeniedHost>& hosts) {
  std::string s;
  for (const auto& h : hosts) {
    s += h.host + ":" + std::to_string(h.requests) + "[";
    for (const auto& r : h.reasons)
      s += r.reason + "|" + r.rule + "|" + std::to_string(r.requests) + "|" + audit::format_timestamp(r.last_seen) + ";";
    s += "]\n";
  }
  return s;
}

std::string agents_text(const std::vector<audit::AgentActivity>& agents) {
  std::string s;
  for (const auto& a : agents) {
    s += a.agent + ":" + std::to_string(a.requests) + ":" + std::to_string(a.bytes_up) + ":" +
         std::to_string(a.bytes_down) + ":" + audit::format_timestamp(a.last_seen);
    for (const auto& d : a.decisions) s += " " + d.decision + "=" + std::to_string(d.requests);
    s += "\n";
  }
  return s;
}

std::string timeline_text(const std::vector<audit::TimelinePoint>& points) {
  std::string s;
  for (const auto& p : points) {
    s += audit::format_timestamp(p.start);
    for (const auto& d : p.decisions) s += " " + d.decision + "=" + std::to_string(d.requests);
    s += "\n";
  }
  return s;
}

class Readers : public ::testing::TestWithParam<Backend> {
 protected:
  const std::string& store() { return store_for(GetParam()); }
};

TEST_P(Readers, RowsCountsAndFiltersAreWhatWasWritten) {
  Filter all;
  all.limit = 0;
  const auto rows = audit::query_requests(store(), all);
  ASSERT_EQ(rows.size(), 34u);
  std::uint64_t requests = 0;
  for (const auto& r : rows) {
    requests += r.count;
    EXPECT_EQ(r.proxy_id, "proxy-a");
  }
  EXPECT_EQ(audit::totals(store(), all).requests, requests);
  // Newest first, ids increasing with time as written.
  for (std::size_t i = 1; i < rows.size(); ++i) EXPECT_GT(rows[i - 1].id, rows[i].id);
  Filter deny;
  deny.decision = "deny";
  deny.limit = 0;
  for (const auto& r : audit::query_requests(store(), deny)) EXPECT_EQ(r.decision, "deny");
  Filter glob;
  glob.host_glob = "api.?.example.com";
  glob.limit = 0;
  for (const auto& r : audit::query_requests(store(), glob)) EXPECT_TRUE(r.host.starts_with("api.")) << r.host;
  EXPECT_EQ(audit::query_requests(store(), glob).size(), 14u);
  // The tunnel's request points at the tunnel's row.
  const auto inner = std::find_if(rows.begin(), rows.end(), [](const auto& r) { return r.parent_id != 0; });
  ASSERT_NE(inner, rows.end());
  const auto tunnel = std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return r.id == inner->parent_id; });
  ASSERT_NE(tunnel, rows.end());
  EXPECT_EQ(tunnel->kind, "connect");
  // What the agent sent is what comes back (bytes that are not UTF-8 as \xNN on PostgreSQL,
  // which shows them as the readers print them anyway).
  Filter odd;
  odd.host_glob = "odd.test";
  const auto o = audit::query_requests(store(), odd);
  ASSERT_EQ(o.size(), 1u);
  EXPECT_EQ(o[0].reason, "x' OR '1'='1");
  EXPECT_EQ(o[0].origin.pid, 99);
  Filter curl;
  curl.exe = "curl";
  curl.limit = 0;
  const auto curls = audit::query_requests(store(), curl);
  EXPECT_EQ(curls.size(), 10u);
  for (const auto& r : curls) EXPECT_EQ(r.origin.exe, "/usr/bin/curl");
  Filter literal;
  literal.exe = "c*rl";  // a file name's glob characters are literal on both backends
  EXPECT_EQ(audit::query_requests(store(), literal).size(), 10u);
  EXPECT_TRUE(o[0].path.starts_with("/a\tb\r\n\x1b[31m\"quoted\",=HYPERLINK(x)\\")) << o[0].path;
}

INSTANTIATE_TEST_SUITE_P(Backends, Readers, ::testing::Values(Backend::sqlite, Backend::postgresql), name_of);

// Every reader, every filter, every format: PostgreSQL answers exactly what SQLite does.
TEST(ReadersAcrossBackends, EveryReaderFilterAndFormatGivesTheSameAnswer) {
  const auto& lite = store_for(Backend::sqlite);
  const auto& pg = store_for(Backend::postgresql);
  for (const auto& f : filters()) {
    const std::string what = (f.agent ? " agent=" + *f.agent : "") + (f.decision ? " decision=" + *f.decision : "") +
                              (f.host_glob ? " host=" + *f.host_glob : "") + (f.exe ? " exe=" + *f.exe : "") +
                             " limit=" + std::to_string(f.limit);
    for (const char* format : {"table", "csv"}) {
      EXPECT_EQ(audit::format_requests(audit::query_requests(pg, f), format),
                audit::format_requests(audit::query_requests(lite, f), format))
          << format << what;
      EXPECT_EQ(audit::format_summary(audit::summarize(pg, f), format),
                audit::format_summary(audit::summarize(lite, f), format))
          << format << what;
    }
    EXPECT_EQ(audit::format_summary(audit::summarize(pg, f), "json"),
              audit::format_summary(audit::summarize(lite, f), "json"))
        << what;
    EXPECT_EQ(totals_text(audit::totals(pg, f)), totals_text(audit::totals(lite, f))) << what;
    EXPECT_EQ(denied_text(audit::top_denied(pg, f)), denied_text(audit::top_denied(lite, f))) << what;
    EXPECT_EQ(agents_text(audit::agent_activity(pg, f)), agents_text(audit::agent_activity(lite, f))) << what;
    for (const auto bucket : {std::chrono::seconds(1), std::chrono::seconds(7), std::chrono::seconds(3600)})
      EXPECT_EQ(timeline_text(audit::timeline(pg, f, bucket)), timeline_text(audit::timeline(lite, f, bucket)))
          << what << " bucket=" << bucket.count();
  }
}

// `netbox audit` itself, against a server: the same lines as against the file.
TEST(ReadersAcrossBackends, NetboxAuditPrintsTheSameForBothStores) {
  const auto& lite = store_for(Backend::sqlite);
  const auto& pg = store_for(Backend::postgresql);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--limit", "0"}, {"--decision", "deny", "--format", "csv"},
        {"--host", "*.example.com", "--since", "2026-11-20T02:00", "--format", "table"},
        {"summary", "--agent", "builder"}, {"summary", "--format", "csv", "--limit", "2"}}) {
    auto with = [&](const std::string& db) {
      std::vector<std::string> a{"audit", "--db", db};
      a.insert(a.end(), args.begin(), args.end());
      return run_netbox(a);
    };
    const auto a = with(lite);
    const auto b = with(pg);
    EXPECT_EQ(a.exit_code, 0) << a.err;
    EXPECT_EQ(b.exit_code, 0) << b.err;
    EXPECT_EQ(b.out, a.out) << args[0];
  }
}

}  // namespace
}  // namespace netbox::test
