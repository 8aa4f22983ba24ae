#pragma once
// `netbox gc` for the audit store (issue 27 item 6): the rows a launcher that died
// (SIGKILL, power loss) left open. Its agents row gets an end and an `ended_by` note; its
// requests that never completed get a duration and an error saying why; one
// `agent_closed` event per agent says what was done.
#include "netbox/audit/record.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace netbox::audit {

struct ClosedAgent {
  std::string name;
  std::int64_t pid = 0;
  std::uint64_t requests = 0;  // request rows closed
};

// Closes the open agents rows (no `ended`) written on this host (proxy_id `proxy_id`, or
// none) whose launch `alive(pid, started)` says is gone. SQLite only: launches write to a
// file (a PostgreSQL store's rows are its proxies', which close their own).
std::vector<ClosedAgent> close_dead_agents(const std::filesystem::path& db, const std::string& proxy_id,
                                           const std::function<bool(std::int64_t pid, Clock::time_point started)>& alive);

}  // namespace netbox::audit
