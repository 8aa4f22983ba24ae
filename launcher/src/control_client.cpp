// A running `netbox proxy --control PATH`, reached over its Unix socket (JSON lines).
// The connection stays open for the agent's lifetime: if the launcher dies, the
// proxy sees it close and unregisters the agent by itself.
#include "netbox/launcher/launch.hpp"
#include "netbox/launcher/proxy_link.hpp"
#include "netbox/proxy/control_protocol.hpp"
#include "netbox/proxy/endpoint.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

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

  ProxyPorts attach(const AgentIdentity& agent) override {
    agent_ = agent;
    connect_socket();
    proxy::control::Register req;
    req.addr = agent.agent_addr;
    req.agent = agent.name;
    req.profile = agent.profile;
    req.listen = agent.host_addr + ":3128";
    req.socks_listen = agent.host_addr + ":0";  // any free port: ALL_PROXY names it
    if (agent.dns_pool) req.dns_pool = agent.dns_pool->to_string();
    if (agent.dns_pool6)
      req.ipv6 = proxy::control::Register::Ipv6{agent.agent_addr6, agent.host_addr6, agent.dns_pool6->to_string()};
    // Without --policy the proxy records the digest of the policy it runs (an empty one).
    req.launch = proxy::AgentLaunch{agent.pid, agent.command_line, agent.agent_addr, agent.policy_digest, agent.sandbox};
    req.credentials = agent.credentials;
    const auto reply = exchange(req);
    if (!reply.ok)
      throw LaunchError(kExitLauncherFailure, "the proxy at " + path_.string() + " refused the agent: " + reply.error);
    const std::string listen = reply.listen.empty() ? req.listen : reply.listen;
    // Registered from here on: a launch that stops now unregisters first, so the proxy
    // closes the agent's row with the launch's exit status instead of leaving it open.
    AgentOutcome refused;
    refused.exit_status = kExitLauncherFailure;
    try {
      return ports_from(reply, listen, agent);
    } catch (const LaunchError&) {
      detach(refused);
      throw;
    } catch (const std::invalid_argument& e) {
      detach(refused);
      throw LaunchError(kExitLauncherFailure,
                        "the proxy at " + path_.string() + " answered an unusable listen address " + e.what());
    }
  }

  // The agent's ports from the proxy's answer to its registration; throws LaunchError for a
  // proxy that lacks what the launch needs, std::invalid_argument for an unusable address.
  ProxyPorts ports_from(const proxy::control::Reply& reply, const std::string& listen, const AgentIdentity& agent) {
    ProxyPorts ports;
    ports.http = proxy::parse_endpoint(listen, proxy::PortZero::refused).port();
    // A proxy from before SOCKS5 answers none: the agent then has the HTTP listener only.
    if (!reply.socks_listen.empty())
      ports.socks = proxy::parse_endpoint(reply.socks_listen, proxy::PortZero::refused).port();
    if (agent.dns_pool) {
      // The agent's resolv.conf names the proxy: one that serves no DNS view (from before
      // the shared view) would leave it without names, so that launch stops here.
      if (reply.capture.empty())
        throw LaunchError(kExitLauncherFailure, "the proxy at " + path_.string() +
                                                    " serves no DNS view (an older netbox?); use --network proxy-vars");
      capture_ = proxy::parse_endpoint(reply.capture, proxy::PortZero::refused).port();
      // The agent's IPv6 connections are DNATed to the same port on the host's IPv6
      // address: a proxy that took no IPv6 link would leave them refused, unexplained.
      if (agent.dns_pool6 && (reply.capture6.empty() ||
                              proxy::parse_endpoint(reply.capture6, proxy::PortZero::refused).port() != capture_))
        throw LaunchError(kExitLauncherFailure, "the proxy at " + path_.string() +
                                                    " took no IPv6 link for the agent (an older netbox?); use --network proxy-vars");
    }
    return ports;
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

  std::uint16_t capture_port() const override { return capture_; }

  void detach(const AgentOutcome& outcome) noexcept override {
    if (fd_ < 0) return;
    try {
      const auto reply =
          exchange(proxy::control::Unregister{agent_.agent_addr, outcome.exit_status, outcome.resource_usage_json()});
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

  proxy::control::Reply exchange(const proxy::control::Request& req) {
    const std::string line = proxy::control::to_line(req);
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

  std::filesystem::path path_;
  int fd_ = -1;
  std::string buffer_;
  AgentIdentity agent_;
  std::uint16_t capture_ = 0;
};

}  // namespace

std::unique_ptr<ProxyLink> make_control_client(std::filesystem::path control_socket) {
  return std::make_unique<ControlClient>(std::move(control_socket));
}

RunningProxyFiles running_proxy_files(const std::filesystem::path& control_socket) {
  return ControlClient(control_socket).files();
}

}  // namespace netbox::launcher
