#pragma once
// Helpers for tests that run `netbox proxy` as a process under a low descriptor limit and
// attack it as hostile clients from several loopback addresses (one agent each).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace netbox::test {

// `ulimit -n N` (soft and hard), then exec the proxy: its raise to the hard limit is a no-op.
inline std::vector<std::string> with_fd_limit(int n, const std::vector<std::string>& argv) {
  std::vector<std::string> out{"/bin/sh", "-c", "ulimit -n " + std::to_string(n) + " && exec \"$0\" \"$@\""};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

// A TCP connection to 127.0.0.1:port from `source` (any 127/8 address: another agent).
inline int connect_from(const std::string& source, unsigned short port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in src{};
  src.sin_family = AF_INET;
  ::inet_pton(AF_INET, source.c_str(), &src.sin_addr);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(port);
  dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends `request` and reads until the peer closes (or 10 s pass).
inline std::string send_and_read(int fd, const std::string& request) {
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) return {};
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, static_cast<std::size_t>(n));
  return got;
}

inline std::string get_from(const std::string& source, unsigned short port, const std::string& url) {
  const int fd = connect_from(source, port);
  if (fd < 0) return "connect failed";
  // A path is the admin endpoint's, which answers only an address in Host (no token here).
  const std::string host = url.starts_with("/") ? source : "x";
  auto r = send_and_read(fd, "GET " + url + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n");
  ::close(fd);
  return r;
}

// Something arrived (the 503 of a refused connection) or the peer closed: not a live idle connection.
inline bool answered_or_closed(int fd) {
  char c;
  const auto n = ::recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);
  return n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
}

inline std::size_t count_lines(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
  return n;
}

inline std::size_t open_fds(pid_t pid) {
  std::size_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

// CPU time (user + system) the process has used so far.
inline std::chrono::milliseconds cpu_time(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::string field;
  long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {  // fields 14 and 15 of proc(5)
    if (i == 14) utime = std::stoll(field);
    if (i == 15) stime = std::stoll(field);
  }
  return std::chrono::milliseconds((utime + stime) * 1000 / ::sysconf(_SC_CLK_TCK));
}

inline bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

}  // namespace netbox::test
