#include "netbox/launcher/agent_trust.hpp"

#include "netbox/launcher/launch.hpp"
#include "netbox/tls/trust_store.hpp"

#include <fstream>
#include <sstream>

namespace netbox::launcher {

AgentTrustFiles agent_trust_files(const std::string& ca_pem, const std::filesystem::path& system_bundle) {
  std::ifstream in(system_bundle, std::ios::binary);
  std::ostringstream roots;
  roots << in.rdbuf();
  // Never a bundle of the netbox CA alone: the agent's other HTTPS (hosts not inspected,
  // tunnelled blindly) needs the host's roots, and a missing store is the host's to fix.
  if (!in || roots.str().empty())
    throw LaunchError(kExitLauncherFailure,
                      "TLS inspection: the host's trust store " + system_bundle.string() +
                          " cannot be read, so the agent cannot be given the netbox CA beside the system roots "
                          "(install Debian's ca-certificates, or launch without --ca-dir)");
  try {
    AgentTrustFiles files;
    files.netbox_ca = tls::certificates_pem(ca_pem, "the netbox CA certificate");
    // Re-encoded certificate by certificate: whatever else either text held stays out.
    files.bundle = tls::certificates_pem(roots.str(), system_bundle.string()) + files.netbox_ca;
    files.java_store = tls::java_trust_store(files.bundle, "the agent's Java trust store");
    return files;
  } catch (const std::runtime_error& e) {
    throw LaunchError(kExitLauncherFailure, std::string("TLS inspection: ") + e.what());
  }
}

}  // namespace netbox::launcher
