#pragma once
// OTLP/HTTP JSON (opentelemetry-proto, logs/v1, JSON encoding): OCSF records as the bodies of
// log records, with their class and netbox's columns as attributes a collector can route on.
#include <nlohmann/json.hpp>

#include <deque>
#include <string>

namespace netbox::siem {

struct OtlpResource {
  std::string service_version;
  std::string host_name;
};

// One ExportLogsServiceRequest holding `records` (OCSF objects).
std::string otlp_logs_request(const std::deque<nlohmann::json>& records, const OtlpResource& resource);

}  // namespace netbox::siem
