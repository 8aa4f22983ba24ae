#include "netbox/launcher/cleanup.hpp"

#include "netbox/launcher/nft_rules.hpp"
#include "netbox/launcher/veth.hpp"

#include <iostream>

namespace netbox::launcher {

void remove_launch_network(const Lease& lease) noexcept {
  try {
    remove_host_rules(lease.veth);
  } catch (const std::exception& e) {
    std::cerr << "netbox launch: cleanup: " << e.what() << " (netbox gc will retry)\n";
  }
  try {
    delete_link(lease.veth);
  } catch (const std::exception& e) {
    std::cerr << "netbox launch: cleanup: " << e.what() << " (netbox gc will retry)\n";
  }
  // Last, so that whatever failed above stays attributable to a (now dead) owner.
  release_lease(lease);
}

}  // namespace netbox::launcher
