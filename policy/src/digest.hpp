#pragma once
#include <string>
#include <string_view>

namespace netbox::policy::detail {

// Lowercase hex SHA-256 of `bytes`.
std::string sha256_hex(std::string_view bytes);

}  // namespace netbox::policy::detail
