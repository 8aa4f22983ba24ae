#pragma once
// What the embedded proxy says, sorted for the person at the terminal (issue 27 item 5):
// the proxy writes its log (JSON lines) into a pipe; a thread of the launcher copies every
// line to --log-file, puts only the refusals (and errors) on stderr, one short line each,
// nothing with --quiet, and counts the requests for the summary at exit. Lifecycle lines
// (listening, connection_limits, stopped ...) reach the log file only.
#include <cstdint>
#include <thread>

namespace netbox::launcher {

class ProxyLogRelay {
 public:
  // `log_file`: where every line goes (-1: none); the caller keeps it open.
  ProxyLogRelay(int log_file, bool quiet);
  ~ProxyLogRelay();  // finish()
  ProxyLogRelay(const ProxyLogRelay&) = delete;
  ProxyLogRelay& operator=(const ProxyLogRelay&) = delete;

  // The proxy's log descriptor (close-on-exec).
  int write_fd() const { return write_fd_; }
  // Once the proxy is gone: closes the write end and waits for the last line.
  void finish();

  std::uint64_t allowed() const { return allowed_; }
  std::uint64_t refused() const { return refused_; }
  std::uint64_t reported() const { return reported_; }  // decision `report`: let through, refused under enforce

 private:
  void run();
  void line(const std::string& text);

  int read_fd_ = -1;
  int write_fd_ = -1;
  int log_file_;
  bool quiet_;
  std::uint64_t allowed_ = 0;  // written by the thread, read after finish()
  std::uint64_t refused_ = 0;
  std::uint64_t reported_ = 0;
  std::thread thread_;
};

}  // namespace netbox::launcher
