#pragma once
// The agent's environment: cleared, then only what an agent needs and nothing secret.
#include <map>
#include <string>
#include <vector>

namespace netbox::launcher {

struct AgentEnvInput {
  std::map<std::string, std::string> launcher_env;  // the launcher's own environment
  std::vector<std::string> keep;                    // --keep-env KEY
  std::vector<std::string> set;                     // --env KEY=VALUE (validated)
  std::string proxy_url;                            // http://10.213.0.1:3128
  std::string user;
  std::string home;
  std::string socks_url;  // socks5h://10.213.0.1:1080 for ALL_PROXY; empty: proxy_url there too
  // A credential's variable -> its placeholder: set after everything else (--env too), so
  // the secret a variable held in the launcher's environment never reaches the agent.
  std::map<std::string, std::string> placeholders;
  bool trusts_netbox_ca = false;  // the launch inspects TLS: the trust variables (agent_trust.hpp)
};

// -Dhttp(s).proxyHost/-Port and -Dhttp.nonProxyHosts for JAVA_TOOL_OPTIONS, from the
// agent's http://HOST:PORT proxy URL (empty for anything else).
std::string java_proxy_options(const std::string& proxy_url);

// PATH, HOME, LANG, LC_*, TERM, TZ, USER, the kept keys, the proxy variables, then
// --env entries (so a user can override on purpose), then the credentials' placeholders
// (last: nothing overrides those). Sorted KEY=VALUE strings.
std::vector<std::string> agent_environment(const AgentEnvInput& in);
std::map<std::string, std::string> current_environment();
// Throws LaunchError (exit 2) naming the flag when an entry is not KEY=VALUE.
void validate_env_flags(const std::vector<std::string>& set, const std::vector<std::string>& keep);

}  // namespace netbox::launcher
