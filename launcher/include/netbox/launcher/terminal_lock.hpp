#pragma once
// The launch's terminal is shared by the agent's output (agent_stdio.cpp copies it there)
// and the --ask questions (ask_prompt.cpp). While a question is open the agent's output is
// held: an agent could otherwise redraw the question's line (move the cursor onto the host
// and print another) so that the operator's `p` writes the agent's host into the policy.
// The copier takes this lock for each write to the terminal; a question holds it from the
// moment it is shown until it is answered (the agent blocks on its full pty meanwhile).
#include <mutex>

namespace netbox::launcher {

std::mutex& terminal_lock();

// The agent is gone: a question still open on the terminal is given up (refused) within a
// second, so that the agent's last output is not held for the question's whole time.
void end_terminal_questions();
bool terminal_questions_ended();

}  // namespace netbox::launcher
