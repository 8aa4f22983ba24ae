#include "durability_fixture.hpp"

#include "support/process.hpp"
#include "support/proxy_client.hpp"
#include "support/sqlite_query.hpp"

namespace netbox::test {

void DurabilityTest::start_proxy(const std::vector<std::string>& extra_flags, std::filesystem::path db) {
  port = free_port();
  db_path = db.empty() ? dir.path() / "audit.db" : std::move(db);
  const auto policy = dir.write("policy.json", R"({"version": 1, "allow": ["upstream.test"], "ports": [)" +
                                                   std::to_string(upstream.port()) +
                                                   R"(], "internal": {"allow": ["127.0.0.1/32"]},
      "resolve": {"upstream.test": ["127.0.0.1"]}})");
  auto argv = proxy_command(policy, port, db_path, {"--log-format", "json"});
  argv.insert(argv.end(), extra_flags.begin(), extra_flags.end());
  proxy = std::make_unique<BackgroundProcess>(argv, dir.path() / "proxy.log");
  ASSERT_TRUE(wait_for_port(port)) << proxy->log();
}

std::string DurabilityTest::url(const std::string& path) const {
  return "http://upstream.test:" + std::to_string(upstream.port()) + path;
}

void DurabilityTest::start_load(unsigned clients) {
  loading_ = true;
  for (unsigned i = 0; i < clients; ++i) clients_.emplace_back([this, i] { client_loop(i); });
}

void DurabilityTest::stop_load() {
  loading_ = false;
  for (auto& t : clients_) t.join();
  clients_.clear();
}

std::map<std::string, DurabilityTest::Clock::time_point> DurabilityTest::answered() const {
  std::lock_guard lk(mu_);
  return answered_;
}

void DurabilityTest::client_loop(unsigned id) {
  unsigned n = 0;
  while (loading_) {
    try {
      ProxyConnection conn(port, std::chrono::seconds(5));
      while (loading_) {
        const std::string path = "/load/" + std::to_string(id) + "-" + std::to_string(n++);
        auto r = conn.send("GET " + url(path) + " HTTP/1.1\r\nHost: upstream.test\r\n\r\n");
        if (r.status == 0) break;  // the proxy is gone or closed: reconnect while loading
        if (r.status == 200) {
          std::lock_guard lk(mu_);
          answered_.emplace(path, Clock::now());
        }
      }
    } catch (const std::exception&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // refused: it was killed
    }
  }
}

std::vector<std::string> DurabilityTest::row_paths() const {
  return query_column(db_path, "SELECT path FROM requests ORDER BY id");
}

}  // namespace netbox::test
