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

// What a terminal shows as nothing, before "netbox", is skipped like blanks (a zero-width
// space forged a netbox line past the marker); visible text that is not ASCII is text.
TEST(AgentOutputGuard, InvisibleCodePointsBeforeALookalikeLineAreSeenThrough) {
  AgentOutputGuard g;
  EXPECT_EQ(through(g, {"\u200bnetbox launch: exited 0\n"}), "agent| \u200bnetbox launch: exited 0\n");
  EXPECT_EQ(through(g, {"\ufeff\u2066\u00a0netbox: x\n"}), "agent| \ufeff\u2066\u00a0netbox: x\n");
  EXPECT_EQ(through(g, {"\xc2\x85netbox: x\n"}), "agent| \xc2\x85netbox: x\n") << "a C1 control (NEL)";
  EXPECT_EQ(through(g, {"\u00e9t\u00e9 netbox\n", "\u2713 netbox ok\n"}), "\u00e9t\u00e9 netbox\n\u2713 netbox ok\n");
  AgentOutputGuard split;
  EXPECT_EQ(split.filter("\xe2\x80"), "") << "a code point cut between reads is held";
  EXPECT_EQ(split.filter("\x8bnetbox: x\n"), "agent| \u200bnetbox: x\n");
}

// A cursor moved back mid-line (backspace, or an escape sequence such as ESC[1G) lets the
// text after it overwrite the line's start on a terminal: it is judged as a start too.
TEST(AgentOutputGuard, TextAfterTheCursorMovesBackIsJudgedLikeALinesStart) {
  AgentOutputGuard g;
  EXPECT_EQ(through(g, {"x\bnetbox launch: refused\n"}), "xagent| \bnetbox launch: refused\n");
  EXPECT_EQ(through(g, {"x\x1b[1Gnetbox launch: refused\n"}), "xagent| \x1b[1Gnetbox launch: refused\n");
  EXPECT_EQ(through(g, {"ok \x1b[32mdone\x1b[0m\n"}), "ok \x1b[32mdone\x1b[0m\n") << "colours stay as they are";
  // A frame that ends on an escape sequence is flushed as it is: nothing visible to forge.
  AgentOutputGuard tui;
  EXPECT_EQ(tui.filter("frame\x1b[?25h"), "frame");
  EXPECT_EQ(tui.flush(), "\x1b[?25h");
  EXPECT_EQ(tui.filter("netbox: x\n"), "agent| netbox: x\n") << "and what comes next is judged";
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
