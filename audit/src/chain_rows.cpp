// The rows the writers link, encoded from the values they bind (chain.hpp): the column
// order is chained_tables()'s, each function the mirror of one INSERT in
// writer_statements.cpp and pg_write_store.cpp.
#include "chain.hpp"

namespace netbox::audit::detail {
namespace {

std::optional<std::int64_t> optional_int(std::optional<int> v) {
  return v ? std::optional<std::int64_t>(*v) : std::nullopt;
}

Touched finish(const char* table, std::int64_t id, std::string_view ts, const RowEncoding& e) {
  return {chained_table(table), id, std::string(ts.empty() ? "~" : ts), e.sha()};
}

}  // namespace

RequestValues request_values(const AuditRecord& r, const Completion* c) {
  auto pick = [](std::string_view completion, std::string_view record) {
    return completion.empty() ? record : completion;
  };
  if (!c) return {r.resolved_addr, r.decision, r.rule, r.reason, r.error, r.status,
                  static_cast<std::int64_t>(r.bytes_up), static_cast<std::int64_t>(r.bytes_down), r.duration_ms};
  return {pick(c->resolved_addr, r.resolved_addr), pick(c->decision, r.decision), pick(c->rule, r.rule),
          pick(c->reason, r.reason), c->error, c->status, static_cast<std::int64_t>(c->bytes_up),
          static_cast<std::int64_t>(c->bytes_down), c->duration_ms};
}

Touched request_touched(std::int64_t id, std::string_view ts, const AuditRecord& r, const Completion* c,
                        std::int64_t parent_id, std::string_view proxy_id) {
  const RequestValues v = request_values(r, c);
  RowEncoding e(*chained_table("requests"));
  e.integer(id).text(ts).text(r.agent).text(r.client_addr).text(r.kind).text(r.method).text(r.host);
  e.integer(std::int64_t{r.port}).text(r.path).text(v.resolved_addr).text(v.decision).text(v.rule).text(v.reason);
  e.integer(optional_int(v.status)).integer(v.bytes_up).integer(v.bytes_down).integer(v.duration_ms).text(v.error);
  e.integer(static_cast<std::int64_t>(r.count));
  e.integer(parent_id ? std::optional<std::int64_t>(parent_id) : std::nullopt).text(proxy_id);
  e.integer(r.origin.pid).text(r.origin.exe).text(r.origin.argv);  // row tag v2
  return finish("requests", id, ts, e);
}

Touched event_touched(std::int64_t id, std::string_view ts, const Event& ev, std::string_view proxy_id) {
  RowEncoding e(*chained_table("events"));
  e.integer(id).text(ts).text(ev.kind).text(ev.message).text(ev.detail).integer(static_cast<std::int64_t>(ev.count));
  e.text(proxy_id);
  return finish("events", id, ts, e);
}

Touched agent_touched(std::int64_t id, std::string_view started, const AgentRecord& a, std::string_view proxy_id) {
  RowEncoding e(*chained_table("agents"));
  e.integer(id).text(a.name).integer(a.pid).text(a.command_line).text(a.policy_digest).text(a.address);
  e.text(started).null().null().null().text(a.sandbox).text(proxy_id);  // not yet ended
  return finish("agents", id, started, e);
}

Touched agent_exit_touched(std::int64_t id, std::string_view ended, const AgentExit& x, std::string_view proxy_id) {
  RowEncoding e(*chained_table("agents"));
  e.integer(id).text(x.name).integer(x.pid).null().null().null().null();  // no start recorded
  e.text(ended).integer(optional_int(x.exit_status)).text(x.resource_usage).null().text(proxy_id);
  return finish("agents", id, ended, e);
}

Touched returned_touched(const ChainedTable& table, const Row& row) {
  return {&table, row.column_int(0), link_ts(table, row), row_sha(table, row)};
}

std::string qualified_columns(const ChainedTable& table, std::string_view alias) {
  std::string out;
  std::string_view cols = table.columns;
  while (!cols.empty()) {
    const auto comma = cols.find(',');
    std::string_view c = cols.substr(0, comma);
    while (!c.empty() && c.front() == ' ') c.remove_prefix(1);
    if (!out.empty()) out += ", ";
    out.append(alias).append(".").append(c);
    if (comma == std::string_view::npos) break;
    cols.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace netbox::audit::detail
