#pragma once
// The dashboard's files, embedded at build time (cmake/EmbedFiles.cmake).
#include <optional>
#include <string_view>

namespace netbox::dashboards {

struct Asset {
  std::string_view body;
  std::string_view content_type;
};

// "/" is index.html. Unknown paths: nullopt.
std::optional<Asset> find_asset(std::string_view path);

}  // namespace netbox::dashboards
