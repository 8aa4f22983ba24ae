#include "text_table.hpp"

#include "netbox/audit/printable.hpp"

#include <algorithm>

namespace netbox::audit::detail {
namespace {

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Width in characters (UTF-8 code points); good enough for hosts, paths and reasons.
std::size_t width(const std::string& s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return !is_continuation(static_cast<unsigned char>(c)); }));
}

std::string truncated(const std::string& s, std::size_t max) {
  if (width(s) <= max) return s;
  const std::size_t keep = max > 3 ? max - 3 : 0;
  std::size_t chars = 0, i = 0;
  for (; i < s.size(); ++i) {
    if (!is_continuation(static_cast<unsigned char>(s[i])) && chars++ == keep) break;
  }
  return s.substr(0, i) + std::string("...").substr(0, max - keep);
}

}  // namespace

std::string render_table(const std::vector<Column>& columns, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::vector<std::string>> cells;
  cells.reserve(rows.size());
  std::vector<std::size_t> widths;
  for (const auto& c : columns) widths.push_back(width(c.title));
  for (const auto& row : rows) {
    auto& out = cells.emplace_back();
    for (std::size_t i = 0; i < columns.size(); ++i) {
      out.push_back(truncated(escape_controls(i < row.size() ? row[i] : std::string()), columns[i].max_width));
      widths[i] = std::max(widths[i], width(out.back()));
    }
  }
  std::string text;
  auto line = [&](const std::vector<std::string>& values) {
    std::string l;
    for (std::size_t i = 0; i < columns.size(); ++i) {
      const std::size_t pad = widths[i] - width(values[i]);
      const bool last = i + 1 == columns.size();
      if (columns[i].right_aligned) l += std::string(pad, ' ') + values[i];
      else l += values[i] + (last ? std::string() : std::string(pad, ' '));
      if (!last) l += "  ";
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    text += l + "\n";
  };
  std::vector<std::string> titles;
  for (const auto& c : columns) titles.push_back(c.title);
  line(titles);
  for (const auto& row : cells) line(row);
  return text;
}

}  // namespace netbox::audit::detail
