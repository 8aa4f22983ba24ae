#pragma once
// Descriptors a control client passed with its lines (SCM_RIGHTS): owned until a request
// takes them, closed otherwise, so nothing a client sends stays open in the proxy.
#include <sys/types.h>

#include <cstddef>
#include <vector>

namespace netbox::proxy {

class ReceivedFds {
 public:
  ReceivedFds() = default;
  ~ReceivedFds() { clear(); }
  ReceivedFds(const ReceivedFds&) = delete;
  ReceivedFds& operator=(const ReceivedFds&) = delete;

  std::size_t size() const { return fds_.size(); }
  const std::vector<int>& fds() const { return fds_; }
  // More came than a request may carry (kMaxFds), or the kernel dropped some (MSG_CTRUNC).
  bool overflowed() const { return overflowed_; }
  void clear();  // closes every one, and forgets an overflow

  // One recvmsg(2) on the non-blocking `fd` into `buf`: the bytes read (0: closed; -1 with
  // errno), every descriptor that came with them owned here (close-on-exec), at most `max`
  // in all: more are closed at once and mark the overflow.
  ssize_t receive(int fd, char* buf, std::size_t len, std::size_t max);

 private:
  std::vector<int> fds_;
  bool overflowed_ = false;
};

}  // namespace netbox::proxy
