#pragma once
// `netbox proxy` as a real process (so it can be killed with SIGKILL) in front of a real
// upstream, with clients that record which requests were answered and when.
#include "support/background_process.hpp"
#include "support/proxy_load.hpp"
#include "support/temp_dir.hpp"
#include "support/upstream_server.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace netbox::test {

class DurabilityTest : public ::testing::Test {
 protected:
  using Clock = std::chrono::steady_clock;

  // Starts `netbox proxy` writing its audit rows to `db` (default: in the temp dir).
  void start_proxy(const std::vector<std::string>& extra_flags = {}, std::filesystem::path db = {});
  std::string url(const std::string& path) const;

  // Keep-alive clients sending GETs with unique paths until stop_load(). Every 200 answer is
  // recorded with the time it arrived.
  void start_load(unsigned clients);
  void stop_load();
  std::map<std::string, ProxyLoad::Clock::time_point> answered() const;

  // Paths of the request rows in the database (read after the proxy is gone).
  std::vector<std::string> row_paths() const;

  TempDir dir;
  UpstreamServer upstream;
  std::unique_ptr<BackgroundProcess> proxy;
  std::filesystem::path db_path;
  unsigned short port = 0;

 private:
  std::unique_ptr<ProxyLoad> load_;
  std::map<std::string, ProxyLoad::Clock::time_point> answered_;  // kept from the last load
};

}  // namespace netbox::test
