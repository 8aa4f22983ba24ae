#include "describe_limits.hpp"

namespace netbox::policy::detail {

std::string size_text(std::uint64_t bytes) {
  static constexpr std::pair<std::uint64_t, char> kUnits[] = {
      {1ULL << 40, 'T'}, {1ULL << 30, 'G'}, {1ULL << 20, 'M'}, {1ULL << 10, 'K'}};
  for (const auto& [unit, letter] : kUnits)
    if (bytes >= unit && bytes % unit == 0) return std::to_string(bytes / unit) + letter;
  return std::to_string(bytes);
}

namespace {
void add(std::string& s, const std::string& part) { s += (s.empty() ? "" : ", ") + part; }
std::string rate_text(const RequestRate& r) {
  return "requests " + std::to_string(r.per_minute) + "/min (burst " + std::to_string(r.burst) + ")";
}
}  // namespace

std::string budgets_text(const Limits& l) {
  std::string s;
  if (l.bytes_up) add(s, "bytes_up " + size_text(*l.bytes_up));
  if (l.bytes_down) add(s, "bytes_down " + size_text(*l.bytes_down));
  if (auto r = l.rate()) add(s, rate_text(*r));
  if (l.new_hosts_per_minute) add(s, "new hosts " + std::to_string(*l.new_hosts_per_minute) + "/min");
  if (l.bandwidth_up) add(s, "bandwidth_up " + size_text(*l.bandwidth_up) + "/s");
  if (l.bandwidth_down) add(s, "bandwidth_down " + size_text(*l.bandwidth_down) + "/s");
  if (!l.destinations.empty())
    add(s, std::to_string(l.destinations.size()) + (l.destinations.size() == 1 ? " destination" : " destinations"));
  return s;
}

std::string destination_text(const DestinationLimits& d) {
  std::string s;
  if (d.bytes_up) add(s, "bytes_up " + size_text(*d.bytes_up));
  if (d.bytes_down) add(s, "bytes_down " + size_text(*d.bytes_down));
  if (d.requests) add(s, rate_text(*d.requests));
  return d.cite() + ": " + s;
}

std::vector<std::string> guardian_lines(const GuardianSettings& g, bool all) {
  std::vector<std::string> out;
  for (const auto& r : g.rules) out.push_back(r.cite());
  if (g.webhook) out.push_back("webhook " + *g.webhook);
  const ContentRules& c = g.content;
  if (all || !(c == ContentRules{}))
    out.push_back("content: secrets " + std::string(to_string(c.secrets)) + " (first " + size_text(c.body_window) +
                  " of a body), encoded_labels " + std::string(to_string(c.encoded_labels)));
  return out;
}

}  // namespace netbox::policy::detail
