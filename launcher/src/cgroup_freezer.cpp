// The guardian's freeze and kill switch on the agent's cgroup (issue 25): cgroup v2's
// cgroup.freeze and cgroup.kill, v1's freezer hierarchy. The kernel's own word decides
// "frozen" (cgroup.events, freezer.state) and "gone" (an empty cgroup.procs), so an
// operator is never told the agent stopped when it did not.
#include "netbox/launcher/cgroup.hpp"
#include "netbox/launcher/cgroup_backend.hpp"

#include <stdexcept>
#include <thread>

namespace netbox::launcher {
namespace {

namespace fs = std::filesystem;
constexpr auto kFreezeWait = std::chrono::seconds(5);

bool reads(const fs::path& file, std::string_view want) {
  auto text = read_cgroup_file(file);
  if (!text) return false;
  while (!text->empty() && (text->back() == '\n' || text->back() == ' ')) text->pop_back();
  return *text == want;
}

}  // namespace

bool AgentCgroup::can_freeze() const {
  std::error_code ec;
  if (version_ == CgroupVersion::v2) return !dirs_.empty() && fs::exists(dirs_.front() / "cgroup.freeze", ec);
  return version_ == CgroupVersion::v1 && dir_for_.contains("freezer");
}

bool AgentCgroup::frozen() const {
  if (!can_freeze()) return false;
  if (version_ == CgroupVersion::v2) return cgroup_key(dirs_.front() / "cgroup.events", "frozen") == 1u;
  return reads(dir_for_.at("freezer") / "freezer.state", "FROZEN");
}

void AgentCgroup::freeze() {
  if (!can_freeze())
    throw std::runtime_error(dirs_.empty() ? "the agent has no cgroup (no --memory, --cpus or --pids), so it cannot be frozen"
                                           : "this machine's cgroups offer no freezer (cgroup v2's cgroup.freeze or a v1 "
                                             "freezer hierarchy), so the agent cannot be frozen");
  if (version_ == CgroupVersion::v2) write_cgroup_file(dirs_.front() / "cgroup.freeze", "1");
  else write_cgroup_file(dir_for_.at("freezer") / "freezer.state", "FROZEN");
  // The kernel freezes tasks one by one (v1 says FREEZING meanwhile): done only when it says so.
  const auto deadline = std::chrono::steady_clock::now() + kFreezeWait;
  while (!frozen()) {
    if (std::chrono::steady_clock::now() >= deadline)
      throw std::runtime_error("the kernel did not freeze the agent's cgroup within 5 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void AgentCgroup::thaw() {
  if (!can_freeze()) return;
  if (version_ == CgroupVersion::v2) write_cgroup_file(dirs_.front() / "cgroup.freeze", "0");
  else write_cgroup_file(dir_for_.at("freezer") / "freezer.state", "THAWED");
}

bool AgentCgroup::kill_all(std::chrono::milliseconds wait) {
  if (dirs_.empty()) return false;  // nothing to account the agent's processes by
  const auto deadline = std::chrono::steady_clock::now() + wait;
  // On v1 the freezer's folder holds the frozen state: signal there first, then thaw it,
  // so the kill is not left pending in frozen tasks while the other folders are watched.
  if (version_ == CgroupVersion::v1 && dir_for_.contains("freezer"))
    kill_cgroup(dir_for_.at("freezer"), version_, std::chrono::steady_clock::now());
  bool empty = true;
  for (const auto& d : dirs_) empty &= kill_cgroup(d, version_, deadline);
  return empty;
}

}  // namespace netbox::launcher
