#include "config_file.hpp"

#include "netbox/policy/trusted_file.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace netbox::cli {
namespace {

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::string read_all(int fd, const std::string& path) {
  std::string text;
  char buf[8192];
  for (;;) {
    const auto n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw UsageError(path + ": cannot read: " + std::strerror(errno));
    if (n == 0) return text;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > (1 << 20)) throw UsageError(path + ": larger than 1 MiB; not a config file");
  }
}

}  // namespace

bool apply_config_file(FlagTable& flags, const std::string& path, bool required) {
  const Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) {
    // The default file of a package is root:netbox 0640: another user runs without it.
    if (!required && (errno == ENOENT || (errno == EACCES && ::geteuid() != 0))) return false;
    throw UsageError(path + ": cannot open: " + std::strerror(errno));
  }
  // Run as root, the file must be root's and writable by no one else (its folder too).
  if (::geteuid() == 0) {
    const policy::FileTrust trust{.owners = {0},
                                  .own_group_may_write = false,
                                  .why = "whoever may write it decides what the proxy lets through"};
    if (auto problem = policy::untrusted_because(file.fd, path, trust)) throw UsageError(path + ": " + *problem);
  }
  // A key given twice would silently take its last value: the first one is refused.
  std::vector<std::set<std::string>> keys;  // the keys seen in each object being read
  const auto refuse_repeats = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start) keys.emplace_back();
    else if (event == Event::object_end) keys.pop_back();
    else if (event == Event::key && !keys.back().insert(parsed.get<std::string>()).second)
      throw UsageError(path + ": key " + parsed.get<std::string>() + " is given twice");
    return true;
  };
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(read_all(file.fd, path), refuse_repeats);
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError(path + ": not JSON: " + e.what());
  }
  flags.apply_config(json, path);
  return true;
}

}  // namespace netbox::cli
