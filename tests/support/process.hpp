#pragma once
// Running programs from tests (the netbox binary, curl, ...) and capturing what they print.
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace netbox::test {

struct RunResult {
  int exit_code = -1;   // shell convention: 128+N when killed by signal N
  std::string out;
  std::string err;
};

// Runs argv[0] (searched in PATH) with a timeout; stdin is /dev/null (or `input` when given).
RunResult run(const std::vector<std::string>& argv,
              std::chrono::milliseconds timeout = std::chrono::seconds(60),
              const std::string& input = {});

// Runs the netbox binary under test with the given arguments.
RunResult run_netbox(const std::vector<std::string>& args,
                     std::chrono::milliseconds timeout = std::chrono::seconds(60));

std::filesystem::path netbox_binary();
std::filesystem::path source_dir();
// The command line of `netbox proxy` on 127.0.0.1:port with this policy and audit database
// (two io threads), for tests that run the proxy as a process; `extra` flags are appended.
std::vector<std::string> proxy_command(const std::filesystem::path& policy, unsigned short port,
                                       const std::filesystem::path& audit_db, std::vector<std::string> extra = {});
// Resident memory of a process in KiB (VmRSS from /proc), 0 if it cannot be read.
std::size_t rss_kib(int pid);

}  // namespace netbox::test
