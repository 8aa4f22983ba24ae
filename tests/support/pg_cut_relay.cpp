#include "support/pg_cut_relay.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace netbox::test {
namespace {

bool read_exact(int fd, void* buf, std::size_t n) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

bool write_all(int fd, const void* buf, std::size_t n) {
  const auto* p = static_cast<const char*>(buf);
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

std::uint32_t be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

// One protocol message: `type` 0 for the startup's, which has none. Empty when the peer closed.
struct Message {
  char type = 0;
  std::string bytes;  // the whole message as sent, type and length included
};

bool read_message(int fd, bool typed, Message& m) {
  unsigned char head[5];
  const std::size_t head_size = typed ? 5 : 4;
  if (!read_exact(fd, head, head_size)) return false;
  const std::uint32_t len = be32(head + (typed ? 1 : 0));
  if (len < 4 || len > (64u << 20)) return false;
  m.type = typed ? static_cast<char>(head[0]) : 0;
  m.bytes.assign(reinterpret_cast<char*>(head), head_size);
  m.bytes.resize(head_size + len - 4);
  return read_exact(fd, m.bytes.data() + head_size, len - 4);
}

int connect_loopback(unsigned short port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

}  // namespace

struct PgCutRelay::Link {
  int client = -1;
  int server = -1;
  void cut() {
    ::shutdown(client, SHUT_RDWR);
    ::shutdown(server, SHUT_RDWR);
  }
};

PgCutRelay::PgCutRelay(unsigned short server_port) : server_port_(server_port) {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(listener_, 16) != 0 || ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error(std::string("PgCutRelay: cannot listen: ") + std::strerror(errno));
  port_ = ntohs(a.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

PgCutRelay::~PgCutRelay() {
  stopping_ = true;
  ::shutdown(listener_, SHUT_RDWR);
  acceptor_.join();
  {
    std::lock_guard lk(mu_);
    for (auto& l : links_) l->cut();
  }
  for (auto& t : threads_) t.join();
  for (auto& l : links_) {
    ::close(l->client);
    ::close(l->server);
  }
  ::close(listener_);
}

void PgCutRelay::accept_loop() {
  while (!stopping_) {
    const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (stopping_) return;
      continue;
    }
    std::lock_guard lk(mu_);
    threads_.emplace_back([this, client] { serve(client); });
  }
}

void PgCutRelay::serve(int client) {
  auto link = std::make_shared<Link>();
  link->client = client;
  {
    std::lock_guard lk(mu_);
    links_.push_back(link);
  }
  if (holding_) return link->cut();
  // The startup: an encryption request gets "no" from here; the plain startup goes on.
  Message m;
  for (;;) {
    if (!read_message(client, false, m)) return link->cut();
    const std::uint32_t code = be32(reinterpret_cast<const unsigned char*>(m.bytes.data()) + 4);
    if (code != 80877103 && code != 80877104) break;  // SSLRequest, GSSENCRequest
    if (!write_all(client, "N", 1)) return link->cut();
  }
  link->server = connect_loopback(server_port_);
  if (link->server < 0 || !write_all(link->server, m.bytes.data(), m.bytes.size())) return link->cut();
  std::thread answers([this, link] {
    relay_server_answers(*link);
    link->cut();
  });
  // The client's messages pass unchanged; the armed marker is looked for in them.
  while (read_message(client, true, m)) {
    if (armed_ && !seen_) {
      std::lock_guard lk(mu_);
      if (m.bytes.find(marker_) != std::string::npos) seen_ = true;
    }
    if (!write_all(link->server, m.bytes.data(), m.bytes.size())) break;
  }
  link->cut();
  answers.join();
}

bool PgCutRelay::relay_server_answers(Link& link) {
  Message m;
  while (read_message(link.server, true, m)) {
    // CommandComplete: its tag follows the length; "COMMIT" once the transaction is durable.
    if (m.type == 'C' && m.bytes.compare(5, 6, "COMMIT") == 0 && seen_ && armed_.exchange(false)) {
      if (hold_after_cut_) holding_ = true;
      ++cuts_;
      return false;
    }
    if (!write_all(link.client, m.bytes.data(), m.bytes.size())) return false;
  }
  return false;
}

}  // namespace netbox::test
