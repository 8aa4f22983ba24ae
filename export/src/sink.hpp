#pragma once
// What the export thread hands records to. Every call is on the export thread; only the
// counters are read from others (the metrics).
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <string>

namespace netbox::siem {

class Sink {
 public:
  explicit Sink(std::string name) : label(std::move(name)) {}
  virtual ~Sink() = default;
  virtual void put(const nlohmann::json& record) = 0;
  virtual void flush() {}   // the export thread's queue is empty for now
  virtual void reopen() {}
  virtual void stop() {}    // shutdown: give up what is still in flight

  const std::string label;
  // False while the sink holds records it has not delivered (read by the destructor's wait).
  std::atomic<bool> idle{true};
  std::atomic<std::uint64_t> exported{0};
  std::atomic<std::uint64_t> dropped{0};
};

}  // namespace netbox::siem
