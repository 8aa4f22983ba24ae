#pragma once
// An in-process proxy (netbox::proxy::Server) on a free loopback port, a real upstream
// server, and the audit rows read back from the real SQLite file.
#include "netbox/proxy/server.hpp"
#include "support/proxy_client.hpp"
#include "support/temp_dir.hpp"
#include "support/upstream_server.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;  // <sqlite3.h>

namespace netbox::test {

// The write lock of an SQLite store (BEGIN EXCLUSIVE), held as another process would hold
// it until release() or destruction: the audit writer's commits then fail.
class StoreWriteLock {
 public:
  explicit StoreWriteLock(const std::filesystem::path& db);
  ~StoreWriteLock() { release(); }
  StoreWriteLock(const StoreWriteLock&) = delete;
  StoreWriteLock& operator=(const StoreWriteLock&) = delete;
  bool held() const { return db_ != nullptr; }
  void release();

 private:
  sqlite3* db_ = nullptr;
};

struct AuditRow {
  std::string agent, client_addr, kind, method, host, path, resolved_addr, decision, rule, reason, error;
  int port = 0;
  std::optional<int> status;
  std::int64_t bytes_up = 0, bytes_down = 0;
  std::optional<std::int64_t> duration_ms;
};

struct EventRow {
  std::string kind, message, detail;
};

class ProxyTest : public ::testing::Test {
 protected:
  void TearDown() override;

  // Starts the proxy with `policy_json` (written to a file, so it can be reloaded).
  void start_proxy(const std::string& policy_json, std::vector<std::string> dns_servers = {}, unsigned threads = 2,
                   std::optional<std::string> control = std::nullopt);
  // A policy allowing upstream.test (pinned to 127.0.0.1) on the upstream's port, plus `extra`
  // JSON members (e.g. R"("deny": ["x.test"])") merged at the top level.
  std::string base_policy(const std::string& extra = {}) const;
  std::string upstream_url(const std::string& path = "/") const;

  std::vector<AuditRow> rows();          // every row, once all are completed (bounded wait)
  std::vector<AuditRow> read_rows();     // every row as it is now (after a flush)
  std::vector<EventRow> events();
  AuditRow last_row();
  void stop_proxy();
  // Waits (bounded) until the audit writer reports itself unhealthy; false if it never does.
  bool audit_turns_unhealthy();

  // Applied to the options start_proxy builds, before the server is made.
  std::function<void(proxy::ProxyOptions&)> configure;

  TempDir dir;
  UpstreamServer upstream;
  std::unique_ptr<proxy::Server> server;
  unsigned short port = 0;
  std::filesystem::path policy_path;
  std::filesystem::path db_path;
  std::size_t audit_hold = 16384;  // ProxyOptions::audit_hold; set before start_proxy
};

}  // namespace netbox::test
