// What `netbox audit` prints: a table for people, JSON and CSV for tools.
#include "netbox/audit/query.hpp"
#include "support/sample_records.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>

namespace netbox::audit {
namespace {

using testing::request;

const Clock::time_point kTs = Clock::time_point{} + std::chrono::milliseconds(1795321234567);

std::vector<AuditRecord> two_rows() {
  auto a = request("agent-1", "api.example.com", "allow", kTs);
  a.id = 7;
  a.status = 200;
  a.bytes_up = 10;
  a.bytes_down = 20;
  a.duration_ms = 30;
  auto b = request("agent-2", "x.evil.example", "deny", kTs);
  b.id = 8;
  b.reason = "x.evil.example matches deny[0] *.evil.example, \"blocked\"\nsee policy";
  b.error = "";
  return {a, b};
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(AuditFormat, JsonIsAnArrayOfObjectsWithEveryColumn) {
  const auto j = nlohmann::json::parse(format_requests(two_rows(), "json"));
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["id"], 7);
  EXPECT_EQ(j[0]["ts"], "2026-11-22T04:20:34.567Z");
  EXPECT_EQ(j[0]["status"], 200);
  EXPECT_EQ(j[0]["duration_ms"], 30);
  EXPECT_TRUE(j[1]["status"].is_null());
  EXPECT_TRUE(j[1]["duration_ms"].is_null());
  EXPECT_EQ(j[1]["reason"], two_rows()[1].reason);
  for (const char* key : {"id", "ts", "agent", "client_addr", "kind", "method", "host", "port", "path",
                          "resolved_addr", "decision", "rule", "reason", "status", "bytes_up", "bytes_down",
                          "duration_ms", "error", "count", "parent_id", "proxy_id", "client_pid", "client_exe",
                          "client_argv"})
    EXPECT_TRUE(j[0].contains(key)) << key;
  EXPECT_EQ(j[0].size(), 24u);
  EXPECT_TRUE(j[0]["client_exe"].is_null()) << "not launched: no process";
  EXPECT_TRUE(j[0]["parent_id"].is_null()) << "no tunnel";
  EXPECT_EQ(j[0]["count"], 1);
}

TEST(AuditFormat, JsonSurvivesBytesThatAreNotUtf8) {
  auto rows = two_rows();
  rows[0].path = "/\xff\xfe";
  nlohmann::json j;
  EXPECT_NO_THROW(j = nlohmann::json::parse(format_requests(rows, "json")));
  EXPECT_EQ(j[0]["path"].get<std::string>().substr(0, 1), "/");
}

TEST(AuditFormat, EmptyJsonIsAnEmptyArray) {
  EXPECT_EQ(nlohmann::json::parse(format_requests({}, "json")), nlohmann::json::array());
  EXPECT_EQ(nlohmann::json::parse(format_summary({}, "json")), nlohmann::json::array());
}

TEST(AuditFormat, CsvQuotesCommasAndQuotesPerRfc4180AndEscapesNewlines) {
  const auto csv = format_requests(two_rows(), "csv");
  EXPECT_EQ(csv.substr(0, csv.find("\r\n")),
            "id,ts,agent,client_addr,kind,method,host,port,path,resolved_addr,decision,rule,reason,status,bytes_up,"
            "bytes_down,duration_ms,error,count,client_pid,client_exe,client_argv");
  EXPECT_NE(csv.find("\r\n7,2026-11-22T04:20:34.567Z,agent-1,10.213.0.2:41234,http,GET,api.example.com,80,"
                     "/index.html,127.0.0.1,allow,allow[0] api.example.com,api.example.com matches allow[0],200,10,20,"
                     "30,,1,,,\r\n"),
            std::string::npos)
      << csv;
  EXPECT_NE(csv.find(",\"x.evil.example matches deny[0] *.evil.example, \"\"blocked\"\"\\x0asee policy\",,0,0,,,1,,,\r\n"),
            std::string::npos)
      << csv;
}

TEST(AuditFormat, CsvOfNothingIsJustTheHeader) {
  EXPECT_EQ(format_summary({}, "csv"), "agent,host,allowed,denied,reported,capped,failed,bytes_up,bytes_down\r\n");
}

TEST(AuditFormat, TableAlignsColumnsAndShowsWhyAndWhatWentWrong) {
  auto rows = two_rows();
  rows[0].error = "upstream reset";
  const auto table = lines(format_requests(rows, "table"));
  ASSERT_EQ(table.size(), 3u);
  EXPECT_EQ(table[0].find("ID"), 0u);
  for (const char* title : {"TIME", "AGENT", "DECISION", "HOST", "PORT", "PATH", "STATUS", "REASON"})
    EXPECT_NE(table[0].find(title), std::string::npos) << title;
  // Every row puts the host where the header has it.
  const auto host_col = table[0].find("HOST");
  EXPECT_EQ(table[1].find("api.example.com"), host_col) << table[1];
  EXPECT_EQ(table[2].find("x.evil.example"), host_col) << table[2];
  EXPECT_NE(table[1].find("api.example.com matches allow[0]; error: upstream reset"), std::string::npos);
}

TEST(AuditFormat, TableCutsLongFieldsAndDefusesControlCharacters) {
  auto rows = two_rows();
  rows[0].path = "/" + std::string(500, 'a');
  rows[1].path = "/\x1b[31mred";
  const auto text = format_requests(rows, "table");
  const auto table = lines(text);
  ASSERT_EQ(table.size(), 3u) << "a newline in a field must not start a new table line";
  EXPECT_EQ(text.find(std::string(100, 'a')), std::string::npos);
  EXPECT_NE(table[1].find("aaa..."), std::string::npos) << table[1];
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_NE(table[2].find("/\\x1b[31mred"), std::string::npos) << table[2];
  EXPECT_LT(table[1].size(), 300u);
}

TEST(AuditFormat, SummaryTable) {
  std::vector<SummaryRow> rows = {{"agent-1", "api.example.com", 5, 1, 0, 0, 0, 100, 2000},
                                  {"agent-2", "x.evil.example", 0, 3, 2, 4, 1, 0, 0}};
  const auto table = lines(format_summary(rows, "table"));
  ASSERT_EQ(table.size(), 3u);
  for (const char* title : {"AGENT", "HOST", "ALLOWED", "DENIED", "REPORTED", "CAPPED", "FAILED", "UP", "DOWN"})
    EXPECT_NE(table[0].find(title), std::string::npos) << title;
  // Numbers are right-aligned under their titles.
  const auto denied_end = table[0].find("DENIED") + std::string("DENIED").size();
  EXPECT_EQ(table[1][denied_end - 1], '1') << table[1];
  EXPECT_EQ(table[2][denied_end - 1], '3') << table[2];
  const auto j = nlohmann::json::parse(format_summary(rows, "json"));
  EXPECT_EQ(j[1]["denied"], 3);
  EXPECT_EQ(j[1]["reported"], 2);
  EXPECT_EQ(j[1]["capped"], 4);
  EXPECT_EQ(j[1]["failed"], 1);
  EXPECT_EQ(j[0]["bytes_down"], 2000);
}

TEST(AuditFormat, EmptyTableSaysSo) {
  EXPECT_EQ(format_requests({}, "table"), "no matching requests\n");
}

TEST(AuditFormat, UnknownFormatIsRefusedByName) {
  try {
    format_requests(two_rows(), "xml");
    FAIL() << "accepted xml";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'xml'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(format_summary({}, "yaml"), std::invalid_argument);
}

}  // namespace
}  // namespace netbox::audit
