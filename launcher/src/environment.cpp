#include "netbox/launcher/environment.hpp"

#include "netbox/launcher/agent_trust.hpp"
#include "netbox/launcher/launch.hpp"

#include <algorithm>
#include <string_view>

extern char** environ;

namespace netbox::launcher {
namespace {

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

bool valid_key(const std::string& key) {
  if (key.empty()) return false;
  return std::none_of(key.begin(), key.end(), [](char c) { return c == '=' || c == '\0'; });
}

}  // namespace

std::string java_proxy_options(const std::string& proxy_url) {
  constexpr std::string_view scheme = "http://";
  if (!proxy_url.starts_with(scheme)) return {};
  const std::string authority = proxy_url.substr(scheme.size());
  const auto colon = authority.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == authority.size()) return {};
  const std::string host = authority.substr(0, colon), port = authority.substr(colon + 1);
  // nonProxyHosts is shared by http and https; '|' separates, as NO_PROXY's commas do.
  return "-Dhttp.proxyHost=" + host + " -Dhttp.proxyPort=" + port + " -Dhttps.proxyHost=" + host +
         " -Dhttps.proxyPort=" + port + " -Dhttp.nonProxyHosts=localhost|127.0.0.1";
}

std::map<std::string, std::string> current_environment() {
  std::map<std::string, std::string> env;
  // Read in place: a copy of each entry would leave a credential's secret (secret_env) in
  // freed memory, which netbox-init, cloned from the launcher, would hold.
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    env.try_emplace(std::string(entry.substr(0, eq)), entry.substr(eq + 1));  // a duplicate makes no copy
  }
  return env;
}

void validate_env_flags(const std::vector<std::string>& set, const std::vector<std::string>& keep) {
  for (const auto& entry : set) {
    auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0)
      throw LaunchError(kExitUsage, "--env '" + entry + "': expected KEY=VALUE");
  }
  for (const auto& key : keep)
    if (!valid_key(key)) throw LaunchError(kExitUsage, "--keep-env '" + key + "': expected a variable name");
}

std::vector<std::string> agent_environment(const AgentEnvInput& in) {
  std::map<std::string, std::string> env;
  auto copy = [&](const std::string& key) {
    if (auto it = in.launcher_env.find(key); it != in.launcher_env.end()) env[key] = it->second;
  };
  // Only what programs need to behave; everything else (tokens, keys, cloud
  // credentials, agent sockets) stays behind unless kept on purpose.
  copy("PATH");
  if (!env.contains("PATH")) env["PATH"] = kDefaultPath;
  copy("LANG");
  copy("TERM");
  copy("TZ");
  for (const auto& [key, value] : in.launcher_env)
    if (key.starts_with("LC_")) env[key] = value;
  env["HOME"] = in.home.empty() ? "/" : in.home;
  env["USER"] = in.user;
  for (const auto& key : in.keep) copy(key);
  for (const char* key : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}) env[key] = in.proxy_url;
  // socks5h: the client sends the name, so the proxy decides and resolves it (never the agent).
  for (const char* key : {"ALL_PROXY", "all_proxy"}) env[key] = in.socks_url.empty() ? in.proxy_url : in.socks_url;
  env["NO_PROXY"] = env["no_proxy"] = "localhost,127.0.0.1";
  env["NODE_USE_ENV_PROXY"] = "1";
  // The JVM reads no proxy variable; JAVA_TOOL_OPTIONS reaches every JVM it starts. Kept
  // options (--keep-env) stay, ours after them so they win; --env replaces the whole value.
  std::string java = java_proxy_options(in.proxy_url);
  if (in.trusts_netbox_ca) {
    // Each TLS stack's own variable names the bundle shown over the system's (it holds
    // the host's roots too); Node adds its extra CA to its built-in roots.
    for (const char* key : {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "PIP_CERT"})
      env[key] = kSystemTrustBundle;
    env["NODE_EXTRA_CA_CERTS"] = kAgentNetboxCa;
    java += std::string(java.empty() ? "" : " ") + "-Djavax.net.ssl.trustStore=" + kAgentJavaTrustStore +
            " -Djavax.net.ssl.trustStoreType=PKCS12";
  }
  if (!java.empty()) {
    auto& opts = env["JAVA_TOOL_OPTIONS"];
    opts = opts.empty() ? java : opts + " " + java;
  }
  for (const auto& entry : in.set) {
    auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [key, placeholder] : in.placeholders) env[key] = placeholder;
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [key, value] : env) out.push_back(key + "=" + value);
  return out;
}

}  // namespace netbox::launcher
