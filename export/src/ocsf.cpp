#include "netbox/export/ocsf.hpp"

#include "netbox/export/placeholders.hpp"

#include <boost/asio/ip/address.hpp>

#include <array>
#include <chrono>
#include <string_view>
#include <utility>

namespace netbox::siem {
namespace {

using nlohmann::json;

// Category and class numbers from the schema (categories.json, events/*): class_uid is
// category * 1000 + the class's uid, type_uid is class_uid * 100 + activity_id.
constexpr int kNetworkCategory = 4;
constexpr int kFindingsCategory = 2;
constexpr int kNetworkActivity = 4001;
constexpr int kHttpActivity = 4002;
constexpr int kDnsActivity = 4003;
constexpr int kDetectionFinding = 2004;

// security_control profile: action_id and disposition_id.
constexpr int kActionAllowed = 1, kActionDenied = 2;
constexpr int kDispositionAllowed = 1, kDispositionBlocked = 2, kDispositionAlert = 19, kDispositionError = 27;
constexpr int kSeverityInformational = 1, kSeverityLow = 2, kSeverityMedium = 3, kSeverityHigh = 4;
constexpr int kStatusSuccess = 1, kStatusFailure = 2;

std::int64_t epoch_ms(audit::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

bool refused(const audit::AuditRecord& r) { return r.decision == "deny" || r.decision == "cap"; }

// HTTP Activity's activity_id per method (events/network/http_activity.json); 99: Other.
int http_activity(std::string_view method) {
  static constexpr std::array<std::pair<std::string_view, int>, 9> kMethods{{
      {"CONNECT", 1}, {"DELETE", 2}, {"GET", 3}, {"HEAD", 4}, {"OPTIONS", 5},
      {"POST", 6}, {"PUT", 7}, {"TRACE", 8}, {"PATCH", 9},
  }};
  for (const auto& [m, id] : kMethods)
    if (m == method) return id;
  return 99;
}

// "10.213.0.2:41234" or "[fd00::2]:41234" into an endpoint; anything else only named.
json endpoint_of(const std::string& address, const std::string& agent) {
  json e{{"name", agent}};
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) return e;
  std::string host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  boost::system::error_code ec;
  const auto ip = boost::asio::ip::make_address(host, ec);
  if (ec) return e;
  e["ip"] = ip.to_string();
  try {
    const int port = std::stoi(address.substr(colon + 1));
    if (port > 0 && port < 65536) e["port"] = port;
  } catch (const std::exception&) {
  }
  return e;
}

json destination_of(const audit::AuditRecord& r) {
  json d{{"hostname", r.host.empty() ? std::string("*") : r.host}};
  if (r.port) d["port"] = r.port;
  boost::system::error_code ec;
  if (!r.resolved_addr.empty()) {
    const auto ip = boost::asio::ip::make_address(r.resolved_addr, ec);
    if (!ec) d["ip"] = ip.to_string();
  }
  return d;
}

json metadata(const Product& p) {
  json product{{"name", "netbox"}, {"vendor_name", "netbox"}};
  if (!p.version.empty()) product["version"] = p.version;
  // security_control: action_id and disposition_id, the profile that says what netbox decided.
  json m{{"version", kOcsfVersion}, {"product", std::move(product)}, {"log_name", "netbox.audit"},
         {"profiles", json::array({"security_control"})}};
  return m;
}

// netbox's own columns, under unmapped.netbox: what OCSF has no attribute for, or says
// in its words rather than ours.
json netbox_attributes(const audit::AuditRecord& r, const Product& p) {
  json n{{"agent", r.agent}, {"kind", r.kind}, {"decision", r.decision}, {"count", r.count},
         {"bytes_up", r.bytes_up}, {"bytes_down", r.bytes_down}, {"inspected", r.parent != 0}};
  auto text = [&](const char* key, const std::string& v) {
    if (!v.empty()) n[key] = v;
  };
  text("proxy_id", p.proxy_id);
  text("client_addr", r.client_addr);
  text("method", r.method);
  text("host", r.host);
  text("path", r.path);
  text("resolved_addr", r.resolved_addr);
  text("rule", r.rule);
  text("reason", r.reason);
  text("error", r.error);
  text("client_exe", r.origin.exe);  // never its argv: a command line may hold a secret
  n["port"] = r.port;
  if (r.status) n["status"] = *r.status;
  if (r.duration_ms) n["duration_ms"] = *r.duration_ms;
  return json{{"netbox", std::move(n)}};
}

// What every record of a row has: classification, time, outcome, endpoints.
json base(const audit::AuditRecord& r, const Product& p, int category, int klass, int activity) {
  const bool failed = refused(r) || r.decision == "error" || r.status.value_or(0) >= 400 || !r.error.empty();
  json e{{"category_uid", category},
         {"class_uid", klass},
         {"activity_id", activity},
         {"type_uid", static_cast<std::int64_t>(klass) * 100 + activity},
         {"time", epoch_ms(r.ts)},
         {"metadata", metadata(p)},
         {"severity_id", refused(r) ? kSeverityLow : kSeverityInformational},
         {"status_id", failed ? kStatusFailure : kStatusSuccess},
         {"action_id", refused(r) ? kActionDenied : kActionAllowed},
         {"disposition_id", refused(r)                ? kDispositionBlocked
                            : r.decision == "report" ? kDispositionAlert
                            : r.decision == "error"  ? kDispositionError
                                                     : kDispositionAllowed},
         {"src_endpoint", endpoint_of(r.client_addr, r.agent)},
         {"dst_endpoint", destination_of(r)},
         {"unmapped", netbox_attributes(r, p)}};
  if (r.status) e["status_code"] = std::to_string(*r.status);
  if (!r.reason.empty()) e["status_detail"] = r.reason;
  if (r.count > 1) e["count"] = r.count;
  e["message"] = r.agent + ": " + (r.method.empty() ? r.kind : r.method) + " " + (r.host.empty() ? "*" : r.host) +
                 ":" + std::to_string(r.port) + r.path + " " + r.decision;
  return e;
}

json traffic_of(const audit::AuditRecord& r) {
  // bytes_out: from the source (the agent) to the destination.
  return json{{"bytes_out", r.bytes_up}, {"bytes_in", r.bytes_down}, {"bytes", r.bytes_up + r.bytes_down}};
}

json http_activity(const audit::AuditRecord& r, const Product& p) {
  const int activity = http_activity(r.method);
  json e = base(r, p, kNetworkCategory, kHttpActivity, activity);
  if (activity == 99) e["activity_name"] = r.method.empty() ? std::string("Unknown") : r.method;
  const std::string scheme = r.parent ? "https" : "http";
  json url{{"scheme", scheme}, {"hostname", r.host.empty() ? std::string("*") : r.host},
           {"path", r.path.empty() ? std::string("/") : r.path}};
  if (r.port) url["port"] = r.port;
  url["url_string"] = scheme + "://" + url["hostname"].get<std::string>() + ":" + std::to_string(r.port) +
                      url["path"].get<std::string>();
  e["http_request"] = json{{"http_method", r.method.empty() ? std::string("UNKNOWN") : r.method}, {"url", url}};
  if (r.status) e["http_response"] = json{{"code", *r.status}};
  e["traffic"] = traffic_of(r);
  return e;
}

json network_activity(const audit::AuditRecord& r, const Product& p) {
  // The row is exported when the tunnel closed (or was refused, or failed to open).
  const int activity = refused(r) ? 5 /* Refuse */ : (r.decision == "error" ? 4 /* Fail */ : 2 /* Close */);
  json e = base(r, p, kNetworkCategory, kNetworkActivity, activity);
  e["connection_info"] = json{{"direction_id", 2 /* Outbound */}, {"protocol_name", "tcp"}, {"protocol_num", 6}};
  e["app_protocol_name"] = r.kind == "socks" ? "socks" : (r.kind == "connect" ? "http-connect" : "tcp");
  e["traffic"] = traffic_of(r);
  return e;
}

json dns_activity(const audit::AuditRecord& r, const Product& p) {
  json e = base(r, p, kNetworkCategory, kDnsActivity, 1 /* Query */);
  json q{{"hostname", r.host.empty() ? std::string("*") : r.host}};
  if (!r.method.empty()) q["type"] = r.method;
  e["query"] = std::move(q);
  // The DNS view answers a refused name NXDOMAIN and never asks anyone else.
  if (refused(r)) {
    e["rcode_id"] = 3;
    e["rcode"] = "NXDomain";
  }
  return e;
}

json finding(json e, const std::string& uid, const std::string& title, const std::string& rule, int severity) {
  e["category_uid"] = kFindingsCategory;
  e["class_uid"] = kDetectionFinding;
  e["activity_id"] = 1;  // Create
  e["type_uid"] = static_cast<std::int64_t>(kDetectionFinding) * 100 + 1;
  e["severity_id"] = severity;
  e["status_id"] = 1;  // New
  e["is_alert"] = true;
  json info{{"uid", uid}, {"title", title}, {"types", json::array({"netbox"})}};
  if (!rule.empty()) info["analytic"] = json{{"name", rule}, {"type_id", 1 /* Rule */}};
  e["finding_info"] = std::move(info);
  return e;
}

}  // namespace

std::vector<json> ocsf_records(const audit::AuditRecord& original, const Product& product,
                               const std::string& finding_uid) {
  audit::AuditRecord row = original;
  row.origin = original.origin_now();
  row.origin.argv.clear();
  for (auto* text : {&row.host, &row.path, &row.method, &row.reason, &row.error, &row.client_addr, &row.origin.exe})
    withhold_placeholder(*text);
  std::vector<json> out;
  if (row.kind == "http") out.push_back(http_activity(row, product));
  else if (row.kind == "dns") out.push_back(dns_activity(row, product));
  else out.push_back(network_activity(row, product));
  if (row.decision == "deny" || row.decision == "report") {
    json f = base(row, product, kFindingsCategory, kDetectionFinding, 1);
    f["evidences"] = json::array({json{{"src_endpoint", f["src_endpoint"]}, {"dst_endpoint", f["dst_endpoint"]}}});
    f.erase("src_endpoint");
    f.erase("dst_endpoint");
    f.erase("status_code");
    f.erase("status_detail");
    const std::string title = row.decision == "deny" ? "netbox refused a request: " + row.reason
                                                     : "netbox reported a request: " + row.reason;
    out.push_back(finding(std::move(f), finding_uid, title, row.rule,
                          row.decision == "deny" ? kSeverityMedium : kSeverityLow));
  }
  return out;
}

json ocsf_event(const audit::Event& original, const Product& product, const std::string& finding_uid) {
  if (original.agent.empty()) return json::object();
  audit::Event event = original;
  withhold_placeholder(event.message);
  json detail = json::parse(event.detail.empty() ? std::string("{}") : event.detail, nullptr, false);
  if (!detail.is_object()) detail = json::object();
  for (auto& [key, value] : detail.items())
    if (value.is_string()) {
      auto text = value.get<std::string>();
      if (withhold_placeholder(text)) value = text;
    }
  json n{{"agent", event.agent}, {"event", event.kind}, {"count", event.count}, {"detail", detail}};
  if (!product.proxy_id.empty()) n["proxy_id"] = product.proxy_id;
  json e{{"time", epoch_ms(event.ts)},
         {"metadata", metadata(product)},
         {"action_id", kActionDenied},
         {"disposition_id", kDispositionBlocked},
         {"message", event.message},
         {"unmapped", json{{"netbox", std::move(n)}}}};
  if (event.count > 1) e["count"] = event.count;
  json evidence{{"src_endpoint", json{{"name", event.agent}}}};
  if (detail.contains("host") && detail["host"].is_string())
    evidence["dst_endpoint"] = json{{"hostname", detail["host"]}};
  e["evidences"] = json::array({std::move(evidence)});
  std::string rule = event.kind;
  if (detail.contains("credential") && detail["credential"].is_string())
    rule = "credentials." + detail["credential"].get<std::string>();
  return finding(std::move(e), finding_uid, "netbox: " + event.kind + ": " + event.message, rule, kSeverityHigh);
}

}  // namespace netbox::siem
