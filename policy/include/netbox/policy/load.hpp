#pragma once
// Loading a policy file. Fails closed: a file either loads completely or not at all.
#include "netbox/policy/policy.hpp"

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace netbox::policy {

// One mistake in a policy file, precise enough to fix it.
struct PolicyProblem {
  std::string file;
  int line = 0;    // 0 when unknown
  int column = 0;  // 0 when unknown
  std::string json_path;  // e.g. "/allow/2"
  std::string message;    // e.g. "'*' may only stand at the start of a name"
  // "policy.json:4:13: /allow/2: '*' may only stand at the start of a name"
  std::string text() const;
};

// Why a policy file did not load: every mistake the loader found (it goes on after one,
// so a user fixes them all in one round), one per line of what(). file(), line(),
// column() and json_path() are the first one's.
class PolicyError : public std::runtime_error {
 public:
  PolicyError(std::string file, int line, int column, std::string json_path, std::string what);
  explicit PolicyError(std::vector<PolicyProblem> problems);  // at least one
  const std::string& file() const { return problems_.front().file; }
  int line() const { return problems_.front().line; }
  int column() const { return problems_.front().column; }
  const std::string& json_path() const { return problems_.front().json_path; }
  const std::vector<PolicyProblem>& problems() const { return problems_; }
 private:
  std::vector<PolicyProblem> problems_;
};

// `digest`: whether Policy::digest is computed (SHA-256 of the text). A reader that only
// looks into the policy (a launcher reading a running proxy's credentials) skips it: the
// first digest in a process loads OpenSSL's configuration and provider, about 0.9 ms.
enum class Digest { computed, skipped };
Policy load_policy_file(const std::filesystem::path& file, Digest digest = Digest::computed);
Policy parse_policy(std::string_view text, const std::string& source_name, Digest digest = Digest::computed);

// The policy used when none is given: allows nothing, ports 80/443, default limits.
Policy default_policy();

// A short human summary for `netbox policy check`.
std::string summarize(const Policy& policy);

// Every profile as it applies after merging (the top level, then each agents.NAME): mode,
// limits, budgets, destinations and guardian, defaults included; `policy check --explain`.
std::string explain_profiles(const Policy& policy);

}  // namespace netbox::policy
