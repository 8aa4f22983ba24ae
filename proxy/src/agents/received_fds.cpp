#include "agents/received_fds.hpp"

#include "netbox/proxy/control_protocol.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace netbox::proxy {

void ReceivedFds::clear() {
  for (int fd : fds_) ::close(fd);
  fds_.clear();
  overflowed_ = false;
}

ssize_t ReceivedFds::receive(int fd, char* buf, std::size_t len, std::size_t max) {
  // Room for one more than a request may carry: the kernel closes what does not fit and
  // says so (MSG_CTRUNC); one more than allowed is refused the same way.
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * (control::kMaxFds + 1))];
  iovec iov{buf, len};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  const ssize_t n = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  if (n < 0) return n;
  if (msg.msg_flags & MSG_CTRUNC) overflowed_ = true;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int got;
      std::memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof got);
      if (fds_.size() < max) {
        fds_.push_back(got);
      } else {
        ::close(got);
        overflowed_ = true;
      }
    }
  }
  return n;
}

}  // namespace netbox::proxy
