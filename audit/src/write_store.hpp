#pragma once
// What the writer thread writes through: one batch at a time, begin() .. commit(), for
// either backend. Only the writer thread uses it. A failed batch is abandon()ed and later
// written again from the same items in the same order (with more appended), so a store may
// hand out the same ids again on that retry (PostgreSQL does: its retry after a commit
// whose answer was lost then adds no row twice).
#include "netbox/audit/prune.hpp"
#include "netbox/audit/record.hpp"
#include "netbox/audit/writer.hpp"

#include <cstdint>
#include <memory>

namespace netbox::audit::detail {

class WriteStore {
 public:
  virtual ~WriteStore() = default;

  virtual void begin() = 0;
  // Throws when the batch did not commit.
  virtual void commit() = 0;
  // Ends a failed batch; the next begin() starts over.
  virtual void abandon() = 0;

  // The row's id. With `completion`, the row is written final as it stands.
  // `parent_id`: the id of the row this one belongs to (an inspected tunnel's); 0: NULL.
  // `record` and `completion` may be read until commit() or abandon() returns (PostgreSQL's
  // store encodes its rows while their COPY runs): the writer keeps its batch until then.
  virtual std::int64_t insert_request(const AuditRecord& record, const Completion* completion,
                                      std::int64_t parent_id) = 0;
  // false when the store knows no row has that id.
  virtual bool complete_request(std::int64_t id, const Completion& completion) = 0;
  virtual void insert_event(const Event& event) = 0;
  virtual void insert_agent(const AgentRecord& agent) = 0;
  virtual void agent_exited(const AgentExit& exit) = 0;

  // The spool's shipped-up-to marker (writer.cpp): the largest spool seq the server holds
  // an audit_spool_shipped event for, committed with the rows it names; 0: none.
  virtual std::int64_t shipped_upto(const std::string& /*spool_key*/) { return 0; }
  // The failed batch will not be written again (its rows were found shipped): its ids must
  // not be handed to other rows.
  virtual void forget_retry() {}

  // Retention, outside any batch: see prune_batch in prune.hpp.
  virtual PruneCounts prune_batch(Clock::time_point cutoff, Clock::time_point now, std::uint64_t limit) = 0;
};

// Opens (creating and migrating) the store options.db_path names. Throws std::runtime_error
// naming it (DatabaseRejected for one that is not ours or too new).
std::unique_ptr<WriteStore> open_write_store(const WriterOptions& options);
std::unique_ptr<WriteStore> open_sqlite_write_store(const WriterOptions& options);
std::unique_ptr<WriteStore> open_postgresql_write_store(const WriterOptions& options);

}  // namespace netbox::audit::detail
