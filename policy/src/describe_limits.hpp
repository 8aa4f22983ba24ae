#pragma once
// The budgets, rates and guardian of a profile in words, for `netbox policy check` (the
// summary and --explain).
#include "netbox/policy/policy.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace netbox::policy::detail {

// 67108864 -> "64M", 1000 -> "1000" (the size grammar's own spelling, so it reads back).
std::string size_text(std::uint64_t bytes);
// "bytes_up 64M, requests 60/min (burst 10), bandwidth_up 1M/s"; empty when none is set.
std::string budgets_text(const Limits& limits);
// "*.github.com: bytes_up 64M, requests 60/min (burst 10)"
std::string destination_text(const DestinationLimits& d);
// One line per rule ("guardian.rules[0] denied >= 20 in 60s -> kill"), then the webhook
// and the content rules; `all`: also what is at its default.
std::vector<std::string> guardian_lines(const GuardianSettings& g, bool all);

}  // namespace netbox::policy::detail
