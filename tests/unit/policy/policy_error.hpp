#pragma once
// How the policy tests say "this file is refused, here, for this": the first problem is at
// the JSON path `path`, has a line and a column, and its message holds `fragment`.
#include "netbox/policy/load.hpp"

#include <gtest/gtest.h>

#include <string>

namespace netbox::policy_test {

inline policy::PolicyError error_of(const std::string& json) {
  try {
    policy::parse_policy(json, "p.json");
  } catch (const policy::PolicyError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << json;
  return policy::PolicyError("", 0, 0, "", "");
}

inline void expect_fail(const std::string& json, const std::string& path, const std::string& fragment) {
  const policy::PolicyError e = error_of(json);
  EXPECT_EQ(e.json_path(), path) << e.what();
  EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << "wanted '" << fragment << "' in: " << e.what();
  EXPECT_GT(e.line(), 0) << e.what();
  EXPECT_GT(e.column(), 0) << e.what();
}

}  // namespace netbox::policy_test
