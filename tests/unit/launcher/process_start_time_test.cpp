// Whether a launcher still holds what it leased: a live process does (its start time tells
// it from a later process with the same pid), a zombie does not.
#include "netbox/launcher/subnet_pool.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace netbox::launcher {
namespace {

TEST(ProcessStartTime, ALiveProcessHasOneAZombieAndAGoneOneHaveNone) {
  EXPECT_NE(process_start_time(::getpid()), 0ULL);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  // Not reaped yet: a zombie. Wait until the kernel shows it as one.
  bool zombie = false;
  for (int i = 0; i < 200 && !zombie; ++i) {
    zombie = process_start_time(child) == 0;
    if (!zombie) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(zombie) << "a launcher that died unreaped must count as gone";
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  EXPECT_EQ(process_start_time(child), 0ULL);
}

}  // namespace
}  // namespace netbox::launcher
