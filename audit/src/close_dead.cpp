#include "netbox/audit/close_dead.hpp"

#include "netbox/audit/query.hpp"
#include "netbox/audit/schema.hpp"
#include "chain.hpp"
#include "chain_stores.hpp"
#include "reader.hpp"
#include "sqlite.hpp"

#include <nlohmann/json.hpp>

namespace netbox::audit {

std::vector<ClosedAgent> close_dead_agents(const std::filesystem::path& path, const std::string& proxy_id,
                                           const std::function<bool(std::int64_t, Clock::time_point)>& alive) {
  detail::Db db(open_for_writing(path, false));
  struct Open {
    std::int64_t id, pid;
    std::string name, started;
  };
  std::vector<Open> open;
  {
    detail::Statement s(db.get(), "SELECT id, pid, name, started FROM agents WHERE ended IS NULL AND "
                                  "(proxy_id IS NULL OR proxy_id = ?1) ORDER BY id");
    s.bind(1, proxy_id);
    while (s.step()) open.push_back({s.column_int(0), s.column_int(1), s.column_text(2), s.column_text(3)});
  }
  std::vector<ClosedAgent> closed;
  const std::string now = format_timestamp(Clock::now());
  for (const auto& a : open) {
    if (alive(a.pid, detail::stored_time(a.started))) continue;
    const std::string reason = "its launcher died (pid " + std::to_string(a.pid) + " is gone); closed by netbox gc";
    detail::exec(db.get(), "BEGIN IMMEDIATE");
    try {
      // Every row changed here gets its link in the audit chain, as the writer's do
      // (RETURNING: the rows as they now stand), or `netbox audit verify` would name them.
      const auto& agents = *detail::chained_table("agents");
      const auto& requests_table = *detail::chained_table("requests");
      const auto& events = *detail::chained_table("events");
      std::vector<detail::Touched> touched;
      detail::Statement agent(db.get(), "UPDATE agents SET ended = ?1, resource_usage = ?2 WHERE id = ?3 AND ended IS NULL "
                                        "RETURNING " + std::string(agents.columns));
      agent.bind(1, now);
      agent.bind(2, nlohmann::json{{"ended_by", "gc"}, {"reason", reason}}.dump());
      agent.bind(3, a.id);
      while (agent.step()) touched.push_back(detail::returned_touched(agents, agent));
      // Its requests still open: the rows their completion would have updated.
      detail::Statement requests(
          db.get(), "UPDATE requests SET duration_ms = MAX(0, CAST((julianday(?1) - julianday(ts)) * 86400000 AS INTEGER)), "
                    "error = ?2 WHERE agent = ?3 AND duration_ms IS NULL AND ts >= ?4 RETURNING " +
                        std::string(requests_table.columns));
      requests.bind(1, now);
      requests.bind(2, "closed by netbox gc: " + reason);
      requests.bind(3, a.name);
      requests.bind(4, a.started);
      const std::size_t before = touched.size();
      while (requests.step()) touched.push_back(detail::returned_touched(requests_table, requests));
      ClosedAgent c{a.name, a.pid, static_cast<std::uint64_t>(touched.size() - before)};
      detail::Statement event(db.get(),
                              "INSERT INTO events (ts, kind, message, detail, proxy_id) VALUES (?1, 'agent_closed', ?2, ?3, ?4) "
                              "RETURNING " + std::string(events.columns));
      event.bind(1, now);
      event.bind(2, "agent " + a.name + ": " + reason + "; " + std::to_string(c.requests) + " open requests closed");
      event.bind(3, nlohmann::json{{"agent", a.name}, {"pid", a.pid}, {"requests", c.requests}}.dump());
      event.bind_text_or_null(4, proxy_id);
      while (event.step()) touched.push_back(detail::returned_touched(events, event));
      // gc holds no signing key: these links are unsigned (docs/audit.md, Integrity).
      detail::SqliteChainStore chain(db.get());
      detail::seal(chain, proxy_id, touched, nullptr);
      detail::exec(db.get(), "COMMIT");
      closed.push_back(std::move(c));
    } catch (...) {
      sqlite3_exec(db.get(), "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }
  return closed;
}

}  // namespace netbox::audit
