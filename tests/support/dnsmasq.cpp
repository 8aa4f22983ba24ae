#include "support/dnsmasq.hpp"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <stdexcept>
#include <thread>

namespace netbox::test {
namespace {

bool bindable(int type, unsigned short port) {
  int fd = ::socket(AF_INET, type | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(port);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  ::close(fd);
  return ok;
}

// dnsmasq binds the port for UDP and for TCP: find one free for both.
unsigned short free_dns_port() {
  for (int attempt = 0; attempt < 100; ++attempt) {
    int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    socklen_t len = sizeof sa;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
    ::close(fd);
    const auto port = ntohs(sa.sin_port);
    if (bindable(SOCK_STREAM, port)) return port;
  }
  throw std::runtime_error("no port free for both UDP and TCP on 127.0.0.1");
}

// True once a DNS server answers on the port (any answer: a REFUSED will do). Probing
// by binding the port ourselves would race with dnsmasq's own bind.
bool dns_answers(unsigned short port) {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(port);
  // Header (id 0x4e42, RD, one question) + "ready.invalid" A IN.
  const unsigned char query[] = {0x4e, 0x42, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 5, 'r', 'e', 'a', 'd', 'y',
                                 7, 'i', 'n', 'v', 'a', 'l', 'i', 'd', 0, 0, 1, 0, 1};
  bool ok = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0 &&
      ::send(fd, query, sizeof query, 0) == static_cast<ssize_t>(sizeof query)) {
    pollfd p{fd, POLLIN, 0};
    unsigned char buf[512];
    ok = ::poll(&p, 1, 100) == 1 && ::recv(fd, buf, sizeof buf, 0) >= 12;
  }
  ::close(fd);
  return ok;
}

}  // namespace

Dnsmasq::Dnsmasq(std::vector<std::string> records) {
  std::string why;
  // Another process may take the port between our check and dnsmasq's bind: try again.
  for (int attempt = 0; attempt < 5; ++attempt) {
    port_ = free_dns_port();
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
    argv.insert(argv.end(), records.begin(), records.end());
    proc_ = std::make_unique<BackgroundProcess>(argv, dir_.path() / ("dnsmasq" + std::to_string(attempt) + ".log"));
    for (int i = 0; i < 200; ++i) {
      if (dns_answers(port_)) return;
      if (!proc_->running()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    why = proc_->log();
    proc_.reset();
  }
  throw std::runtime_error("dnsmasq did not start: " + why);
}

std::string Dnsmasq::log() const { return proc_ ? proc_->log() : std::string(); }

}  // namespace netbox::test
