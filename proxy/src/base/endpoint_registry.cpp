#include "base/endpoint_registry.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace netbox::proxy {

namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace {

// Field 22 of /proc/PID/stat (clock ticks since boot): with the pid it names one process,
// even after the pid is reused. Empty when there is no such process.
std::string start_time(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!in || !std::getline(in, stat)) return {};
  const auto close = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return {};
  std::istringstream rest(stat.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i)
    if (i == 22) return field;
  return {};
}

std::atomic<unsigned> next_instance{0};

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

// mkdir with an exact mode (not narrowed by the umask); an existing folder is left as is.
bool make_dir(const fs::path& p) {
  if (::mkdir(p.c_str(), 0755) == 0) return ::chmod(p.c_str(), 0755) == 0;
  return errno == EEXIST;
}

}  // namespace

EndpointRegistry::EndpointRegistry(fs::path dir) : dir_(std::move(dir)) {
  file_ = dir_ / (std::to_string(::getpid()) + "." + std::to_string(next_instance++));
}

EndpointRegistry::~EndpointRegistry() { withdraw(); }

std::string EndpointRegistry::publish(const std::vector<asio::ip::tcp::endpoint>& endpoints) {
  std::lock_guard lock(mu_);
  if (withdrawn_) return {};
  if (!make_dir(dir_.parent_path()) || !make_dir(dir_)) return errno_text("cannot create " + dir_.string());
  std::string text = "pid " + std::to_string(::getpid()) + " " + start_time(::getpid()) + "\n";
  for (const auto& ep : endpoints) text += ep.address().to_string() + " " + std::to_string(ep.port()) + "\n";
  const auto tmp = file_.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return errno_text("cannot write " + tmp);
  bool ok = ::fchmod(fd, 0644) == 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  std::string why = ok ? std::string() : errno_text("cannot write " + tmp);
  if (::close(fd) != 0 && ok) why = errno_text("cannot write " + tmp), ok = false;
  if (ok && ::rename(tmp.c_str(), file_.c_str()) != 0) why = errno_text("cannot rename " + tmp), ok = false;
  if (!ok) {
    ::unlink(tmp.c_str());
    return why;
  }
  published_ = true;
  return {};
}

void EndpointRegistry::withdraw() {
  std::lock_guard lock(mu_);
  withdrawn_ = true;
  if (!published_) return;
  ::unlink(file_.c_str());
  published_ = false;
}

std::vector<asio::ip::tcp::endpoint> EndpointRegistry::read_all(std::string* problem) const {
  std::vector<asio::ip::tcp::endpoint> out;
  struct stat st {};
  if (::lstat(dir_.c_str(), &st) != 0) return out;  // no netbox has registered yet
  if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022)) {
    if (problem) *problem = dir_.string() + " is not a folder owned by root and writable only by it; ignored";
    return out;
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const auto name = entry.path().filename().string();
    if (name.ends_with(".tmp")) continue;
    std::ifstream in(entry.path());
    std::string word, started;
    long pid = 0;
    if (!(in >> word >> pid) || word != "pid" || pid <= 0) continue;
    std::getline(in, started);
    while (!started.empty() && started.front() == ' ') started.erase(0, 1);
    if (started.empty() || start_time(static_cast<pid_t>(pid)) != started) {
      ::unlink(entry.path().c_str());  // its process is gone; only root can, which is fine
      continue;
    }
    std::string addr;
    unsigned port = 0;
    while (in >> addr >> port) {
      boost::system::error_code aec;
      const auto a = asio::ip::make_address(addr, aec);
      if (!aec && port <= 65535) out.emplace_back(a, static_cast<unsigned short>(port));
    }
  }
  return out;
}

}  // namespace netbox::proxy
