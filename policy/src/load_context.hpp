#pragma once
// Shared by the pieces of the loader: where we are in the file and how to complain.
#include "json_positions.hpp"
#include "netbox/policy/load.hpp"

#include <nlohmann/json.hpp>

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace netbox::policy::detail {

struct LoadContext {
  std::string source;
  PositionIndex positions;
  // Mistakes recorded so far; the loader goes on after one (see keep_going) and throws
  // them all together at the end.
  mutable std::vector<PolicyProblem> problems;

  // Runs one independent step of the loader (a key, a list entry, an agent); a mistake
  // it throws is recorded and loading goes on with the next step.
  template <class Step>
  void keep_going(Step&& step) const {
    try {
      step();
    } catch (const PolicyError& e) {
      problems.insert(problems.end(), e.problems().begin(), e.problems().end());
    }
  }

  // Throws PolicyError at the value `pointer` names (or at its key when `at_key`).
  [[noreturn]] void fail(const std::string& pointer, const std::string& what, bool at_key = false) const;

  // Checks the JSON type and fails with "must be <expected>, not <actual>" otherwise.
  void expect_object(const nlohmann::json& j, const std::string& pointer) const;
  void expect_array(const nlohmann::json& j, const std::string& pointer) const;
  const std::string& expect_string(const nlohmann::json& j, const std::string& pointer) const;

  // Rejects any key not in `allowed`, with a suggestion for near misses.
  void check_keys(const nlohmann::json& object, const std::string& pointer,
                  std::initializer_list<std::string_view> allowed) const;
};

// "an array" / "a string" / "a number" ... for messages.
std::string json_kind(const nlohmann::json& j);

std::string child(const std::string& pointer, std::string_view key);
std::string child(const std::string& pointer, std::size_t index);

}  // namespace netbox::policy::detail
