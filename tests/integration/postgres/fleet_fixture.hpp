#pragma once
// The fixture of the PostgreSQL fleet tests (fleet_test.cpp, spool_test.cpp): a real server,
// an upstream, `netbox proxy` processes writing to the server, and readers of their rows.
#include "support/background_process.hpp"
#include "support/postgres_server.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/upstream_server.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace netbox::test {

struct RunningProxy {
  unsigned short port = 0;
  std::unique_ptr<BackgroundProcess> process;
};

class PostgresFleet : public ::testing::Test {
 protected:
  RunningProxy start_proxy(const std::string& db, const std::string& id, std::vector<std::string> extra = {}) {
    RunningProxy p;
    p.port = free_port();
    const auto policy = dir.write("policy.json", R"({"version": 1, "allow": ["upstream.test"], "ports": [)" +
                                                     std::to_string(upstream.port()) +
                                                     R"(], "internal": {"allow": ["127.0.0.1/32"]},
      "resolve": {"upstream.test": ["127.0.0.1"]}})");
    extra.insert(extra.end(), {"--proxy-id", id, "--log-format", "json"});
    // A spool of the test's own, not one in the home of whoever runs it.
    if (std::find(extra.begin(), extra.end(), "--audit-spool") == extra.end())
      extra.insert(extra.end(), {"--audit-spool", (dir.path() / ("spool-" + id + ".db")).string()});
    p.process = std::make_unique<BackgroundProcess>(proxy_command(policy, p.port, db, extra),
                                                    dir.path() / ("proxy-" + id + ".log"));
    EXPECT_TRUE(wait_for_port(p.port)) << p.process->log();
    return p;
  }

  std::string url_base() const { return "http://upstream.test:" + std::to_string(upstream.port()); }

  // path -> (id, proxy_id) of every request row; a path seen twice fails the test.
  std::map<std::string, std::pair<long long, std::string>> rows(const std::string& database) {
    std::map<std::string, std::pair<long long, std::string>> out;
    for (const auto& r : server.query(database, "SELECT path, id, proxy_id FROM requests ORDER BY id")) {
      const bool fresh = out.emplace(r[0], std::make_pair(std::stoll(r[1]), r[2])).second;
      EXPECT_TRUE(fresh) << "a request recorded twice: " << r[0];
    }
    return out;
  }

  // Per proxy and client, rows are in the order the client sent its requests: ids increase
  // with the request number N of /load/TAG-CLIENT-N.
  static void expect_in_order(const std::map<std::string, std::pair<long long, std::string>>& rows) {
    std::map<std::string, std::vector<std::pair<long long, long long>>> streams;  // tag-client -> (n, id)
    for (const auto& [path, row] : rows) {
      const auto dash = path.rfind('-');
      streams[row.second + path.substr(0, dash)].emplace_back(std::stoll(path.substr(dash + 1)), row.first);
    }
    for (auto& [stream, v] : streams) {
      std::sort(v.begin(), v.end());
      for (std::size_t i = 1; i < v.size(); ++i)
        EXPECT_LT(v[i - 1].second, v[i].second) << stream << ": request " << v[i].first << " has a lower id than "
                                                << v[i - 1].first;
    }
  }

  PostgresServer server;
  TempDir dir;
  UpstreamServer upstream;
};

}  // namespace netbox::test
