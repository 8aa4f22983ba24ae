#pragma once
// Aligned columns for a terminal: long cells are cut with "...", control characters
// (an agent chooses its URLs) are shown as visible escapes (\x1b, \u009b; see
// escape_controls) so they cannot drive the reader's terminal.
#include <cstddef>
#include <string>
#include <vector>

namespace netbox::audit::detail {

struct Column {
  std::string title;
  std::size_t max_width;  // in characters; longer cells are truncated
  bool right_aligned = false;
};

std::string render_table(const std::vector<Column>& columns, const std::vector<std::vector<std::string>>& rows);

}  // namespace netbox::audit::detail
