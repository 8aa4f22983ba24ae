#include "assets.hpp"

#include <cstddef>
#include <utility>

namespace netbox::dashboards {

extern const std::pair<std::string_view, std::string_view> kEmbeddedFiles[];
extern const std::size_t kEmbeddedFileCount;

static std::string_view content_type_for(std::string_view name) {
  auto ends = [&](std::string_view ext) {
    return name.size() >= ext.size() && name.substr(name.size() - ext.size()) == ext;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".png")) return "image/png";
  return "application/octet-stream";
}

std::optional<Asset> find_asset(std::string_view path) {
  if (path == "/" || path.empty()) path = "/index.html";
  path.remove_prefix(1);
  for (std::size_t i = 0; i < kEmbeddedFileCount; ++i)
    if (kEmbeddedFiles[i].first == path) return Asset{kEmbeddedFiles[i].second, content_type_for(path)};
  return std::nullopt;
}

}  // namespace netbox::dashboards
