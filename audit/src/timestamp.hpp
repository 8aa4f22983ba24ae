#pragma once
// Reading timestamps back: the stored format and what people type after --since.
#include "netbox/audit/record.hpp"

#include <optional>
#include <string_view>

namespace netbox::audit::detail {

// ISO-8601 date and time: "2026-11-22", "2026-11-22T04:15", "2026-11-22T04:15:41",
// "2026-11-22 04:15:41.123", each optionally followed by "Z" or an offset "+02:00"/"-0530".
// Without a zone the time is UTC (the store is UTC throughout). nullopt if it is not one.
std::optional<Clock::time_point> parse_iso8601(std::string_view text);

}  // namespace netbox::audit::detail
