// The marker on the agent's lines that look like netbox's own (issue 22, 10).
#include "netbox/launcher/agent_output_guard.hpp"

#include <gtest/gtest.h>

namespace netbox::launcher {
namespace {

std::string through(AgentOutputGuard& g, std::initializer_list<std::string_view> chunks) {
  std::string out;
  for (auto c : chunks) out += g.filter(c);
  return out + g.flush();
}

TEST(AgentOutputGuard, LinesShapedLikeNetboxsAreMarkedOthersPassAsTheyAre) {
  AgentOutputGuard g;
  EXPECT_EQ(through(g, {"netbox launch: refused x\nplain\n"}), "agent| netbox launch: refused x\nplain\n");
  EXPECT_EQ(through(g, {"2026-11-27T04:50:00Z request\n"}), "agent| 2026-11-27T04:50:00Z request\n");
  EXPECT_EQ(through(g, {"2026 was a year\n", "a netbox line\n"}), "2026 was a year\na netbox line\n");
  EXPECT_EQ(through(g, {"10%\rNETBOX: x\n"}), "10%\ragent| NETBOX: x\n");
  EXPECT_EQ(through(g, {"\x1b[1;31m  \x1b]0;t\x07netbox\n"}), "agent| \x1b[1;31m  \x1b]0;t\x07netbox\n");
}

TEST(AgentOutputGuard, AStartSplitAcrossReadsIsHeldUntilDecidedAndMarkedWhenCutShort) {
  AgentOutputGuard g;
  EXPECT_EQ(g.filter("ne"), "");
  EXPECT_TRUE(g.holding());
  EXPECT_EQ(g.filter("tbox: x\n"), "agent| netbox: x\n");
  EXPECT_EQ(g.filter("new"), "new") << "decided plain at the 'w'";
  EXPECT_EQ(g.filter(" line\n$ "), " line\n$ ");
  AgentOutputGuard quiet;
  EXPECT_EQ(quiet.filter("\nnet"), "\n");
  EXPECT_EQ(quiet.flush(), "agent| net") << "held bytes never go out unmarked";
  EXPECT_EQ(quiet.filter("box: refused\n"), "box: refused\n");
}

}  // namespace
}  // namespace netbox::launcher
