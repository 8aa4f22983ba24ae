// A full queue is back pressure: has_room() turns false, when_room() is called once the
// writer has committed, and cancel_room_waiters() drops the waiting callbacks uncalled.
#include "netbox/audit/writer.hpp"
#include "support/sample_records.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <future>

namespace netbox::audit {
namespace {

using testing::request;
using namespace std::chrono_literals;

WriterOptions small_queue(const std::filesystem::path& path) {
  WriterOptions o;
  o.db_path = path;
  o.flush_interval = std::chrono::hours(1);  // only a waiter (or flush) makes it commit
  o.queue_capacity = 4;
  return o;
}

TEST(AuditBackPressure, AWaiterIsCalledOnceTheWriterMadeRoom) {
  test::TempDir dir;
  Writer writer(small_queue(dir.path() / "audit.db"));
  bool at_once = false;
  writer.when_room([&] { at_once = true; });
  EXPECT_TRUE(at_once) << "room already: called at once";
  for (int i = 0; i < 4; ++i) writer.insert(request("a", "h", "allow"));
  EXPECT_FALSE(writer.has_room());
  std::promise<void> called;
  writer.when_room([&] { called.set_value(); });
  // Nobody flushes: the waiter itself makes the writer commit now.
  ASSERT_EQ(called.get_future().wait_for(30s), std::future_status::ready);
  EXPECT_TRUE(writer.has_room());
  EXPECT_EQ(writer.stats().room_waits, 1u);
  EXPECT_EQ(writer.stats().rejected, 0u);
}

TEST(AuditBackPressure, CancelledWaitersAreDroppedUncalled) {
  test::TempDir dir;
  auto o = small_queue(dir.path() / "audit.db");
  o.max_batch = 1000;
  auto owned = std::make_shared<int>(1);
  std::weak_ptr<int> watch = owned;
  bool called = false;
  {
    Writer writer(o);
    writer.cancel_room_waiters();
    for (int i = 0; i < 4; ++i) writer.insert(request("a", "h", "allow"));
    writer.when_room([&called, keep = std::move(owned)] { called = true; });
    EXPECT_TRUE(watch.expired()) << "dropped, and what it held released";
  }
  EXPECT_FALSE(called);
}

}  // namespace
}  // namespace netbox::audit
