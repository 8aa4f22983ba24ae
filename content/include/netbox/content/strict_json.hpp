#pragma once
// A request body read as JSON the way a checker must read it: exactly one reading, or none.
// Duplicate object keys are refused (servers disagree on which one wins, so a check of one
// and a server acting on the other would be a bypass), and so are two keys that differ only
// in case (Go's encoding/json, under many MCP servers, matches keys so), as are nesting beyond a bound,
// invalid UTF-8, unpaired surrogates and anything after the value.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>

namespace netbox::content {

inline constexpr std::size_t kMaxJsonDepth = 64;

struct JsonRefusal {
  std::string reason;  // plain language, names the position or key
};

std::variant<nlohmann::json, JsonRefusal> read_strict_json(std::string_view text,
                                                           std::size_t max_depth = kMaxJsonDepth);

// "/a/0/b~1c": RFC 6901 pointer segments, '~' and '/' escaped.
std::string pointer_segment(std::string_view key);

}  // namespace netbox::content
