#pragma once
// The audit chain (docs/audit.md "Integrity"): every row a writer makes or completes is
// covered by its proxy's chain, in commit order per proxy. Each row's digest is
//   SHA-256(tag 0 table 0 columns): RowEncoding below, fed by the writer
//   with the values it binds (or an UPDATE's RETURNING row) and by `netbox audit verify`
//   with the values it reads back, so nothing is read back on the writer's side.
// Since schema version 9 the chain has one link per written batch (audit_chain_batches):
//   members = per row of the batch: table index, id, link ts, digest (encode_members);
//   hash    = SHA-256("netbox-audit-batch-link-v2" 0 previous hash (32 bytes) +
//             length-prefixed proxy_id, seq + members);
// so a batch costs one INSERT and its rows one SHA-256 each, and verify still names the row
// that does not match (it recomputes each member's digest). The tag is the encoding's: rows
// linked before schema version 11 "netbox-audit-row-v1"; requests since then
// "netbox-audit-row-v2", whose columns add client_pid, client_exe and client_argv. A
// member's table byte names its encoding, so old rows keep verifying as they were written. Schema version 8 wrote one link
// per row (audit_chain):
//   hash   = SHA-256("netbox-audit-link-v1" 0 previous hash (32 bytes) + length-prefixed
//            proxy_id, seq, table, row_id, ts + digest (32 bytes)).
// Both kinds share the proxy's sequence (audit_chain_heads), so a store upgraded from 8
// verifies across the change.
// A row updated later (a request opened at admission and completed at its end, an agent
// at its exit) is covered a second time then; its latest cover must match the row as it stands.
// A batch (or, in version 8, a batch's last link) carries an Ed25519 signature of
//   "netbox-audit-batch-v1" 0 proxy_id 0 seq 0 hash (hex)
// when the writer has a signing key: the hash covers the whole chain before it.
#include "netbox/audit/record.hpp"
#include "row.hpp"

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace netbox::audit::detail {

using Sha256 = std::array<unsigned char, 32>;

// The hash before the first link, and what a chain whose links were all pruned starts from.
inline constexpr std::string_view kZeroHash = "0000000000000000000000000000000000000000000000000000000000000000";

// The chained tables and their columns, in the order they are hashed.
struct ChainedTable {
  const char* name;
  const char* columns;  // the SELECT list; "id" first
  // The column pruning goes by (what a link records as its ts), and the one a link of a row
  // still open records instead (an agent not yet exited: its start), so that once the row
  // is pruned its older links can go too.
  const char* prune_column;
  const char* open_column;
  const char* tag;  // the row tag its digests begin with
};
// The encodings writers use now, one per table (verify reads each table's rows with these columns).
std::span<const ChainedTable* const> chained_tables();
const ChainedTable* chained_table(std::string_view name);
// The table's schema-8 encoding (row tag v1), which version-8 row links used.
const ChainedTable* v1_table(std::string_view name);

std::string to_hex(std::span<const unsigned char> bytes);

// The one encoding of a row's values, column by column in `table.columns` order: NULL and
// empty text alike as 'N' (PostgreSQL's writer stores an empty optional value as NULL, a
// NOT NULL one as ''); any other value as 'V' + 4-byte big-endian length + its text as
// PostgreSQL stores it (append_pg_text: a NUL or a byte that is not UTF-8 becomes the four
// characters \xNN, which SQLite keeps raw), integers in decimal (as both stores print them).
class RowEncoding {
 public:
  explicit RowEncoding(const ChainedTable& table);
  ~RowEncoding();  // gives its buffer back to the thread's spare (chain.cpp)
  RowEncoding(const RowEncoding&) = delete;
  RowEncoding& operator=(const RowEncoding&) = delete;
  RowEncoding& text(std::string_view value);
  RowEncoding& integer(std::int64_t value);
  RowEncoding& integer(std::optional<std::int64_t> value);  // nullopt: NULL
  RowEncoding& null();
  // Throws std::logic_error unless every column was given (a writer out of step with
  // chained_tables()).
  Sha256 sha() const;
  std::string digest() const { return to_hex(sha()); }

 private:
  const ChainedTable* table_;
  int given_ = 0;
  std::string data_;
};

// The digest of a row read with `table`'s columns (or a newer encoding's, whose columns
// begin with them: the rest is not covered).
Sha256 row_sha(const ChainedTable& table, const Row& row);
std::string row_digest(const ChainedTable& table, const Row& row);  // hex
// What a link records as its ts: the row's prune column, else its open column, else "~"
// (after every timestamp: never counted as pruned).
std::string link_ts(const ChainedTable& table, const Row& row);

// One row covered by a batch.
struct Member {
  const ChainedTable* table;
  std::int64_t id;
  std::string ts;  // link_ts
  Sha256 digest;
};

// One link as verify reads it: a version-8 row link, or a batch (`members` set; `table`
// "batch", `row_id` 0, `digest` empty).
struct Link {
  std::string proxy_id;
  std::int64_t seq = 0;
  std::string table;
  std::int64_t row_id = 0;
  std::string ts;
  std::string digest;  // hex
  std::string hash;    // hex
  std::string signature;  // hex; empty: none
  std::vector<Member> members;
  std::string member_bytes;  // a batch's members as stored
};

// A batch's members as stored, and back; nullopt for bytes that are not such a list.
std::string encode_members(std::span<const Member* const> members);
std::optional<std::vector<Member>> decode_members(std::string_view bytes);
// The hash (hex) of batch `link` following `previous` (hex).
std::string batch_hash(std::string_view previous, const Link& link);

// The hash of `link` (its hash field ignored) following `previous` (hex).
std::string link_hash(std::string_view previous, const Link& link);
// What a batch signature signs.
std::string batch_message(const Link& last);


// Ed25519 keys as PEM files (openssl genpkey -algorithm ed25519; docs/audit.md).
class Signer {
 public:
  // Throws std::runtime_error naming `key_file` and `flag` when it is not an Ed25519 private key.
  Signer(const std::filesystem::path& key_file, std::string_view flag);
  ~Signer();
  std::string sign(std::string_view message) const;  // hex

 private:
  struct Key;
  std::unique_ptr<Key> key_;
};

class SignatureCheck {
 public:
  // Throws std::runtime_error naming `key_file` and `flag` when it is not an Ed25519 public key.
  SignatureCheck(const std::filesystem::path& key_file, std::string_view flag);
  ~SignatureCheck();
  bool valid(std::string_view message, std::string_view signature_hex) const;

 private:
  struct Key;
  std::unique_ptr<Key> key_;
};

// A row the open batch wrote or changed, as the writer left it.
using Touched = Member;

// The rows as the writers bind them (write_store.hpp's operations; `ts`, `started`, `ended`:
// the formatted timestamps they bind; an empty `proxy_id` is stored NULL).
Touched request_touched(std::int64_t id, std::string_view ts, const AuditRecord& r, const Completion* c,
                        std::int64_t parent_id, std::string_view proxy_id);
Touched event_touched(std::int64_t id, std::string_view ts, const Event& e, std::string_view proxy_id);
Touched agent_touched(std::int64_t id, std::string_view started, const AgentRecord& a, std::string_view proxy_id);
// An exit with no start row, written as a row of its own.
Touched agent_exit_touched(std::int64_t id, std::string_view ended, const AgentExit& x, std::string_view proxy_id);
// A row an UPDATE changed, from its RETURNING list (`table.columns`).
Touched returned_touched(const ChainedTable& table, const Row& row);
// `table.columns` with each name prefixed by `alias` and a dot (an UPDATE ... FROM's RETURNING).
std::string qualified_columns(const ChainedTable& table, std::string_view alias);

// The values insert_request stores for a request (the completion's where it has one; as
// complete_request's COALESCE, an empty completion text keeps the record's).
struct RequestValues {
  std::string_view resolved_addr, decision, rule, reason, error;
  std::optional<int> status;
  std::int64_t bytes_up, bytes_down;
  std::optional<std::int64_t> duration_ms;
};
RequestValues request_values(const AuditRecord& r, const Completion* c);

// The backend's part of sealing a batch, inside the batch's open transaction.
class ChainStore {
 public:
  struct Head {
    std::int64_t seq = 0;
    std::string hash{kZeroHash};
  };
  // The proxy's last link, locked until the transaction ends (created when absent).
  virtual Head lock_head(const std::string& proxy_id) = 0;
  // Stores the batch link (`members` as bytes, `hash` and `signature` as bytes) and moves
  // the head (hex) to it.
  struct Batch {
    const std::string& proxy_id;
    std::int64_t seq;
    std::string_view ts;  // the newest member's link ts
    std::string_view members;
    std::string_view hash, signature;
  };
  virtual void append(const Batch& batch) = 0;

 protected:
  ~ChainStore() = default;
};

// Links the batch: one member per touched row (the first touch of a row in the batch decides
// its place, the last its content), the link signed with `signer`.
void seal(ChainStore& store, const std::string& proxy_id, const std::vector<Touched>& touched, const Signer* signer);

}  // namespace netbox::audit::detail

namespace netbox::audit::detail {

// Runs one statement with ?1.. parameters (text) and returns its rows, NULL as "".
using RunSql = std::function<std::vector<std::vector<std::string>>(const std::string& sql,
                                                                  const std::vector<std::string>& params)>;

// Retention's part, inside the prune's transaction after its deletes: records that rows
// before `before` may be gone (verify then accepts a link whose row is missing only when
// the link's ts is older), and drops each proxy's leading links whose rows are all gone,
// keeping the last one's hash as the chain's anchor, so the chain still verifies from there.
void trim_chain(const RunSql& run, const std::string& before);
// The chain's starting point as the audit_prune event records it (PruneCounts::chain).
std::string chain_record(const RunSql& run);

}  // namespace netbox::audit::detail
