#include "netbox/launcher/credential_secrets.hpp"

#include "netbox/launcher/launch.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace netbox::launcher {
namespace {

// Larger than any API key; a bigger file is a mistake, not a secret.
constexpr std::size_t kMaxSecret = 16 * 1024;

[[noreturn]] void refuse(const std::string& key, const std::string& why) { throw LaunchError(kExitUsage, key + ": " + why); }

std::string read_secret_file(const std::string& key, const std::string& path) {
  const std::string at = key + ".secret_file " + path;
  if (path.empty() || path.front() != '/') refuse(at, "must be an absolute path");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ELOOP) refuse(at, "is a symbolic link; name the file itself");
    refuse(at, std::string("cannot be read: ") + std::strerror(errno));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) refuse(at, std::string("cannot be read: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) refuse(at, "is not a regular file");
  if (st.st_uid != 0) refuse(at, "is owned by uid " + std::to_string(st.st_uid) + ", not root");
  if ((st.st_mode & 077) != 0)
    refuse(at, "is open to group or others (mode " + std::to_string((st.st_mode >> 6) & 7) +
                   std::to_string((st.st_mode >> 3) & 7) + std::to_string(st.st_mode & 7) + "); chmod 600 it");
  std::string value;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) refuse(at, std::string("cannot be read: ") + std::strerror(errno));
    if (n == 0) break;
    value.append(buf, static_cast<std::size_t>(n));
    if (value.size() > kMaxSecret) refuse(at, "is larger than 16 KiB; a secret is one line");
  }
  ::explicit_bzero(buf, sizeof buf);
  // `echo KEY > file` leaves a line end, which is no part of the key.
  while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) value.pop_back();
  return value;
}

}  // namespace

LaunchCredentials read_credentials(const policy::Profile& profile, const std::string& list,
                                   const std::map<std::string, std::string>& launcher_env) {
  LaunchCredentials out;
  for (std::size_t i = 0; i < profile.credentials.size(); ++i) {
    const policy::Credential& c = profile.credentials[i];
    const std::string key = list + "[" + std::to_string(i) + "] (" + c.name + ")";
    std::string value;
    if (!c.secret_env.empty()) {
      auto it = launcher_env.find(c.secret_env);
      if (it == launcher_env.end() || it->second.empty())
        refuse(key, "secret_env " + c.secret_env + " is not set in the launcher's environment (or is empty)");
      value = it->second;
      out.secret_variables.push_back(c.secret_env);
    } else {
      value = read_secret_file(key, c.secret_file);
      if (value.empty()) refuse(key, "secret_file " + c.secret_file + " is empty");
    }
    if (value.find_first_of(std::string("\r\n\0", 3)) != std::string::npos)
      refuse(key, std::string("the secret (") + (c.secret_env.empty() ? c.secret_file : "$" + c.secret_env) +
                      ") holds a line break or NUL; it goes into a header");
    proxy::CredentialSecret s{c.name, proxy::make_placeholder(c.name), proxy::Secret(std::move(value))};
    ::explicit_bzero(value.data(), value.capacity());  // a short value's bytes stay in the moved-from string
    // The launcher's variable never reaches the agent with the secret in it, whatever
    // --keep-env or --env say: it holds the placeholder.
    if (!c.secret_env.empty()) out.placeholders[c.secret_env] = s.placeholder;
    if (!c.env.empty()) out.placeholders[c.env] = s.placeholder;
    out.secrets.push_back(std::move(s));
  }
  return out;
}

void refuse_secrets_in(const std::vector<std::string>& agent_env, const LaunchCredentials& credentials) {
  for (const auto& entry : agent_env) {
    const auto eq = entry.find('=');
    const std::string_view value = std::string_view(entry).substr(eq == std::string::npos ? 0 : eq + 1);
    for (const auto& s : credentials.secrets)
      if (value.find(s.secret.reveal()) != std::string_view::npos)
        throw LaunchError(kExitUsage, "the agent's variable " + entry.substr(0, eq) + " would hold the secret of credential " +
                                          s.name + " (from --env or --keep-env); the agent gets a placeholder, never the secret");
  }
}

void forget_secret_variables(std::map<std::string, std::string>& env, const std::vector<std::string>& variables) {
  for (const auto& name : variables) {
    auto it = env.find(name);
    if (it == env.end()) continue;
    ::explicit_bzero(it->second.data(), it->second.capacity());
    env.erase(it);
  }
}

void scrub_launcher_environment(const std::vector<std::string>& variables) {
  for (const auto& name : variables) {
    for (char** e = environ; e && *e; ++e) {
      const std::size_t n = name.size();
      if (std::strncmp(*e, name.c_str(), n) == 0 && (*e)[n] == '=') {
        char* value = *e + n + 1;
        std::memset(value, 'x', std::strlen(value));
      }
    }
    ::unsetenv(name.c_str());
  }
}

}  // namespace netbox::launcher
