// The guardian's counting parts, driven with a simulated clock: a rate holds within one
// burst however a client retries, its Retry-After is exact, shaping gives the configured
// throughput, a byte budget holds to the byte under concurrent relays, and a trigger window
// fires on exactly the Nth event inside it.
#include "netbox/guardian/byte_budget.hpp"
#include "netbox/guardian/event_window.hpp"
#include "netbox/guardian/token_bucket.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace netbox::guardian {
namespace {

using namespace std::chrono_literals;
const Clock::time_point t0 = Clock::time_point() + 1000h;

TEST(TokenBucketTest, ABurstPassesThenTheWaitIsExact) {
  TokenBucket b(1, 1s, 3, t0);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(b.take(t0), Clock::duration::zero()) << i;
  const auto wait = b.take(t0);
  EXPECT_GT(wait, Clock::duration::zero());
  EXPECT_LE(wait, 1s);
  EXPECT_GT(b.take(t0 + wait - 1ms), Clock::duration::zero());  // a moment early: still waiting
  EXPECT_EQ(b.take(t0 + wait), Clock::duration::zero());         // exactly then: passes
  EXPECT_EQ(TokenBucket::retry_after_seconds(wait), 1u);
}

TEST(TokenBucketTest, RequestsPerMinuteAnswersRetryAfterInWholeSeconds) {
  TokenBucket b(10, 60s, 1, t0);  // requests_per_minute 10, burst 1
  EXPECT_EQ(b.take(t0), Clock::duration::zero());
  const auto wait = b.take(t0 + 1s);
  EXPECT_EQ(TokenBucket::retry_after_seconds(wait), 5u);  // 6 s between tokens, 1 s gone
  EXPECT_EQ(b.take(t0 + 6s), Clock::duration::zero());
  EXPECT_EQ(TokenBucket::retry_after_seconds(1ns), 1u);  // never "Retry-After: 0"
}

// A client that retries every 10 ms for 60 s gets at most rate * 60 + burst through.
TEST(TokenBucketTest, ARateHoldsWithinOneBurstOverAMinuteOfRetries) {
  const int per_minute = 120, burst = 10;
  TokenBucket b(per_minute, 60s, burst, t0);
  int passed = 0;
  for (auto t = t0; t < t0 + 60s; t += 10ms) passed += b.take(t) == Clock::duration::zero();
  EXPECT_LE(passed, per_minute + burst);
  EXPECT_GE(passed, per_minute - 1);  // and the rate is really given, not starved
}

// A relay that reads 64 KiB, then pauses as long as reserve() says, moves 1 MiB/s.
TEST(TokenBucketTest, ShapingGivesTheConfiguredThroughputWithoutDropping) {
  const double rate = 1024 * 1024;
  TokenBucket b(1024 * 1024, 1s, 64 * 1024, t0);
  auto t = t0;
  std::uint64_t moved = 0;
  while (t < t0 + 5s) {
    moved += 64 * 1024;  // every byte read is sent: shaping never drops
    t += b.reserve(t, 64 * 1024);
    t += 50us;  // the relay's own time
  }
  const double seconds = std::chrono::duration<double>(t - t0).count();
  EXPECT_NEAR(static_cast<double>(moved) / seconds, rate, rate * 0.02);
}

TEST(ByteBudgetTest, AChargeTakesWhatIsLeftThenNothing) {
  ByteBudget b(100);
  EXPECT_EQ(b.charge(60), 60u);
  EXPECT_FALSE(b.exhausted());
  EXPECT_EQ(b.charge(60), 40u);  // the relay sends only these 40
  EXPECT_TRUE(b.exhausted());
  EXPECT_EQ(b.charge(1), 0u);
  EXPECT_EQ(b.used(), 100u);
}

// Four io threads relaying for one agent at once never get more than the limit together.
TEST(ByteBudgetTest, ConcurrentRelaysHoldTheLimitToTheByte) {
  ByteBudget b(1'234'567);
  std::vector<std::thread> threads;
  std::vector<std::uint64_t> taken(4, 0);
  for (std::size_t i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 10'000; ++k) taken[i] += b.charge(97);
    });
  }
  for (auto& t : threads) t.join();
  std::uint64_t total = 0;
  for (auto n : taken) total += n;
  EXPECT_EQ(total, 1'234'567u);
  EXPECT_TRUE(b.exhausted());
}

TEST(EventWindowTest, FiresOnTheNthEventInsideTheWindowOnly) {
  EventWindow w(20, 60s);
  for (int i = 0; i < 19; ++i) EXPECT_FALSE(w.add(t0 + i * 1s)) << i;
  EXPECT_TRUE(w.add(t0 + 19s));  // the 20th within 60 s
  EXPECT_EQ(w.count(t0 + 19s), 20u);

  EventWindow slow(20, 60s);  // one every 4 s: 20 take 76 s
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(slow.add(t0 + i * 4s)) << i;
  EXPECT_LE(slow.count(t0 + 400s), 20u);  // memory: the last 20 only
}

// A rule fires once per crossing: the 21st, 22nd... denial inside the same minute do not
// kill (or post) again; once the count has fallen below the threshold, a new burst does.
TEST(EventWindowTest, FiresOncePerCrossingNotOnEveryEventWhileItHolds) {
  EventWindow w(3, 60s);
  EXPECT_FALSE(w.add(t0));
  EXPECT_FALSE(w.add(t0 + 1s));
  EXPECT_TRUE(w.add(t0 + 2s));  // the crossing
  for (int i = 3; i < 50; ++i) EXPECT_FALSE(w.add(t0 + i * 1s)) << i;  // still holding: silent
  // A lull: the window empties; the next event starts a new count, the third one fires.
  EXPECT_FALSE(w.add(t0 + 200s));
  EXPECT_FALSE(w.add(t0 + 201s));
  EXPECT_TRUE(w.add(t0 + 202s));
  EXPECT_FALSE(w.add(t0 + 203s));
}

TEST(EventWindowTest, AZeroWindowCountsEventsHoweverFarApart) {
  EventWindow w(3, Clock::duration::zero());
  EXPECT_FALSE(w.add(t0));
  EXPECT_FALSE(w.add(t0 + 1h));
  EXPECT_TRUE(w.add(t0 + 48h));
}

}  // namespace
}  // namespace netbox::guardian
