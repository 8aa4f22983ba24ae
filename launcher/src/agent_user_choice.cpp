#include "netbox/launcher/agent_user_choice.hpp"

#include "netbox/launcher/launch.hpp"
#include "netbox/launcher/subnet_pool.hpp"

#include <unistd.h>

#include <charconv>

namespace netbox::launcher {
namespace {

// What USER and LOGNAME say for a uid of the launch's own.
constexpr const char* kLaunchUserName = "netbox-agent";

std::optional<unsigned> number(const std::map<std::string, std::string>& env, const char* key) {
  auto it = env.find(key);
  if (it == env.end()) return std::nullopt;
  unsigned v = 0;
  const std::string& s = it->second;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

AgentUserChoice choose_agent_user(const std::optional<std::string>& user_flag,
                                  const std::map<std::string, std::string>& env) {
  AgentUserChoice c;
  const auto sudo_uid = number(env, "SUDO_UID");
  if (sudo_uid) {
    try {
      c.invoking = resolve_user(std::to_string(*sudo_uid));
    } catch (const LaunchError&) {
      throw LaunchError(kExitUsage, "SUDO_UID " + std::to_string(*sudo_uid) + ": no such user (give --user)");
    }
    if (auto gid = number(env, "SUDO_GID")) c.invoking->gid = *gid;
  } else {
    try {
      c.invoking = resolve_user(std::to_string(::getuid()));
    } catch (const LaunchError&) {
      // A uid without a passwd entry has no HOME to protect.
    }
  }
  if (user_flag) {
    c.agent = resolve_user(*user_flag);
    c.why = "--user";
  } else if (sudo_uid && *sudo_uid != 0) {
    // Root through sudo stays nobody: a uid 0 without capabilities still owns the host's files.
    c.agent = *c.invoking;
    c.why = "the sudo caller (SUDO_UID)";
  } else {
    // nobody's home and name until the launch leases the uid (use_launch_uid).
    c.agent = resolve_user("nobody");
    c.agent.name = kLaunchUserName;
    c.agent.uid = c.agent.gid = kFirstAgentUid;
    c.agent.groups.clear();
    c.own_uid = true;
    c.why = "the default: a uid and gid of its own for this launch, from " + std::to_string(kFirstAgentUid) + "-" +
            std::to_string(kFirstAgentUid + kAgentUidCount - 1) +
            " (no passwd entry; nobody's home), so no other launch shares its per-user limits";
  }
  return c;
}

void use_launch_uid(AgentUser& user, uid_t uid) {
  user.name = kLaunchUserName;
  user.uid = uid;
  user.gid = uid;
  user.groups.clear();
}

std::string describe_launch_uid(const AgentUserChoice& who, uid_t uid) {
  return std::string(kLaunchUserName) + " (uid " + std::to_string(uid) + ", gid " + std::to_string(uid) + "): " + who.why;
}

}  // namespace netbox::launcher
