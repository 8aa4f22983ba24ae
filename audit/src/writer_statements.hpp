#pragma once
// The writer connection's prepared statements: created once, reused for every row.
#include "chain.hpp"
#include "netbox/audit/record.hpp"
#include "sqlite.hpp"

#include <cstdint>
#include <optional>
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

  // Each returns the row it wrote or changed as its chain link encodes it (chain.hpp), from
  // the values bound or the UPDATE's RETURNING list: nothing is read back.
  // With `completion`, the row is written final as it stands (the same values complete_request
  // would set), so a request that ended before its row was written costs one statement.
  // `parent_id`: the id of the row this one belongs to (an inspected tunnel's); 0: NULL.
  Touched insert_request(const AuditRecord& record, const Completion* completion = nullptr,
                         std::int64_t parent_id = 0);
  // nullopt when no row has that id.
  std::optional<Touched> complete_request(std::int64_t rowid, const Completion& completion);
  Touched insert_event(const Event& event);
  Touched insert_agent(const AgentRecord& agent);
  Touched agent_exited(const AgentExit& exit);

 private:
  sqlite3* db_;
  std::string proxy_id_;
  Statement begin_, commit_, rollback_;
  Statement insert_request_, complete_request_;
  Statement insert_event_;
  Statement insert_agent_, update_agent_exit_, insert_agent_exit_;
};

}  // namespace netbox::audit::detail
