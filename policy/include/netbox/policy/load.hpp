#pragma once
// Loading a policy file. Fails closed: a file either loads completely or not at all.
#include "netbox/policy/policy.hpp"

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace netbox::policy {

// What is wrong with a policy file, precise enough to fix it:
// "policy.json:4:13: allow[2]: '*' may only stand at the start of a name".
class PolicyError : public std::runtime_error {
 public:
  PolicyError(std::string file, int line, int column, std::string json_path, std::string what);
  const std::string& file() const { return file_; }
  int line() const { return line_; }       // 0 when unknown
  int column() const { return column_; }   // 0 when unknown
  const std::string& json_path() const { return path_; }  // e.g. "/allow/2"
 private:
  std::string file_;
  int line_;
  int column_;
  std::string path_;
};

Policy load_policy_file(const std::filesystem::path& file);
Policy parse_policy(std::string_view text, const std::string& source_name);

// The policy used when none is given: allows nothing, ports 80/443, default limits.
Policy default_policy();

// A short human summary for `netbox policy check`.
std::string summarize(const Policy& policy);

}  // namespace netbox::policy
