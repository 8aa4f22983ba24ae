#pragma once
// The standard process_* families (what Prometheus client libraries export), read from
// /proc/self, so the proxy's CPU, memory and descriptors are graphed beside its traffic.
#include "netbox/dashboards/exposition.hpp"

namespace netbox::dashboards {

// process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
// process_open_fds, process_max_fds, process_start_time_seconds. A value /proc cannot give
// is left out rather than written as 0.
void add_process_metrics(Exposition& e);

}  // namespace netbox::dashboards
