#pragma once
// RFC 4180 CSV: a field with a comma, quote, CR or LF is quoted, quotes are doubled,
// records end with CRLF. Fields are agent-chosen text, so control characters are escaped
// first (escape_controls), and a field starting with =, +, -, @, TAB or CR gets a leading
// ' so that a spreadsheet shows it instead of running it as a formula.
#include <string>
#include <string_view>
#include <vector>

namespace netbox::audit::detail {

std::string csv_field(std::string_view value);
std::string csv_record(const std::vector<std::string>& fields);

}  // namespace netbox::audit::detail
