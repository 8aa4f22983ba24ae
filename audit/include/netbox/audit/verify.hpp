#pragma once
// `netbox audit verify`: checks the audit chain (docs/audit.md "Integrity") of every proxy
// that wrote the store, on either backend.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace netbox::audit {

struct ChainReport {
  // One line per proxy: its links, where they start, how many batches are signed.
  std::vector<std::string> proxies;
  // What does not match, each naming the table, row id, proxy and link; per proxy in chain
  // order, so the first one names the first row that does not match. Empty: verified.
  std::vector<std::string> problems;
  // What verify could not check and took on the store's word (a store whose chain's
  // starting point no signed record holds); printed, not a failure.
  std::vector<std::string> notes;
  std::uint64_t rows = 0;             // rows checked against their links
  std::uint64_t rows_before_chain = 0;  // rows written before schema version 8: not covered
  bool ok() const { return problems.empty(); }
};

// `verify_key`: an Ed25519 public key (PEM); then every batch must carry a valid signature
// by its private key. Throws std::runtime_error naming the store or key when it cannot read
// them (DatabaseRejected for a store that is not netbox's or older than the chain).
// Throws std::runtime_error naming `flag` and `key_file` unless it is an Ed25519 private key
// in PEM (what --audit-signing-key takes), so a proxy refuses it at start.
void check_signing_key(const std::filesystem::path& key_file, std::string_view flag);

ChainReport verify_chain(const std::filesystem::path& db, const std::filesystem::path& verify_key = {});

// Keys per proxy: a proxy's chain is checked with the key named for its proxy id, else
// with `every` (empty: none). A fleet gives each proxy a key of its own, so that one
// proxy's key (and its store role) cannot re-sign another's chain. Once any proxy is
// named, a chain with no key of its own or `every` is a problem, and so is a named proxy
// with no chain in the store (its links and head deleted whole).
struct VerifyKeys {
  std::filesystem::path every;
  std::map<std::string, std::filesystem::path> per_proxy;
};
ChainReport verify_chain(const std::filesystem::path& db, const VerifyKeys& keys);

}  // namespace netbox::audit
