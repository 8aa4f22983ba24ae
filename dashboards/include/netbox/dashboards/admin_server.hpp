#pragma once
// The admin endpoint: Prometheus /metrics, health probes, a JSON API over the audit
// store, and the embedded dashboard page. It runs on threads of its own, so a slow
// SQLite query or a slow browser never holds up a proxy io thread.
#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace netbox::dashboards {

// Live figures of the running proxy, as the page's chart and tiles need them.
struct LiveStats {
  std::uint64_t allow = 0;    // requests decided so far, by decision
  std::uint64_t deny = 0;
  std::uint64_t report = 0;
  std::uint64_t active_connections = 0;
  std::uint64_t active_tunnels = 0;
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
  std::uint64_t cap = 0;    // refused by a connection limit
  std::uint64_t error = 0;  // not completed: malformed, DNS or upstream failure
};

struct AdminOptions {
  boost::asio::ip::tcp::endpoint listen;
  std::string bearer_token;                 // empty: no authentication
  std::filesystem::path audit_db;
  std::function<std::string()> metrics;     // Prometheus text for /metrics
  std::function<LiveStats()> live;          // for /api/summary
  std::function<bool()> ready;              // /readyz: 200 when true (audit store healthy, listening)
  // /api/agents/{name}: the guardian's JSON for that agent; nullopt: 404.
  std::function<std::optional<std::string>(const std::string&)> agent;
  // Approve on the spot (netbox launch --ask): an approval op line (proxy/approval_ops.hpp)
  // to its reply line. GET /api/pending, POST /api/approve and /api/deny (a JSON body with
  // "agent", "host" and for approve "scope"). Served only behind the bearer token: without
  // one, anybody who reaches the endpoint could approve. Null: none.
  std::function<std::string(const std::string& op_line)> approvals;
};

class AdminServer {
 public:
  // Binds at once; throws std::runtime_error naming the address when it cannot.
  explicit AdminServer(AdminOptions options);
  ~AdminServer();  // stops
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  void stop();
  boost::asio::ip::tcp::endpoint local_endpoint() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace netbox::dashboards
