#include "writer_statements.hpp"

#include "netbox/audit/query.hpp"

namespace netbox::audit::detail {
namespace {

// Runs a statement that returns no rows and leaves it ready for the next use.
void run(Statement& statement) {
  statement.step();
  statement.reset();
}

}  // namespace

WriterStatements::WriterStatements(sqlite3* db, std::string proxy_id)
    : db_(db),
      proxy_id_(std::move(proxy_id)),
      begin_(db, "BEGIN IMMEDIATE"),
      commit_(db, "COMMIT"),
      rollback_(db, "ROLLBACK"),
      insert_request_(db,
                      "INSERT INTO requests (ts, agent, client_addr, kind, method, host, port, path, "
                      "resolved_addr, decision, rule, reason, status, bytes_up, bytes_down, duration_ms, error, count, "
                      "parent_id, proxy_id, client_pid, client_exe, client_argv) "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, "
                      "?21, ?22, ?23)"),
      complete_request_(db,
                        "UPDATE requests SET status = ?1, bytes_up = ?2, bytes_down = ?3, duration_ms = ?4, "
                        "error = ?5, resolved_addr = COALESCE(?6, resolved_addr), decision = COALESCE(?8, decision), "
                        "rule = COALESCE(?9, rule), reason = COALESCE(?10, reason) WHERE id = ?7 RETURNING " +
                            std::string(chained_table("requests")->columns)),
      insert_event_(db, "INSERT INTO events (ts, kind, message, detail, count, proxy_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"),
      insert_agent_(db,
                    "INSERT INTO agents (name, pid, command_line, policy_digest, address, started, sandbox, proxy_id) "
                    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
      update_agent_exit_(db,
                         "UPDATE agents SET ended = ?3, exit_status = ?4, resource_usage = ?5 WHERE id = "
                         "(SELECT id FROM agents WHERE name = ?1 AND pid = ?2 AND ended IS NULL "
                         "ORDER BY id DESC LIMIT 1) RETURNING " +
                             std::string(chained_table("agents")->columns)),
      insert_agent_exit_(db,
                         "INSERT INTO agents (name, pid, ended, exit_status, resource_usage, proxy_id) "
                         "VALUES (?1, ?2, ?3, ?4, ?5, ?6)") {}

void WriterStatements::begin() { run(begin_); }

void WriterStatements::commit() { run(commit_); }

void WriterStatements::abandon() {
  for (Statement* s : {&begin_, &commit_, &insert_request_, &complete_request_, &insert_event_, &insert_agent_,
                       &update_agent_exit_, &insert_agent_exit_})
    s->reset();
  // SQLite may already have rolled back by itself (after SQLITE_FULL, for example).
  if (!sqlite3_get_autocommit(db_)) {
    try {
      run(rollback_);
    } catch (const SqliteError&) {
      rollback_.reset();
    }
  }
}

Touched WriterStatements::insert_request(const AuditRecord& r, const Completion* c, std::int64_t parent_id) {
  auto& s = insert_request_;
  const RequestValues v = request_values(r, c);
  // Text is bound without a copy (bind_view): the record, the completion and `ts` all
  // outlive run(s), which steps and resets the statement before returning. `ts` is a
  // fixed buffer: one row per request, no allocation for its time.
  const TimestampText ts(r.ts);
  s.bind_view(1, ts.view());
  s.bind_view(2, r.agent);
  s.bind_view_or_null(3, r.client_addr);
  s.bind_view(4, r.kind);
  s.bind_view_or_null(5, r.method);
  s.bind_view(6, r.host);
  s.bind(7, std::int64_t{r.port});
  s.bind_view_or_null(8, r.path);
  s.bind_view_or_null(9, v.resolved_addr);
  s.bind_view(10, v.decision);
  s.bind_view_or_null(11, v.rule);
  s.bind_view_or_null(12, v.reason);
  if (v.status) s.bind(13, std::int64_t{*v.status});
  s.bind(14, v.bytes_up);
  s.bind(15, v.bytes_down);
  if (v.duration_ms) s.bind(16, *v.duration_ms);
  s.bind_view_or_null(17, v.error);
  s.bind(18, static_cast<std::int64_t>(r.count));
  if (parent_id != 0) s.bind(19, parent_id);
  s.bind_view_or_null(20, proxy_id_);
  if (r.origin.pid) s.bind(21, *r.origin.pid);
  s.bind_view_or_null(22, r.origin.exe);
  s.bind_view_or_null(23, r.origin.argv);
  run(s);
  return request_touched(sqlite3_last_insert_rowid(db_), ts.view(), r, c, parent_id, proxy_id_);
}

std::optional<Touched> WriterStatements::complete_request(std::int64_t rowid, const Completion& c) {
  auto& s = complete_request_;
  if (c.status) s.bind(1, std::int64_t{*c.status});
  s.bind(2, static_cast<std::int64_t>(c.bytes_up));
  s.bind(3, static_cast<std::int64_t>(c.bytes_down));
  s.bind(4, c.duration_ms);
  s.bind_text_or_null(5, c.error);
  s.bind_text_or_null(6, c.resolved_addr);  // NULL keeps what the insert stored
  s.bind(7, rowid);
  s.bind_text_or_null(8, c.decision);  // NULL keeps the decision inserted
  s.bind_text_or_null(9, c.rule);
  s.bind_text_or_null(10, c.reason);
  // RETURNING: the row as completed, for its chain link.
  std::optional<Touched> row;
  if (s.step()) row = returned_touched(*chained_table("requests"), s);
  s.reset();
  return row;
}

Touched WriterStatements::insert_event(const Event& e) {
  auto& s = insert_event_;
  const std::string ts = format_timestamp(e.ts);
  s.bind_view(1, ts);
  s.bind(2, e.kind);
  s.bind(3, e.message);
  s.bind_text_or_null(4, e.detail);
  s.bind(5, static_cast<std::int64_t>(e.count));
  s.bind_view_or_null(6, proxy_id_);
  run(s);
  return event_touched(sqlite3_last_insert_rowid(db_), ts, e, proxy_id_);
}

Touched WriterStatements::insert_agent(const AgentRecord& a) {
  auto& s = insert_agent_;
  const std::string started = format_timestamp(a.started);
  s.bind(1, a.name);
  s.bind(2, a.pid);
  s.bind_text_or_null(3, a.command_line);
  s.bind_text_or_null(4, a.policy_digest);
  s.bind_text_or_null(5, a.address);
  s.bind_view(6, started);
  s.bind_text_or_null(7, a.sandbox);
  s.bind_view_or_null(8, proxy_id_);
  run(s);
  return agent_touched(sqlite3_last_insert_rowid(db_), started, a, proxy_id_);
}

Touched WriterStatements::agent_exited(const AgentExit& x) {
  const std::string ended = format_timestamp(x.ended);
  auto bind_exit = [&x, &ended](Statement& s) {
    s.bind(1, x.name);
    s.bind(2, x.pid);
    s.bind_view(3, ended);
    if (x.exit_status) s.bind(4, std::int64_t{*x.exit_status});
    s.bind_text_or_null(5, x.resource_usage);
  };
  bind_exit(update_agent_exit_);
  // RETURNING: the row the exit completed, for the audit chain.
  std::optional<Touched> updated;
  if (update_agent_exit_.step()) updated = returned_touched(*chained_table("agents"), update_agent_exit_);
  update_agent_exit_.reset();
  if (updated) return std::move(*updated);
  // No start was recorded (the start row was refused, or another process launched it):
  // keep the exit anyway rather than lose it.
  bind_exit(insert_agent_exit_);
  insert_agent_exit_.bind_view_or_null(6, proxy_id_);
  run(insert_agent_exit_);
  return agent_exit_touched(sqlite3_last_insert_rowid(db_), ended, x, proxy_id_);
}

}  // namespace netbox::audit::detail
