#include "support/curl.hpp"

#include <cstdlib>

namespace netbox::test {

RunResult curl_with_status(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"curl", "-sS", "--max-time", "20", "-o", "-", "-w", "\n%{http_code}"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv);
}

int status_of(const RunResult& r) {
  const auto nl = r.out.rfind('\n');
  return nl == std::string::npos ? 0 : std::atoi(r.out.c_str() + nl + 1);
}

std::string body_of(const RunResult& r) { return r.out.substr(0, r.out.rfind('\n')); }

}  // namespace netbox::test
