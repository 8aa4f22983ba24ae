#include "pipelined_flood.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <thread>

namespace netbox::test {
namespace {

// Takes complete answers off the front of `in`; false when more bytes are needed.
bool take_answer(std::string& in, int& status) {
  const auto end = in.find("\r\n\r\n");
  if (end == std::string::npos) return false;
  const std::string_view head(in.data(), end);
  if (head.size() < 12) return false;
  status = std::atoi(std::string(head.substr(9, 3)).c_str());
  std::size_t body = 0;
  for (std::size_t pos = head.find("\r\n"); pos != std::string_view::npos; pos = head.find("\r\n", pos + 2)) {
    const auto line = head.substr(pos + 2, head.find("\r\n", pos + 2) - pos - 2);
    if (line.size() > 15 && strncasecmp(line.data(), "content-length:", 15) == 0)
      body = std::strtoull(std::string(line.substr(15)).c_str(), nullptr, 10);
  }
  if (in.size() < end + 4 + body) return false;
  in.erase(0, end + 4 + body);
  return true;
}

}  // namespace

FloodResult pipelined_flood(unsigned short port, std::size_t count, const std::function<std::string(std::size_t)>& request,
                            std::chrono::seconds limit) {
  FloodResult result;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    result.error = std::string("connect: ") + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return result;
  }
  timeval tv{static_cast<time_t>(limit.count()), 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);

  std::thread writer([&] {
    std::string batch;
    for (std::size_t i = 0; i < count; ++i) {
      batch += request(i);
      if (batch.size() < 64 * 1024 && i + 1 < count) continue;
      for (std::size_t sent = 0; sent < batch.size();) {
        const auto n = ::send(fd, batch.data() + sent, batch.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) return;  // the proxy closed: the reader says why
        sent += static_cast<std::size_t>(n);
      }
      batch.clear();
    }
  });

  std::string in;
  char buf[64 * 1024];
  while (result.answers < count) {
    const auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      result.error = n == 0 ? "the proxy closed the connection" : std::string("recv: ") + std::strerror(errno);
      break;
    }
    in.append(buf, static_cast<std::size_t>(n));
    int status = 0;
    while (take_answer(in, status)) {
      ++result.answers;
      ++result.statuses[status];
    }
  }
  ::shutdown(fd, SHUT_RDWR);
  writer.join();
  ::close(fd);
  return result;
}

}  // namespace netbox::test
