#pragma once
#include <filesystem>
#include <string>
#include <string_view>

namespace netbox::test {

// A fresh directory under $TMPDIR, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  // Writes `content` to `name` inside the directory and returns its path.
  std::filesystem::path write(std::string_view name, std::string_view content) const;
 private:
  std::filesystem::path path_;
};

}  // namespace netbox::test
