#include "agent_channel.hpp"

#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace netbox::cli {
namespace {

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::string why(const std::filesystem::path& socket, const std::string& what) {
  return socket.string() + ": " + what;
}

}  // namespace

proxy::control::Reply ask(const std::filesystem::path& socket, const proxy::control::Request& request,
                          std::chrono::seconds wait) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket.native().size() >= sizeof addr.sun_path) throw ChannelError(why(socket, "path too long for a Unix socket"));
  std::strncpy(addr.sun_path, socket.c_str(), sizeof addr.sun_path - 1);
  Fd s{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (s.fd < 0 || ::connect(s.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    throw ChannelError(why(socket, std::string("cannot connect: ") + std::strerror(errno)));
  timeval tv{static_cast<time_t>(wait.count()), 0};
  ::setsockopt(s.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const std::string line = proxy::control::to_line(request);
  for (std::size_t off = 0; off < line.size();) {
    const ssize_t n = ::send(s.fd, line.data() + off, line.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw ChannelError(why(socket, std::string("send: ") + std::strerror(errno)));
    off += static_cast<std::size_t>(n);
  }
  std::string in;
  for (;;) {
    if (const auto nl = in.find('\n'); nl != std::string::npos) {
      try {
        return proxy::control::parse_reply(in.substr(0, nl));
      } catch (const proxy::control::ProtocolError& e) {
        throw ChannelError(why(socket, std::string("an unreadable answer: ") + e.what()));
      }
    }
    char buf[8192];
    const ssize_t n = ::recv(s.fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      throw ChannelError(why(socket, "no answer within " + std::to_string(wait.count()) + " s"));
    if (n <= 0) throw ChannelError(why(socket, "closed without an answer"));
    in.append(buf, static_cast<std::size_t>(n));
    if (in.size() > proxy::control::kMaxLine) throw ChannelError(why(socket, "an answer longer than any line may be"));
  }
}

std::vector<std::filesystem::path> launch_sockets(const std::filesystem::path& dir, std::string& problem) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) {
    if (ec != std::errc::no_such_file_or_directory) problem = dir.string() + ": " + ec.message();
    return out;
  }
  for (const auto& entry : it) {
    const auto& p = entry.path();
    if (p.extension() != ".sock" || !entry.is_socket(ec)) continue;
    // PID.sock: a launcher that died without removing it answers nothing; skipped.
    try {
      if (::kill(static_cast<pid_t>(std::stol(p.stem().string())), 0) != 0 && errno == ESRCH) continue;
    } catch (const std::exception&) {
      continue;
    }
    out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<ListedAgent> list_agents(const std::filesystem::path& socket) {
  const auto reply = ask(socket, proxy::control::Operator{"list", "", ""});
  if (!reply.ok) throw std::runtime_error(why(socket, reply.error));
  std::vector<ListedAgent> out;
  const auto list = nlohmann::json::parse(reply.agents.empty() ? "[]" : reply.agents, nullptr, false);
  if (!list.is_array()) throw ChannelError(why(socket, "\"agents\" is not a list"));
  for (const auto& a : list) {
    if (!a.is_object()) continue;
    ListedAgent l;
    l.name = a.value("name", "");
    l.profile = a.value("profile", "");
    l.state = a.value("state", "");
    l.started = a.value("started", "");
    l.pid = a.value("pid", std::int64_t{0});
    l.denied = a.value("denied", std::uint64_t{0});
    l.via = socket;
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace netbox::cli
