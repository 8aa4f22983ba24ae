#pragma once
// A child process that runs while a test needs it (a proxy, an upstream, dnsmasq),
// with its stderr collected to a file, and SIGTERM then SIGKILL at scope exit.
#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <sys/types.h>

namespace netbox::test {

class BackgroundProcess {
 public:
  BackgroundProcess(std::vector<std::string> argv, std::filesystem::path log_file,
                    std::map<std::string, std::string> extra_env = {});
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  // Sends `sig` and waits up to `timeout` for the exit; returns the shell-style status or -1.
  int stop(int sig, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  std::string log() const;  // everything the process wrote to stdout/stderr so far

 private:
  pid_t pid_ = -1;
  int status_ = -1;
  std::filesystem::path log_;
};

// A TCP port on 127.0.0.1 that was free a moment ago.
unsigned short free_port();
// Polls until something accepts on 127.0.0.1:port, or the timeout passes.
bool wait_for_port(unsigned short port, std::chrono::milliseconds timeout = std::chrono::seconds(20));

}  // namespace netbox::test
