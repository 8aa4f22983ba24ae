#include "book_file.hpp"

#include "netbox/policy/trusted_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace netbox::tokens::book_file {

namespace fs = std::filesystem;
using nlohmann::json;

std::optional<json> read_book_file(const fs::path& path, bool missing_is_empty, const char* why) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT && missing_is_empty) return std::nullopt;
    fail(path, std::strerror(errno));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  policy::FileTrust trust;
  trust.owners = policy::invoking_owners();
  trust.why = why;
  if (auto untrusted = policy::untrusted_because(fd, path, trust)) fail(path, *untrusted);
  std::string text;
  char buf[8192];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(path, std::strerror(errno));
    }
    text.append(buf, static_cast<std::size_t>(n));
  }
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    fail(path, std::string("not JSON: ") + e.what());
  }
}

std::string text_of(const json& e, const fs::path& path, const std::string& at, const char* key, bool required) {
  const auto it = e.find(key);
  if (it == e.end()) {
    if (required) fail(path, at + "." + key + ": missing");
    return {};
  }
  if (!it->is_string()) fail(path, at + "." + key + ": expected a string");
  return it->get<std::string>();
}

}  // namespace netbox::tokens::book_file
