#pragma once
// Lengths of time on the command line: a plain number of seconds ("90", "0.5"), or a
// number with a unit as everywhere else in netbox ("500ms", "30s", "15m", "1h", "1d").
#include <optional>
#include <string_view>

namespace netbox::launcher {

// Seconds, or nullopt for text that is not a finite, non-negative duration.
std::optional<double> parse_seconds(std::string_view text);

}  // namespace netbox::launcher
