#include "load_limits.hpp"

#include "load_inspection.hpp"

#include "netbox/policy/duration.hpp"
#include "netbox/policy/size.hpp"

#include <string_view>
#include <utility>

namespace netbox::policy::detail {

std::uint64_t positive(const LoadContext& ctx, const nlohmann::json& v, const std::string& pointer) {
  constexpr uint64_t kMax = 2147483647;
  if (!v.is_number_integer()) ctx.fail(pointer, "must be a positive integer, not " + json_kind(v));
  if (v.is_number_unsigned()) {
    auto n = v.get<unsigned long long>();
    if (n == 0) ctx.fail(pointer, "must be a positive integer, not 0");
    if (n > kMax) ctx.fail(pointer, "must be at most " + std::to_string(kMax) + ", not " + v.dump());
    return n;
  }
  auto n = v.get<long long>();
  if (n <= 0) ctx.fail(pointer, "must be a positive integer, not " + v.dump());
  return static_cast<uint64_t>(n);
}

// A duration key ("idle_timeout": "5m"): the one grammar of netbox/policy/duration.hpp, or
// a number of seconds, as the flags take it; positive and at most the _ms keys' largest.
std::chrono::milliseconds positive_duration(const LoadContext& ctx, const nlohmann::json& v,
                                            const std::string& pointer) {
  if (!v.is_string() && !v.is_number())
    ctx.fail(pointer, "must be a duration such as \"30s\" or \"1h30m\", not " + json_kind(v));
  const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
  const auto d = try_parse_duration(text);
  if (!d) ctx.fail(pointer, "'" + text + "' is not a duration: " + d.why + " (" + std::string(kDurationExamples) + ")");
  if (d.value.count() <= 0) ctx.fail(pointer, "must be longer than 0, not " + v.dump());
  if (d.value.count() > 2147483647) ctx.fail(pointer, "must be at most 2147483647 ms (about 24 days), not " + v.dump());
  return d.value;
}

std::optional<std::uint64_t> byte_size(const LoadContext& ctx, const nlohmann::json& v, const std::string& pointer,
                                       bool unlimited_ok) {
  const std::string expected =
      std::string("must be a size such as 64M or 1G") + (unlimited_ok ? " or \"unlimited\"" : "") + ", not ";
  std::string text;
  if (v.is_number_integer()) text = v.dump();
  else if (v.is_string()) text = v.get<std::string>();
  else ctx.fail(pointer, expected + json_kind(v));
  if (!text.empty() && text.front() == '-') ctx.fail(pointer, "must not be negative: " + v.dump());
  const auto n = parse_size(text);
  if (!n || (!unlimited_ok && *n == kUnlimited)) ctx.fail(pointer, expected + v.dump());
  if (*n == 0)
    ctx.fail(pointer, "must be at least 1 byte, not " + v.dump() +
                          " (a budget of 0 refuses everything; leave the key out for no limit)");
  if (*n == kUnlimited) return std::nullopt;
  return n;
}

namespace {

// A rate ("requests_per_minute": 60) or, where an agent lifts an inherited one, "unlimited".
std::optional<std::uint64_t> rate_value(const LoadContext& ctx, const nlohmann::json& v, const std::string& pointer,
                                        bool unlimited_ok) {
  if (unlimited_ok && v.is_string() && v.get_ref<const std::string&>() == "unlimited") return std::nullopt;
  if (v.is_string() || (!v.is_number_integer() && !v.is_number()))
    ctx.fail(pointer, std::string("must be a positive integer") + (unlimited_ok ? " or \"unlimited\"" : "") + ", not " +
                          (v.is_string() ? v.dump() : json_kind(v)));
  return positive(ctx, v, pointer);
}

const char* const kNeedsBurst =
    "needs a \"burst\" beside it: the most requests that may come at once (a token bucket's size), e.g. 10";
const char* const kBurstAlone = "burst without requests_per_minute: a burst is the size of that rate's bucket";

DestinationLimits read_destination(const LoadContext& ctx, const nlohmann::json& j, const std::string& pointer) {
  ctx.expect_object(j, pointer);
  ctx.check_keys(j, pointer, {"host", "bytes_up", "bytes_down", "requests_per_minute", "burst"});
  DestinationLimits d;
  auto host = j.find("host");
  if (host == j.end()) ctx.fail(pointer, "a destination needs a \"host\" (api.example.com or *.example.com)");
  ctx.keep_going([&] { d.host = host_entry(ctx, *host, child(pointer, "host")); });
  std::optional<std::uint64_t> per_minute, burst;
  for (const auto& [key, v] : j.items()) ctx.keep_going([&, &key = key, &v = v] {
    const std::string p = child(pointer, key);
    if (key == "bytes_up") d.bytes_up = byte_size(ctx, v, p, false);
    else if (key == "bytes_down") d.bytes_down = byte_size(ctx, v, p, false);
    else if (key == "requests_per_minute") per_minute = rate_value(ctx, v, p, false);
    else if (key == "burst") burst = positive(ctx, v, p);
  });
  if (per_minute && !burst) ctx.fail(child(pointer, "requests_per_minute"), kNeedsBurst, true);
  if (burst && !per_minute && !j.contains("requests_per_minute")) ctx.fail(child(pointer, "burst"), kBurstAlone, true);
  if (per_minute && burst) d.requests = RequestRate{*per_minute, *burst};
  if (j.size() == 1 && host != j.end())
    ctx.fail(pointer, "names no budget or rate; give bytes_up, bytes_down or requests_per_minute with burst");
  return d;
}

bool same_pattern(const Rule& a, const Rule& b) { return a.kind == b.kind && a.host == b.host && a.port == b.port; }

std::vector<DestinationLimits> read_destinations(const LoadContext& ctx, const nlohmann::json& j,
                                                 const std::string& pointer, const std::string& list_name) {
  ctx.expect_array(j, pointer);
  std::vector<DestinationLimits> out;
  for (std::size_t i = 0; i < j.size(); ++i) ctx.keep_going([&] {
    const std::string p = child(pointer, i);
    DestinationLimits d = read_destination(ctx, j[i], p);
    d.host.list = list_name;
    d.host.index = i;
    for (const auto& earlier : out)
      if (same_pattern(earlier.host, d.host))
        ctx.fail(child(p, "host"), "'" + d.host.written + "' is listed twice (also " + earlier.cite() +
                                       "); give one entry each pattern");
    out.push_back(std::move(d));
  });
  return out;
}

}  // namespace

void read_limits(const LoadContext& ctx, const nlohmann::json& j, const std::string& pointer,
                 const std::string& list_prefix, Limits& limits) {
  ctx.expect_object(j, pointer);
  ctx.check_keys(j, pointer,
                 {"max_connections", "max_connections_per_agent", "max_connections_per_host", "connect_timeout_ms",
                  "dial_budget_ms", "idle_timeout_ms", "header_timeout_ms", "connect_timeout", "dial_budget",
                  "idle_timeout", "header_timeout", "bytes_up", "bytes_down", "requests_per_minute", "burst",
                  "new_hosts_per_minute", "bandwidth_up", "bandwidth_down", "destinations"});
  // Each time is a duration key ("idle_timeout": "5m") or its older whole-milliseconds twin.
  static constexpr std::pair<std::string_view, std::chrono::milliseconds Limits::*> kTimes[] = {
      {"connect_timeout", &Limits::connect_timeout},
      {"dial_budget", &Limits::dial_budget},
      {"idle_timeout", &Limits::idle_timeout},
      {"header_timeout", &Limits::header_timeout}};
  // Sizes: per launch (bytes_*) and per second (bandwidth_*); "unlimited" lifts an inherited one.
  static constexpr std::pair<std::string_view, std::optional<std::uint64_t> Limits::*> kSizes[] = {
      {"bytes_up", &Limits::bytes_up},
      {"bytes_down", &Limits::bytes_down},
      {"bandwidth_up", &Limits::bandwidth_up},
      {"bandwidth_down", &Limits::bandwidth_down}};
  const std::size_t problems_before = ctx.problems.size();
  for (const auto& [key, v] : j.items()) ctx.keep_going([&, &key = key, &v = v] {
    const std::string p = child(pointer, key);
    for (const auto& [name, member] : kTimes) {
      if (key == name) {
        if (j.contains(std::string(name) + "_ms"))
          ctx.fail(p, "give " + std::string(name) + " or " + std::string(name) + "_ms, not both", true);
        limits.*member = positive_duration(ctx, v, p);
        return;
      }
      if (key == std::string(name) + "_ms") {
        limits.*member = std::chrono::milliseconds(positive(ctx, v, p));
        return;
      }
    }
    for (const auto& [name, member] : kSizes)
      if (key == name) {
        limits.*member = byte_size(ctx, v, p, true);
        return;
      }
    if (key == "requests_per_minute") limits.requests_per_minute = rate_value(ctx, v, p, true);
    else if (key == "burst") limits.burst = positive(ctx, v, p);
    else if (key == "new_hosts_per_minute") limits.new_hosts_per_minute = rate_value(ctx, v, p, true);
    else if (key == "destinations")
      limits.destinations = read_destinations(ctx, v, p, list_prefix + "limits.destinations");
    else {
      uint64_t n = positive(ctx, v, p);
      if (key == "max_connections") limits.max_connections = n;
      else if (key == "max_connections_per_agent") limits.max_connections_per_agent = n;
      else if (key == "max_connections_per_host") limits.max_connections_per_host = n;
    }
  });
  // A rate needs its burst, merged key by key with what the profile inherited; checked
  // where this object changed either. "unlimited" takes the inherited burst with it.
  if (ctx.problems.size() != problems_before) return;  // one message per mistake
  const bool names_rate = j.contains("requests_per_minute"), names_burst = j.contains("burst");
  if (names_rate && !limits.requests_per_minute && !names_burst) limits.burst.reset();
  if (names_rate && limits.requests_per_minute && !limits.burst)
    ctx.keep_going([&] { ctx.fail(child(pointer, "requests_per_minute"), kNeedsBurst, true); });
  if (names_burst && !limits.requests_per_minute)
    ctx.keep_going([&] { ctx.fail(child(pointer, "burst"), kBurstAlone, true); });
}

}  // namespace netbox::policy::detail
