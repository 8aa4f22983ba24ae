#pragma once
// RFC 4180 CSV: a field with a comma, quote, CR or LF is quoted, quotes are doubled,
// records end with CRLF.
#include <string>
#include <string_view>
#include <vector>

namespace netbox::audit::detail {

std::string csv_field(std::string_view value);
std::string csv_record(const std::vector<std::string>& fields);

}  // namespace netbox::audit::detail
