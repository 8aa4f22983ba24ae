#pragma once
// What the proxy's counters and the audit writer's stats look like to Prometheus and
// to the dashboard page.
#include "netbox/audit/writer.hpp"
#include "netbox/dashboards/admin_server.hpp"
#include "netbox/proxy/counters.hpp"

#include <string>

namespace netbox::dashboards {

// Every family is written even at zero, so dashboards and alerts never see a hole.
std::string render_metrics(const proxy::CountersSnapshot& counters, const audit::WriterStats& audit);

LiveStats live_stats(const proxy::CountersSnapshot& counters);

}  // namespace netbox::dashboards
