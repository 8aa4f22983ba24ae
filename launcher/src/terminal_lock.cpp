#include "netbox/launcher/terminal_lock.hpp"

#include <atomic>

namespace netbox::launcher {
namespace {

std::atomic<bool> questions_ended{false};

}  // namespace

// One per process: a launch has one terminal.
std::mutex& terminal_lock() {
  static std::mutex lock;
  return lock;
}

void end_terminal_questions() { questions_ended.store(true); }
bool terminal_questions_ended() { return questions_ended.load(); }

}  // namespace netbox::launcher
