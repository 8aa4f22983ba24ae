// The one duration grammar (netbox/policy/duration.hpp), which every flag, config key
// and policy limit that takes a length of time reads through.
#include "netbox/policy/duration.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace netbox::policy {
namespace {

using namespace std::chrono_literals;

std::chrono::milliseconds ms(std::string_view text) {
  const auto d = try_parse_duration(text);
  EXPECT_TRUE(d) << text << ": " << d.why;
  return d.value;
}

TEST(Duration, ABareNumberIsSeconds) {
  EXPECT_EQ(ms("90"), 90s);
  EXPECT_EQ(ms("0.5"), 500ms);
  EXPECT_EQ(ms("0"), 0ms);
}

TEST(Duration, EveryUnit) {
  EXPECT_EQ(ms("500ms"), 500ms);
  EXPECT_EQ(ms("30s"), 30s);
  EXPECT_EQ(ms("15m"), 15min);
  EXPECT_EQ(ms("2h"), 2h);
  EXPECT_EQ(ms("2d"), 48h);
  EXPECT_EQ(ms("1w"), 168h);
}

TEST(Duration, CompoundUnitsAddUp) {
  EXPECT_EQ(ms("1h30m"), 90min);
  EXPECT_EQ(ms("2m30s"), 150s);
  EXPECT_EQ(ms("1s500ms"), 1500ms);
  EXPECT_EQ(ms("1w2d3h4m5s6ms"), 168h + 48h + 3h + 4min + 5s + 6ms);
  EXPECT_EQ(ms("30m1h"), 90min);  // any order
  EXPECT_EQ(ms("1.5h"), 90min);
  EXPECT_EQ(ms(".5s"), 500ms);
}

TEST(Duration, AnythingElseIsRefusedWithAReason) {
  for (const char* bad : {"", "s", "ms", "h1", "1x", "-1", "-5m", "+5m", "1 h", " 1h", "1h ", "1hh", "1h2h", "1h30",
                          "1H", "1.2.3s", ".s", "nan", "inf", "1e3s", "1e999", "99999999999999999999s",
                          "100000000w", "1m-5s"}) {
    const auto d = try_parse_duration(bad);
    EXPECT_FALSE(d) << "accepted '" << bad << "'";
    EXPECT_FALSE(d.why.empty()) << bad;
  }
}

// Where a slip destroys rows (prune --older-than, --audit-retention), "30" meant as 30d
// is refused instead of read as 30 seconds.
TEST(Duration, ABareNumberCanBeRefused) {
  const auto d = try_parse_duration("30", BareNumber::refused);
  EXPECT_FALSE(d);
  EXPECT_NE(d.why.find("write 30s or 30d"), std::string::npos) << d.why;
  EXPECT_EQ(try_parse_duration("30d", BareNumber::refused).value, std::chrono::hours(720));
}

TEST(Duration, TheThrowingFormNamesTheTextAndTheGrammar) {
  try {
    parse_duration("5x");
    FAIL() << "accepted 5x";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'5x' is not a duration"), std::string::npos) << what;
    EXPECT_NE(what.find("1h30m"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace netbox::policy
