#include "csv.hpp"

#include "netbox/audit/printable.hpp"

namespace netbox::audit::detail {

std::string csv_field(std::string_view value) {
  std::string text = escape_controls(value);
  // A spreadsheet runs a cell that starts like a formula (OWASP, "CSV Injection"): a
  // leading quote makes it text, shown as written.
  if (!text.empty() && std::string_view("=+-@\t\r").find(text.front()) != std::string_view::npos)
    text.insert(0, 1, '\'');
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string csv_record(const std::vector<std::string>& fields) {
  std::string line;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) line += ',';
    line += csv_field(fields[i]);
  }
  line += "\r\n";
  return line;
}

}  // namespace netbox::audit::detail
