#pragma once
// The agent's output shares the launcher's stderr (and its terminal) with netbox's own
// lines: the launcher's (`netbox launch: ...`) and the embedded proxy's refusals (an
// ISO timestamp, then the event). So that the agent cannot forge them (issue 22, 10), a
// line of the agent's that would start like one of them, after any blanks, control
// bytes and terminal escape sequences, is shown with kAgentLineMarker in front. The
// launcher copies every byte the agent writes (agent_stdio.hpp), so nothing bypasses it;
// on a terminal, a program that moves the cursor can still draw anything anywhere
// (docs/launch.md says so).
#include <string>
#include <string_view>

namespace netbox::launcher {

inline constexpr std::string_view kAgentLineMarker = "agent| ";

class AgentOutputGuard {
 public:
  // The bytes to write for `in`, in order. A line's start that could still become a
  // netbox-looking one is held back until it is decided.
  std::string filter(std::string_view in);
  // Whatever is held back, marked (nothing more is coming, or the agent went quiet
  // mid-way: held bytes are never let through unmarked). Empty when nothing is held.
  std::string flush();
  bool holding() const { return !held_.empty(); }

 private:
  enum class Verdict { undecided, forged, plain };
  static Verdict judge(std::string_view line_start);
  bool at_line_start_ = true;
  std::string held_;
};

}  // namespace netbox::launcher
