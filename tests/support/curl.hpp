#pragma once
// curl from tests, printing the answer's body and then, on a line of its own, its status.
#include "support/process.hpp"

#include <string>
#include <vector>

namespace netbox::test {

// curl -sS --max-time 20 -o - -w '\n%{http_code}' ARGS...
RunResult curl_with_status(const std::vector<std::string>& args);
// The status of curl_with_status's answer; 0 when curl got none.
int status_of(const RunResult& r);
// Its body, without the status line.
std::string body_of(const RunResult& r);

}  // namespace netbox::test
