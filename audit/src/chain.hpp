#pragma once
// The audit chain (docs/audit.md "Integrity"): every row a writer makes or completes gets a
// link in audit_chain, in commit order per proxy:
//   digest = SHA-256("netbox-audit-row-v1" 0 table 0 columns), each column of chained_columns()
//            as 'N' for NULL or 'V' + 4-byte big-endian length + its text as the store
//            returns it (integers in decimal), read back from the store inside the batch's
//            own transaction, so the writer and `netbox audit verify` encode the same bytes;
//   hash   = SHA-256("netbox-audit-link-v1" 0 previous hash (32 bytes) + length-prefixed
//            proxy_id, seq, table, row_id, ts + digest (32 bytes)).
// A row updated later (a request opened at admission and completed at its end, an agent
// at its exit) gets a second link then; its latest link must match the row as it stands.
// The last link of a batch carries an Ed25519 signature of
//   "netbox-audit-batch-v1" 0 proxy_id 0 seq 0 hash
// when the writer has a signing key: the hash covers the whole chain before it.
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
};
std::span<const ChainedTable> chained_tables();
const ChainedTable* chained_table(std::string_view name);

// The digest of a row read with `table`'s columns (hex).
std::string row_digest(const ChainedTable& table, const Row& row);
// What a link records as its ts: the row's prune column, else its open column, else "~"
// (after every timestamp: never counted as pruned).
std::string link_ts(const ChainedTable& table, const Row& row);

struct Link {
  std::string proxy_id;
  std::int64_t seq = 0;
  std::string table;
  std::int64_t row_id = 0;
  std::string ts;
  std::string digest;  // hex
  std::string hash;    // hex
  std::string signature;  // hex; empty: none
};

// The hash of `link` (its hash field ignored) following `previous` (hex).
std::string link_hash(std::string_view previous, const Link& link);
// What a batch signature signs.
std::string batch_message(const Link& last);

std::string to_hex(std::span<const unsigned char> bytes);

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

// A row the open batch wrote or changed.
struct Touched {
  const ChainedTable* table;
  std::int64_t id;
};

// The backend's part of sealing a batch, inside the batch's open transaction.
class ChainStore {
 public:
  struct Head {
    std::int64_t seq = 0;
    std::string hash{kZeroHash};
  };
  // The proxy's last link, locked until the transaction ends (created when absent).
  virtual Head lock_head(const std::string& proxy_id) = 0;
  // Calls `row` for each of `ids` still in `table` (any order), with the id as column 0.
  virtual void read_rows(const ChainedTable& table, const std::vector<std::int64_t>& ids,
                         const std::function<void(const Row&)>& row) = 0;
  // Stores `links` and moves the head to the last of them.
  virtual void append(const std::vector<Link>& links) = 0;

 protected:
  ~ChainStore() = default;
};

// Links every touched row (the first touch of a row in the batch decides its place; a row
// the batch touched but no longer finds gets none), signs the last link with `signer`.
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

}  // namespace netbox::audit::detail
