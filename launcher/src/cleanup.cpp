#include "netbox/launcher/cleanup.hpp"

#include "netbox/launcher/nft_rules.hpp"
#include "netbox/launcher/veth.hpp"

#include <chrono>
#include <iostream>
#include <string>
#include <system_error>

namespace netbox::launcher {
namespace {

void report(const std::string& error) {
  if (!error.empty()) std::cerr << "netbox launch: cleanup: " << error << " (netbox gc will retry)\n";
}

std::string remove_rules(const Lease& lease) noexcept {
  try {
    remove_host_rules(lease.veth);
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

// Long enough for the kernel's namespace cleanup under load, short enough that a
// namespace someone still holds open (and so a veth that stays) costs little.
constexpr std::chrono::milliseconds kOwnRemovalLimit{250};

std::string remove_link(const Lease& lease) noexcept {
  // By now the agent's init has been reaped, so its network namespace is on its way
  // out and the kernel removes both ends of the veth with it. An RTM_DELLINK of our
  // own on top only queues behind that work (rtnl, RCU grace periods): waiting for the
  // kernel's own removal was measured ~7 ms faster at the median. If the namespace is
  // held open by something else, the veth is deleted here after all.
  if (wait_until_link_gone(lease.veth, kOwnRemovalLimit)) return {};
  try {
    delete_link(lease.veth);
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

}  // namespace

void remove_launch_network(const Lease& lease) noexcept {
  // The table's removal waits in the close of its nfnetlink socket for the kernel's
  // deferred destruction (a grace period); the veth's in netdev unregistration (more
  // than one). Neither needs the other gone first once the agent is dead.
  std::string rules_error;
  std::thread rules;
  try {
    rules = std::thread([&] { rules_error = remove_rules(lease); });
  } catch (const std::system_error&) {
    rules_error = remove_rules(lease);  // no thread to be had: one after the other
  }
  std::string link_error = remove_link(lease);
  if (rules.joinable()) rules.join();
  report(rules_error);
  report(link_error);
}

void LaunchNetwork::start() noexcept {
  if (removed_) return;
  removed_ = true;
  try {
    removal_ = std::thread([this] { remove_launch_network(lease_); });
  } catch (const std::system_error&) {
    remove_launch_network(lease_);
  }
}

LaunchNetwork::~LaunchNetwork() {
  if (removed_) {
    if (removal_.joinable()) removal_.join();
  } else {
    remove_launch_network(lease_);
  }
  release_lease(lease_);
}

}  // namespace netbox::launcher
