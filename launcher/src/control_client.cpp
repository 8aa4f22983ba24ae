// A running `netbox proxy --control PATH`, reached over its Unix socket (JSON lines).
// The connection stays open for the agent's lifetime: if the launcher dies, the
// proxy sees it close and unregisters the agent by itself.
#include "netbox/launcher/launch.hpp"
#include "netbox/launcher/proxy_link.hpp"
#include "netbox/proxy/endpoint.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <iostream>

namespace netbox::launcher {
namespace {

class ControlClient final : public ProxyLink {
 public:
  explicit ControlClient(std::filesystem::path socket) : path_(std::move(socket)) {}
  ~ControlClient() override {
    if (fd_ >= 0) ::close(fd_);
  }

  std::uint16_t attach(const AgentIdentity& agent) override {
    agent_ = agent;
    connect_socket();
    nlohmann::json req = {{"op", "register"},
                          {"addr", agent.agent_addr},
                          {"agent", agent.name},
                          {"profile", agent.profile},
                          {"listen", agent.host_addr + ":3128"},
                          {"launch",
                           {{"pid", agent.pid}, {"command_line", agent.command_line}, {"address", agent.agent_addr}}}};
    // Without --policy the proxy records the digest of the policy it runs.
    if (!agent.policy_digest.empty()) req["launch"]["policy_digest"] = agent.policy_digest;
    if (!agent.sandbox.empty()) req["launch"]["sandbox"] = nlohmann::json::parse(agent.sandbox);
    nlohmann::json reply = exchange(req);
    if (!reply.value("ok", false))
      throw LaunchError(kExitLauncherFailure, "the proxy at " + path_.string() + " refused the agent: " +
                                                  reply.value("error", std::string("no reason given")));
    const std::string listen = reply.value("listen", agent.host_addr + ":3128");
    try {
      const auto port = proxy::parse_endpoint(listen, proxy::PortZero::refused).port();
      return port;
    } catch (const std::invalid_argument& e) {
      throw LaunchError(kExitLauncherFailure,
                        "the proxy at " + path_.string() + " answered an unusable listen address " + e.what());
    }
  }

  // The files of the proxy's own that the agent must not read (its policy and audit
  // store), asked on a connection of its own before anything is set up. A proxy too old
  // to know "info" names none.
  RunningProxyFiles files() {
    connect_socket();
    const nlohmann::json reply = exchange({{"op", "info"}});
    ::close(fd_);
    fd_ = -1;
    buffer_.clear();
    RunningProxyFiles out;
    if (!reply.value("ok", false)) return out;
    if (auto p = reply.value("policy_file", std::string()); !p.empty()) out.policy = p;
    if (auto d = reply.value("audit_db", std::string()); !d.empty()) out.audit_db = d;
    return out;
  }

  void detach(const AgentOutcome& outcome) noexcept override {
    if (fd_ < 0) return;
    try {
      nlohmann::json req = {{"op", "unregister"},
                            {"addr", agent_.agent_addr},
                            {"exit_status", outcome.exit_status},
                            {"resource_usage", nlohmann::json::parse(outcome.resource_usage_json())}};
      nlohmann::json reply = exchange(req);
      if (!reply.value("ok", false))
        std::cerr << "netbox launch: the proxy did not unregister the agent: " << reply.value("error", std::string()) << "\n";
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

  nlohmann::json exchange(const nlohmann::json& req) {
    std::string line = req.dump() + "\n";
    for (std::size_t off = 0; off < line.size();) {
      ssize_t n = ::send(fd_, line.data() + off, line.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        throw LaunchError(kExitLauncherFailure, "--proxy-control " + path_.string() + ": send: " + std::strerror(errno));
      off += static_cast<std::size_t>(n);
    }
    for (;;) {
      auto nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        std::string reply = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        auto j = nlohmann::json::parse(reply, nullptr, false);
        if (!j.is_object())
          throw LaunchError(kExitLauncherFailure, "--proxy-control " + path_.string() + ": unreadable answer: " + reply);
        return j;
      }
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        throw LaunchError(kExitLauncherFailure, "--proxy-control " + path_.string() + ": the proxy closed the connection" +
                                                    (n < 0 ? std::string(": ") + std::strerror(errno) : ""));
      buffer_.append(buf, static_cast<std::size_t>(n));
    }
  }

  std::filesystem::path path_;
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
