#pragma once
// The schema's history: step N brings a database from user_version N-1 to N.
#include <span>

namespace netbox::audit::detail {

struct Migration {
  int version;      // user_version after this step
  const char* sql;  // applied inside one transaction together with the version bump
};

std::span<const Migration> migrations();

}  // namespace netbox::audit::detail
