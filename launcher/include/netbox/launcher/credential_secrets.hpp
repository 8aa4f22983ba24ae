#pragma once
// The secrets of a profile's `credentials` (issue 16), read by the launcher on the host
// before anything is created: from its environment (secret_env) or from a file only root
// may read (secret_file). The agent gets a placeholder per launch instead; the proxy is
// given the secret when the agent is attached. Mistakes exit 2 naming the key.
#include "netbox/policy/policy.hpp"
#include "netbox/proxy/credential_secret.hpp"

#include <map>
#include <string>
#include <vector>

namespace netbox::launcher {

struct LaunchCredentials {
  std::vector<proxy::CredentialSecret> secrets;     // for the proxy, one per credential
  std::map<std::string, std::string> placeholders;  // variable -> placeholder, for the agent
  std::vector<std::string> secret_variables;        // the launcher's variables that held secrets
};

// `list`: how the policy names the profile's list ("credentials", "agents.ci.credentials").
// Throws LaunchError (exit 2): a variable unset or empty, a file that is not an absolute
// path to a regular file owned by root and closed to group and others (no symlink), an
// empty secret, or one holding a line break or NUL (it goes into a header).
LaunchCredentials read_credentials(const policy::Profile& profile, const std::string& list,
                                   const std::map<std::string, std::string>& launcher_env);

// The agent's environment as planned (KEY=VALUE entries) must not hold a secret: one
// copied there by --env or --keep-env under another name. Throws LaunchError (exit 2)
// naming the variable and the credential.
void refuse_secrets_in(const std::vector<std::string>& agent_env, const LaunchCredentials& credentials);

// Zeroes the value of each variable in `env` (the launcher's copy of its environment) and
// removes it: the secrets are then only in their Secret pages, which a clone sees zeroed,
// so netbox-init (cloned from the launcher) holds none.
void forget_secret_variables(std::map<std::string, std::string>& env, const std::vector<std::string>& variables);

// Overwrites the value of each variable in the launcher's own environment block and
// removes it, so /proc/<launcher>/environ (and the clones the launcher makes) no longer
// show the secret.
void scrub_launcher_environment(const std::vector<std::string>& variables);

}  // namespace netbox::launcher
