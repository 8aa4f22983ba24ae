#pragma once
// Where a proxy's policy comes from: a file, or the latest version published to a
// PostgreSQL database (`--policy postgresql://...`, docs/fleet.md). One loader for the
// start and every reload, so both read the same source the same way.
#include "netbox/policy/policy.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>

namespace netbox::proxy {

bool is_database_source(const std::filesystem::path& source);

// A database source that could not be read now (the server down, the connection refused):
// unlike a bad policy, worth asking again.
struct SourceUnreadable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The policy `source` names now. Throws policy::PolicyError for a bad policy (its source
// name: the address and the version), SourceUnreadable when a database cannot be read,
// std::runtime_error when a file cannot.
policy::Policy load_policy_source(const std::filesystem::path& source);

// What a database source holds now, to tell a change from a repeated notification: the
// latest version and a hash of its text; nullopt when it cannot be read.
struct PublishedStamp {
  std::int64_t version = 0;
  std::uint64_t body_hash = 0;
};
std::optional<PublishedStamp> published_stamp(const std::filesystem::path& source);

}  // namespace netbox::proxy
