#pragma once
// Cidr parsing with the reason for a refusal, for error messages that say what to fix.
#include "netbox/policy/cidr.hpp"

#include <string>
#include <string_view>
#include <variant>

namespace netbox::policy::detail {

// Either the range or a sentence saying what is wrong with `text`.
std::variant<Cidr, std::string> parse_cidr(std::string_view text);

// Strict address text: dotted quad or RFC 4291 IPv6, no zone id, no brackets.
std::optional<boost::asio::ip::address> parse_strict_address(std::string_view text);

}  // namespace netbox::policy::detail
