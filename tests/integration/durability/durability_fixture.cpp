#include "durability_fixture.hpp"

#include "support/process.hpp"
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
  load_ = std::make_unique<ProxyLoad>(port, url(""), "d", clients);
}

void DurabilityTest::stop_load() {
  if (!load_) return;
  load_->stop();
  answered_ = load_->answered();
  load_.reset();
}

std::map<std::string, ProxyLoad::Clock::time_point> DurabilityTest::answered() const {
  return load_ ? load_->answered() : answered_;
}

std::vector<std::string> DurabilityTest::row_paths() const {
  return query_column(db_path, "SELECT path FROM requests ORDER BY id");
}

}  // namespace netbox::test
