#pragma once
// The writer connection's prepared statements: created once, reused for every row.
#include "netbox/audit/record.hpp"
#include "sqlite.hpp"

#include <cstdint>
#include <string>

namespace netbox::audit::detail {

class WriterStatements {
 public:
  // Every row written carries `proxy_id` (NULL when empty).
  WriterStatements(sqlite3* db, std::string proxy_id);

  void begin();
  void commit();
  // Ends a failed transaction (if one is still open) and makes every statement reusable.
  void abandon();

  // With `completion`, the row is written final as it stands (the same values complete_request
  // would set), so a request that ended before its row was written costs one statement.
  // `parent_id`: the id of the row this one belongs to (an inspected tunnel's); 0: NULL.
  std::int64_t insert_request(const AuditRecord& record, const Completion* completion = nullptr,
                              std::int64_t parent_id = 0);
  // false when no row has that id.
  bool complete_request(std::int64_t rowid, const Completion& completion);
  // Each returns the id of the row it wrote or changed (agent_exited: 0 if none).
  std::int64_t insert_event(const Event& event);
  std::int64_t insert_agent(const AgentRecord& agent);
  std::int64_t agent_exited(const AgentExit& exit);

 private:
  sqlite3* db_;
  std::string proxy_id_;
  Statement begin_, commit_, rollback_;
  Statement insert_request_, complete_request_;
  Statement insert_event_;
  Statement insert_agent_, update_agent_exit_, insert_agent_exit_;
};

}  // namespace netbox::audit::detail
