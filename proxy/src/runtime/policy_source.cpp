#include "runtime/policy_source.hpp"

#include "netbox/audit/policy_store.hpp"
#include "netbox/audit/store_address.hpp"
#include "netbox/policy/load.hpp"

#include <functional>

namespace netbox::proxy {

bool is_database_source(const std::filesystem::path& source) { return audit::is_postgresql(source.native()); }

policy::Policy load_policy_source(const std::filesystem::path& source) {
  if (!is_database_source(source)) return policy::load_policy_file(source);
  audit::PublishedPolicy published;
  try {
    published = audit::latest_policy(source.native());
  } catch (const std::exception& e) {
    throw SourceUnreadable(e.what());
  }
  // The source name is what events, logs and `policy_load` rows show: which version runs.
  return policy::parse_policy(published.body, source.native() + " version " + std::to_string(published.version));
}

std::optional<PublishedStamp> published_stamp(const std::filesystem::path& source) {
  try {
    const auto published = audit::latest_policy(source.native());
    return PublishedStamp{published.version, std::hash<std::string>{}(published.body)};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace netbox::proxy
