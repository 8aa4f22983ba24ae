#pragma once
// A hostile client: many requests written back to back on one connection without waiting
// for answers (pipelining), while the answers are read as they come.
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <string>

namespace netbox::test {

struct FloodResult {
  std::size_t answers = 0;
  std::map<int, std::size_t> statuses;  // status -> how many
  std::string error;                    // why reading stopped early, if it did
};

// Sends request(i) for i in [0, count) to 127.0.0.1:port and reads every answer (bounded by
// `limit` of silence). Answers are parsed by their head and Content-Length.
FloodResult pipelined_flood(unsigned short port, std::size_t count, const std::function<std::string(std::size_t)>& request,
                            std::chrono::seconds limit = std::chrono::seconds(60));

}  // namespace netbox::test
