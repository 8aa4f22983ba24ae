#pragma once
// Reading one entry of `allow` or `deny`: "api.example.com", "*.pypi.org",
// "files.example.com:443", "203.0.113.0/24", "[2001:db8::1]:443".
#include "netbox/policy/policy.hpp"

#include <string>
#include <string_view>
#include <variant>

namespace netbox::policy::detail {

enum class RuleList { allow, deny };

// The rule (kind, host or network, port, written) or what is wrong with the entry.
// `list` and `index` are left for the caller to fill in.
std::variant<Rule, std::string> parse_rule_entry(std::string_view entry, RuleList list);

// "443" -> 443; the message says what is wrong otherwise ("port 0 is outside 1-65535").
std::variant<uint16_t, std::string> parse_port_text(std::string_view text);

}  // namespace netbox::policy::detail
