#include "proxy_fixture.hpp"

#include "netbox/audit/writer.hpp"
#include "netbox/proxy/endpoint.hpp"

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <thread>

namespace netbox::test {

namespace {

std::string text(sqlite3_stmt* s, int i) {
  auto* p = sqlite3_column_text(s, i);
  return p ? reinterpret_cast<const char*>(p) : "";
}

}  // namespace

void ProxyTest::TearDown() { stop_proxy(); }

StoreWriteLock::StoreWriteLock(const std::filesystem::path& db) {
  if (sqlite3_open(db.c_str(), &db_) != SQLITE_OK ||
      sqlite3_exec(db_, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr) != SQLITE_OK) {
    sqlite3_close(db_);
    db_ = nullptr;
  }
}

void StoreWriteLock::release() {
  if (!db_) return;
  sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(db_);
  db_ = nullptr;
}

bool ProxyTest::audit_turns_unhealthy() {
  for (int i = 0; i < 600; ++i) {
    if (!server->counters().audit_healthy) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

void ProxyTest::stop_proxy() {
  if (server) {
    server->stop();
    server.reset();
  }
}

std::string ProxyTest::base_policy(const std::string& extra) const {
  auto j = nlohmann::json::parse(R"({"version": 1, "allow": ["upstream.test"], "internal": {"allow": ["127.0.0.1/32"]},
                                     "resolve": {"upstream.test": ["127.0.0.1"]}})");
  j["ports"] = {upstream.port()};
  if (!extra.empty()) j.merge_patch(nlohmann::json::parse("{" + extra + "}"));
  return j.dump(2);
}

std::string ProxyTest::upstream_url(const std::string& path) const {
  return "http://upstream.test:" + std::to_string(upstream.port()) + path;
}

void ProxyTest::start_proxy(const std::string& policy_json, std::vector<std::string> dns_servers, unsigned threads,
                            std::optional<std::string> control) {
  policy_path = dir.write("policy.json", policy_json);
  db_path = dir.path() / "audit.db";
  proxy::ProxyOptions o;
  o.listen.emplace_back(boost::asio::ip::make_address("127.0.0.1"), 0);
  o.policy_file = policy_path;
  o.watch_policy_file = false;  // the tests reload when they mean to; reload_test.cpp watches
  o.audit_db = db_path;
  o.threads = threads;
  o.shutdown_grace = std::chrono::milliseconds(500);
  o.audit_hold = audit_hold;
  for (const auto& d : dns_servers) {
    const auto ep = proxy::parse_endpoint(d);
    o.dns_servers.emplace_back(ep.address(), ep.port());
  }
  if (control) o.control_socket = *control;
  if (configure) configure(o);
  server = std::make_unique<proxy::Server>(std::move(o));
  server->start();
  port = server->local_endpoints().at(0).port();
}

std::vector<AuditRow> ProxyTest::rows() {
  // A row is completed when its exchange ends, a moment after the agent has the last
  // byte: wait (bounded) until every row is complete, then read.
  std::vector<AuditRow> out;
  for (int i = 0; i < 250; ++i) {
    out = read_rows();
    bool complete = true;
    for (const auto& r : out) complete = complete && r.duration_ms.has_value();
    if (complete) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return out;
}

std::vector<AuditRow> ProxyTest::read_rows() {
  server->audit().flush();
  sqlite3* db = nullptr;
  std::vector<AuditRow> out;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    ADD_FAILURE() << "cannot open " << db_path;
    return out;
  }
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db,
                     "SELECT agent, client_addr, kind, method, host, path, resolved_addr, decision, rule, reason, "
                     "error, port, status, bytes_up, bytes_down, duration_ms FROM requests ORDER BY id",
                     -1, &s, nullptr);
  while (sqlite3_step(s) == SQLITE_ROW) {
    AuditRow r;
    r.agent = text(s, 0);
    r.client_addr = text(s, 1);
    r.kind = text(s, 2);
    r.method = text(s, 3);
    r.host = text(s, 4);
    r.path = text(s, 5);
    r.resolved_addr = text(s, 6);
    r.decision = text(s, 7);
    r.rule = text(s, 8);
    r.reason = text(s, 9);
    r.error = text(s, 10);
    r.port = sqlite3_column_int(s, 11);
    if (sqlite3_column_type(s, 12) != SQLITE_NULL) r.status = sqlite3_column_int(s, 12);
    r.bytes_up = sqlite3_column_int64(s, 13);
    r.bytes_down = sqlite3_column_int64(s, 14);
    if (sqlite3_column_type(s, 15) != SQLITE_NULL) r.duration_ms = sqlite3_column_int64(s, 15);
    out.push_back(std::move(r));
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return out;
}

std::vector<EventRow> ProxyTest::events() {
  server->audit().flush();
  sqlite3* db = nullptr;
  std::vector<EventRow> out;
  sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db, "SELECT kind, message, coalesce(detail, '') FROM events ORDER BY id", -1, &s, nullptr);
  while (sqlite3_step(s) == SQLITE_ROW) out.push_back({text(s, 0), text(s, 1), text(s, 2)});
  sqlite3_finalize(s);
  sqlite3_close(db);
  return out;
}

AuditRow ProxyTest::last_row() {
  auto all = rows();
  if (all.empty()) {
    ADD_FAILURE() << "no audit rows";
    return {};
  }
  return all.back();
}

}  // namespace netbox::test
