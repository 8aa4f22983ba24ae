// `netbox proxy --log-format json`: every line, the first one included, is one JSON
// object with ts, level and event; numbers are JSON numbers; a request line's fields are
// the audit store's `requests` columns with the values of its row.
#include "support/background_process.hpp"
#include "support/process.hpp"
#include "support/sqlite_query.hpp"
#include "support/temp_dir.hpp"
#include "support/upstream_server.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>
#include <sstream>
#include <string>

namespace netbox::test {
namespace {

using nlohmann::json;

std::vector<json> json_lines(const std::string& log) {
  std::vector<json> lines;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    auto j = json::parse(line, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "not JSON: " << line;
    if (!j.is_discarded()) lines.push_back(std::move(j));
  }
  return lines;
}

class ProxyJsonLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    port = free_port();
    const auto policy = dir.write("policy.json", R"({"version": 1, "allow": ["upstream.test"], "ports": [)" +
                                                     std::to_string(upstream.port()) + R"(],
        "internal": {"allow": ["127.0.0.1/32"]}, "resolve": {"upstream.test": ["127.0.0.1"]}})");
    db = dir.path() / "audit.db";
    proxy = std::make_unique<BackgroundProcess>(
        proxy_command(policy, port, db, {"--log-format", "json", "--admin", "127.0.0.1:0", "--admin-insecure"}), dir.path() / "proxy.log");
    ASSERT_TRUE(wait_for_port(port)) << proxy->log();
  }
  std::string curl(const std::string& host, const std::string& path) const {
    return run({"curl", "-sS", "--max-time", "20", "-o", "/dev/null", "-w", "%{http_code}", "-x",
                "http://127.0.0.1:" + std::to_string(port), "http://" + host + ":" + std::to_string(upstream.port()) + path})
        .out;
  }
  std::vector<json> stop_and_read() {
    EXPECT_EQ(proxy->stop(SIGTERM), 0) << proxy->log();
    return json_lines(proxy->log());
  }

  TempDir dir;
  UpstreamServer upstream;
  unsigned short port = 0;
  std::filesystem::path db;
  std::unique_ptr<BackgroundProcess> proxy;
};

TEST_F(ProxyJsonLogTest, TheFirstLineIsTheStartBannerInJson) {
  const auto lines = stop_and_read();
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.front()["event"], "starting") << lines.front();
  EXPECT_TRUE(lines.front()["pid"].is_number_integer()) << lines.front();
  EXPECT_TRUE(lines.front()["version"].is_string()) << lines.front();
  bool admin = false;
  for (const auto& l : lines) {
    ASSERT_TRUE(l["ts"].is_string()) << l;
    ASSERT_TRUE(l["event"].is_string()) << l;
    ASSERT_TRUE(l["level"] == "info" || l["level"] == "warn" || l["level"] == "error") << l;
    if (l["event"] == "admin_listening") admin = true;
    if (l["event"] == "connection_limits") {
      EXPECT_TRUE(l["descriptors"].is_number_integer()) << l;
    }
  }
  EXPECT_TRUE(admin) << "the admin endpoint's line is in the log";
}

TEST_F(ProxyJsonLogTest, RequestLinesCarryTheAuditColumnsTypedAndALevel) {
  ASSERT_EQ(curl("upstream.test", "/ok"), "200");
  ASSERT_EQ(curl("denied.test", "/no"), "403");
  const auto lines = stop_and_read();
  std::vector<json> requests;
  for (const auto& l : lines)
    if (l["event"] == "request") requests.push_back(l);
  ASSERT_EQ(requests.size(), 2u) << proxy->log();

  const std::set<std::string> columns = {"ts",       "agent",  "client_addr", "kind",     "method",
                                         "host",     "port",   "path",        "resolved_addr", "decision",
                                         "rule",     "reason", "status",      "bytes_up", "bytes_down",
                                         "duration_ms", "error", "client_exe"};
  for (const auto& r : requests)
    for (const auto& [key, value] : r.items())
      EXPECT_TRUE(key == "level" || key == "event" || columns.count(key)) << "not an audit column: " << key;

  const auto& ok = requests[0];
  EXPECT_EQ(ok["level"], "info");
  EXPECT_EQ(ok["host"], "upstream.test");
  EXPECT_TRUE(ok["port"].is_number_integer()) << ok;
  EXPECT_EQ(ok["port"].get<int>(), upstream.port());
  EXPECT_TRUE(ok["status"].is_number_integer()) << ok;
  EXPECT_EQ(ok["status"].get<int>(), 200);
  EXPECT_TRUE(ok["bytes_down"].is_number_integer()) << ok;
  EXPECT_GT(ok["bytes_down"].get<long long>(), 0);
  EXPECT_TRUE(ok["bytes_up"].is_number_integer()) << ok;
  EXPECT_TRUE(ok["duration_ms"].is_number_integer()) << ok;
  EXPECT_TRUE(ok["error"].is_null()) << ok;
  EXPECT_EQ(ok["resolved_addr"], "127.0.0.1");

  const auto& denied = requests[1];
  EXPECT_EQ(denied["level"], "warn") << denied;
  EXPECT_EQ(denied["status"].get<int>(), 403);
  EXPECT_TRUE(denied["resolved_addr"].is_null()) << "a refused name is never resolved: " << denied;

  // The same values as the rows, column for column.
  const auto rows = query_column(db, "SELECT host || ' ' || port || ' ' || decision || ' ' || status || ' ' || "
                                     "bytes_down || ' ' || ifnull(rule, '') FROM requests ORDER BY id");
  ASSERT_EQ(rows.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& l = requests[i];
    EXPECT_EQ(rows[i], l["host"].get<std::string>() + " " + std::to_string(l["port"].get<int>()) + " " +
                           l["decision"].get<std::string>() + " " + std::to_string(l["status"].get<int>()) + " " +
                           std::to_string(l["bytes_down"].get<long long>()) + " " +
                           (l["rule"].is_null() ? "" : l["rule"].get<std::string>()));
  }
}

}  // namespace
}  // namespace netbox::test
