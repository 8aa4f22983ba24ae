#include "netbox/launcher/gc.hpp"

#include "netbox/launcher/cgroup.hpp"
#include "netbox/launcher/nft_rules.hpp"
#include "netbox/launcher/operator_socket.hpp"
#include "netbox/launcher/subnet_pool.hpp"
#include "netbox/launcher/rtnetlink.hpp"

#include <net/if.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>

namespace netbox::launcher {

namespace fs = std::filesystem;

namespace {

bool owner_alive(const nlohmann::json& lease) {
  auto pid = lease.value("pid", 0);
  auto start = lease.value("start_time", 0ULL);
  if (pid <= 0) return false;
  // The start time tells a live owner from an unrelated process that reused its pid.
  return process_start_time(pid) == start && start != 0;
}

bool is_netbox_veth(const std::string& name) {
  return name.size() == 11 && name.starts_with("nbx") &&
         name.find_first_not_of("0123456789abcdef", 3) == std::string::npos;
}

// Leftovers without any lease (the lease is written before either is created, so these
// belong to nobody).
void remove_orphans(const std::set<std::string>& live_veths, GcReport& report) {
  try {
    for (const auto& table : list_host_tables()) {
      std::string veth = table.substr(std::string("netbox_").size());
      if (live_veths.contains(veth)) continue;
      if (remove_host_rules(veth)) report.removed.push_back("nftables table inet " + table);
    }
  } catch (const std::exception&) {
  }
  if (struct if_nameindex* links = if_nameindex()) {
    for (auto* l = links; l->if_index != 0; ++l) {
      std::string name = l->if_name;
      if (!is_netbox_veth(name) || live_veths.contains(name)) continue;
      try {
        if (delete_link(name)) report.removed.push_back("link " + name);
      } catch (const std::exception&) {
      }
    }
    if_freenameindex(links);
  }
}

}  // namespace

GcReport collect_garbage_locked(const fs::path& state_dir, bool orphans) {
  GcReport report;
  std::set<std::string> live_veths;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(leases_dir(state_dir), ec)) {
    nlohmann::json lease;
    {
      std::ifstream in(entry.path());
      lease = nlohmann::json::parse(in, nullptr, false);
    }
    // Only a launcher from before the socket link (issue 24) leased a veth: its lease names
    // it, and its table is named for it. A newer lease has a "name" and nothing on the host.
    std::string veth = lease.is_object() ? lease.value("veth", "") : "";
    if (lease.is_object() && owner_alive(lease)) {
      live_veths.insert(veth);
      continue;
    }
    if (is_netbox_veth(veth)) {
      try {
        if (remove_host_rules(veth)) report.removed.push_back("nftables table inet " + host_table_name(veth));
      } catch (const std::exception&) {
      }
      try {
        if (delete_link(veth)) report.removed.push_back("link " + veth);
      } catch (const std::exception&) {
      }
    }
    fs::remove(entry.path(), ec);
    const std::string uid =
        lease.is_object() && lease.contains("uid") ? "; its agent uid " + lease["uid"].dump() + " is free again" : "";
    report.removed.push_back("lease " + entry.path().filename().string() +
                             (lease.is_object() ? " (launcher pid " + std::to_string(lease.value("pid", 0)) + " is gone" +
                                                      uid + ")"
                                                : " (unreadable)"));
  }
  if (orphans) remove_orphans(live_veths, report);
  collect_cgroup_garbage(state_dir, report.removed);
  return report;
}

GcReport collect_garbage(const fs::path& state_dir) {
  StateLock lock(state_dir);
  auto report = collect_garbage_locked(state_dir);
  collect_operator_sockets(state_dir, report.removed);  // `netbox gc` only: no launch pays for it
  return report;
}

}  // namespace netbox::launcher
