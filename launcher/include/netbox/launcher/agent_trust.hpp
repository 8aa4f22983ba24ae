#pragma once
// What an agent whose HTTPS is inspected trusts without being told: the host's roots
// plus the netbox CA certificate, shown read-only in its view (mounts.hpp) and named by
// the variables TLS clients read (environment.hpp). Each launch gets files of its own,
// written into its private mount namespace; none holds a key.
#include <filesystem>
#include <string>

namespace netbox::launcher {

// Where the host's roots are read from, and where the agent sees the bundle: bound over
// the same path (Debian's OpenSSL, curl, Python, git and Node all end there; OpenSSL's
// /usr/lib/ssl/cert.pem is a link to it).
inline constexpr const char* kSystemTrustBundle = "/etc/ssl/certs/ca-certificates.crt";
// The agent's own folder for the rest: the netbox CA alone and the JVM's trust store.
inline constexpr const char* kAgentTrustFolder = "/run/netbox-trust";
inline constexpr const char* kAgentNetboxCa = "/run/netbox-trust/netbox-ca.pem";
inline constexpr const char* kAgentJavaTrustStore = "/run/netbox-trust/cacerts.p12";
// Debian's JDKs read their default store from here (lib/security/cacerts links to it):
// covered too where it exists, so a JVM whose JAVA_TOOL_OPTIONS were replaced still trusts.
inline constexpr const char* kJavaSystemTrustStore = "/etc/ssl/certs/java/cacerts";

// The files' contents. An empty bundle: the launch does not inspect, nothing is shown.
struct AgentTrustFiles {
  std::string bundle;      // PEM: every root of the host, then the netbox CA
  std::string netbox_ca;   // PEM: the netbox CA certificate alone (NODE_EXTRA_CA_CERTS)
  std::string java_store;  // PKCS#12 of the bundle's certificates (tls/trust_store.hpp)
};

// Reads `system_bundle` and builds the three from it and `ca_pem` (certificates only;
// anything else in either is dropped). Throws LaunchError(125) naming the file when the
// host's roots cannot be read, and LaunchError(125) when either holds no certificate.
AgentTrustFiles agent_trust_files(const std::string& ca_pem,
                                  const std::filesystem::path& system_bundle = kSystemTrustBundle);

}  // namespace netbox::launcher
