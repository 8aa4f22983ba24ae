// A running `netbox proxy --control PATH`, reached over its Unix socket (JSON lines): the
// agent's sockets, made in its namespace, go with its registration (SCM_RIGHTS).
// The connection stays open for the agent's lifetime: if the launcher dies, the
// proxy sees it close and unregisters the agent by itself.
#include "netbox/launcher/launch.hpp"
#include "netbox/launcher/proxy_link.hpp"
#include "netbox/proxy/control_protocol.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <vector>

namespace netbox::launcher {
namespace {

class ControlClient final : public ProxyLink {
 public:
  explicit ControlClient(std::filesystem::path socket) : path_(std::move(socket)) {}
  ~ControlClient() override {
    if (fd_ >= 0) ::close(fd_);
  }

  void attach(const AgentIdentity& agent) override {
    agent_ = agent;
    connect_socket();
    attach_sockets(agent);
  }

  // The agent's sockets go to the proxy with its registration (SCM_RIGHTS): it serves them
  // as the embedded proxy does, knows the agent by them, and answers the key to unregister.
  void attach_sockets(const AgentIdentity& agent) {
    if (!agent.sockets) throw LaunchError(kExitLauncherFailure, "the agent has no sockets for the proxy");
    const proxy::AgentSockets& s = *agent.sockets;
    proxy::control::Register req;
    req.agent = agent.name;
    req.profile = agent.profile;
    req.sockets = proxy::control::Register::Sockets{static_cast<int>(s.http.size()), static_cast<int>(s.socks.size()),
                                                    static_cast<int>(s.capture.size()), agent.dns_pool.has_value(),
                                                    s.diag >= 0};
    if (agent.dns_pool) req.dns_pool = agent.dns_pool->to_string();
    if (agent.dns_pool6) req.dns_pool6 = agent.dns_pool6->to_string();
    req.launch = proxy::AgentLaunch{agent.pid, agent.command_line, "", agent.policy_digest, agent.sandbox};
    req.credentials = agent.credentials;
    req.ask = agent.ask;
    std::vector<int> fds;
    for (const auto* list : {&s.http, &s.socks, &s.capture}) fds.insert(fds.end(), list->begin(), list->end());
    if (agent.dns_pool) fds.insert(fds.end(), {s.dns_udp, s.dns_tcp});
    if (s.diag >= 0) fds.push_back(s.diag);
    const auto reply = exchange(req, fds);
    if (!reply.ok)
      throw LaunchError(kExitLauncherFailure, "the proxy at " + path_.string() + " refused the agent: " + reply.error);
    key_ = reply.addr;
    if (key_.empty()) {
      AgentOutcome refused;
      refused.exit_status = kExitLauncherFailure;
      detach(refused);
      throw LaunchError(kExitLauncherFailure, "the proxy at " + path_.string() +
                                                  " took the agent's sockets but named no key to unregister it (an older netbox?)");
    }
  }

  // The files of the proxy's own that the agent must not read (its policy and audit
  // store), asked on a connection of its own before anything is set up. A proxy too old
  // to know "info" names none.
  RunningProxyFiles files() {
    connect_socket();
    const auto reply = exchange(proxy::control::Info{});
    ::close(fd_);
    fd_ = -1;
    buffer_.clear();
    RunningProxyFiles out;
    if (!reply.ok) return out;
    if (!reply.policy_file.empty()) out.policy = reply.policy_file;
    if (!reply.audit_db.empty()) out.audit_db = reply.audit_db;
    out.ca_pem = reply.ca_pem;
    return out;
  }

  void detach(const AgentOutcome& outcome) noexcept override {
    if (fd_ < 0) return;
    try {
      const auto reply =
          exchange(proxy::control::Unregister{key_, outcome.exit_status, outcome.resource_usage_json()});
      if (!reply.ok) std::cerr << "netbox launch: the proxy did not unregister the agent: " << reply.error << "\n";
    } catch (const std::exception& e) {
      std::cerr << "netbox launch: unregistering the agent: " << e.what() << "\n";
    }
    ::close(fd_);
    fd_ = -1;
  }

 private:
  void connect_socket() {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path_.native().size() >= sizeof addr.sun_path)
      throw LaunchError(kExitUsage, "--proxy-control " + path_.string() + ": path too long for a Unix socket");
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      throw LaunchError(kExitLauncherFailure, "--proxy-control " + path_.string() + ": cannot connect: " +
                                                  std::strerror(errno) + " (is `netbox proxy --control` running?)");
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }

  // `fds` go with the line's first bytes (SCM_RIGHTS); the proxy duplicates what it keeps.
  proxy::control::Reply exchange(const proxy::control::Request& req, const std::vector<int>& fds = {}) {
    const std::string line = proxy::control::to_line(req);
    for (std::size_t off = 0; off < line.size();) {
      ssize_t n = off == 0 && !fds.empty() ? send_with_fds(line, fds)
                                           : ::send(fd_, line.data() + off, line.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        throw LaunchError(kExitLauncherFailure, "--proxy-control " + path_.string() + ": send: " + std::strerror(errno));
      off += static_cast<std::size_t>(n);
    }
    for (;;) {
      auto nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        const std::string reply = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        try {
          return proxy::control::parse_reply(reply);
        } catch (const proxy::control::ProtocolError& e) {
          throw LaunchError(kExitLauncherFailure,
                            "--proxy-control " + path_.string() + ": unreadable answer (" + e.what() + ")");
        }
      }
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        throw LaunchError(kExitLauncherFailure, "--proxy-control " + path_.string() + ": the proxy closed the connection" +
                                                    (n < 0 ? std::string(": ") + std::strerror(errno) : ""));
      buffer_.append(buf, static_cast<std::size_t>(n));
      if (buffer_.size() > proxy::control::kMaxLine)
        throw LaunchError(kExitLauncherFailure, "--proxy-control " + path_.string() + ": an answer longer than " +
                                                    std::to_string(proxy::control::kMaxLine) + " bytes");
    }
  }

  ssize_t send_with_fds(const std::string& line, const std::vector<int>& fds) {
    std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
    iovec iov{const_cast<char*>(line.data()), line.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    return ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
  }

  std::filesystem::path path_;
  std::string key_;  // registered by sockets: what the proxy keys the agent by
  int fd_ = -1;
  std::string buffer_;
  AgentIdentity agent_;
};

}  // namespace

std::unique_ptr<ProxyLink> make_control_client(std::filesystem::path control_socket) {
  return std::make_unique<ControlClient>(std::move(control_socket));
}

RunningProxyFiles running_proxy_files(const std::filesystem::path& control_socket) {
  return ControlClient(control_socket).files();
}

}  // namespace netbox::launcher
