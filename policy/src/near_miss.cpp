#include "netbox/policy/near_miss.hpp"

#include <algorithm>

namespace netbox::policy {
namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string closest_name(std::string_view given, const std::vector<std::string_view>& names) {
  std::string_view best;
  std::size_t best_d = 3;
  for (auto n : names)
    if (const std::size_t d = edit_distance(given, n); d < best_d) best_d = d, best = n;
  return std::string(best);
}

}  // namespace netbox::policy
