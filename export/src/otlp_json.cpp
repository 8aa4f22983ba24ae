#include "otlp_json.hpp"

#include "netbox/export/ocsf.hpp"

#include <chrono>

namespace netbox::siem {
namespace {

using nlohmann::json;

// An AnyValue; 64-bit integers as strings, as the protobuf JSON mapping writes them.
json any_value(const json& v) {
  switch (v.type()) {
    case json::value_t::string: return json{{"stringValue", v}};
    case json::value_t::boolean: return json{{"boolValue", v}};
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return json{{"intValue", v.dump()}};
    case json::value_t::number_float: return json{{"doubleValue", v}};
    case json::value_t::array: {
      json values = json::array();
      for (const auto& e : v) values.push_back(any_value(e));
      return json{{"arrayValue", json{{"values", std::move(values)}}}};
    }
    case json::value_t::object: {
      json values = json::array();
      for (const auto& [k, e] : v.items()) values.push_back(json{{"key", k}, {"value", any_value(e)}});
      return json{{"kvlistValue", json{{"values", std::move(values)}}}};
    }
    default: return json::object();
  }
}

json attribute(const std::string& key, const json& value) { return json{{"key", key}, {"value", any_value(value)}}; }

// OCSF severity_id onto OpenTelemetry's SeverityNumber: INFO 9, WARN 13, ERROR 17.
std::pair<int, const char*> severity(const json& record) {
  const int s = record.value("severity_id", 1);
  if (s >= 4) return {17, "ERROR"};
  if (s >= 2) return {13, "WARN"};
  return {9, "INFO"};
}

json log_record(const json& r, const std::string& observed) {
  const auto [number, text] = severity(r);
  json attributes = json::array({attribute("ocsf.class_uid", r.value("class_uid", 0)),
                                 attribute("ocsf.type_uid", r.value("type_uid", 0)),
                                 attribute("ocsf.version", kOcsfVersion)});
  if (r.contains("unmapped") && r["unmapped"].contains("netbox"))
    for (const auto& [k, v] : r["unmapped"]["netbox"].items())
      if (!v.is_object()) attributes.push_back(attribute("netbox." + k, v));
  return json{{"timeUnixNano", std::to_string(r.value("time", std::int64_t{0}) * 1'000'000)},
              {"observedTimeUnixNano", observed},
              {"severityNumber", number},
              {"severityText", text},
              {"eventName", "ocsf." + std::to_string(r.value("class_uid", 0))},
              {"body", any_value(r)},
              {"attributes", std::move(attributes)}};
}

}  // namespace

std::string otlp_logs_request(const std::deque<json>& records, const OtlpResource& resource) {
  const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string observed = std::to_string(now);
  json logs = json::array();
  for (const auto& r : records) logs.push_back(log_record(r, observed));
  json res_attrs = json::array({attribute("service.name", "netbox")});
  if (!resource.service_version.empty()) res_attrs.push_back(attribute("service.version", resource.service_version));
  if (!resource.host_name.empty()) res_attrs.push_back(attribute("host.name", resource.host_name));
  json req{{"resourceLogs",
            json::array({json{{"resource", json{{"attributes", std::move(res_attrs)}}},
                              {"scopeLogs", json::array({json{{"scope", json{{"name", "netbox.export"}}},
                                                              {"logRecords", std::move(logs)}}})}}})}};
  return req.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace netbox::siem
