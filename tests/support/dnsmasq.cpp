#include "support/dnsmasq.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <stdexcept>
#include <thread>

namespace netbox::test {
namespace {

unsigned short free_udp_port() {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  ::close(fd);
  return ntohs(sa.sin_port);
}

// True once something holds the UDP port (dnsmasq has bound it).
bool udp_port_taken(unsigned short port) {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(port);
  const bool taken = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 && errno == EADDRINUSE;
  ::close(fd);
  return taken;
}

}  // namespace

Dnsmasq::Dnsmasq(std::vector<std::string> records) {
  port_ = free_udp_port();
  std::vector<std::string> argv{std::filesystem::exists("/usr/sbin/dnsmasq") ? "/usr/sbin/dnsmasq" : "dnsmasq",
                                "--no-daemon",
                                "--port=" + std::to_string(port_),
                                "--listen-address=127.0.0.1",
                                "--bind-interfaces",
                                "--no-resolv",
                                "--no-hosts",
                                "--no-poll",
                                "--conf-file=/dev/null",
                                "--user=root",
                                "--pid-file=" + (dir_.path() / "dnsmasq.pid").string(),
                                "--local-ttl=60",
                                "--log-facility=-"};
  for (auto& r : records) argv.push_back(std::move(r));
  proc_ = std::make_unique<BackgroundProcess>(argv, dir_.path() / "dnsmasq.log");
  for (int i = 0; i < 200; ++i) {
    if (udp_port_taken(port_)) return;
    if (!proc_->running()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  throw std::runtime_error("dnsmasq did not start: " + proc_->log());
}

}  // namespace netbox::test
