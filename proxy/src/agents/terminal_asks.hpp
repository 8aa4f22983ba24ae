#pragma once
// The questions of a launch registered with a shared proxy, asked on that launch's own
// terminal (netbox launch --proxy-control PATH --ask; docs/proxy.md, "Control socket"):
// each new question of its agent goes down the launch's registration connection (Asked),
// and so does its end (Settled), so a prompt answered elsewhere stops asking; the launch's
// Answer comes back on the same connection and may answer only its own agent's questions.
#include "netbox/proxy/approval.hpp"
#include "netbox/proxy/control_protocol.hpp"

#include <sys/types.h>

#include <functional>
#include <set>
#include <string>

namespace netbox::proxy {

class ApprovalBook;

// Told of one agent's questions: each as a line handed to `post_line`, which must not block
// (the control session posts it to its connection).
AskListener terminal_listener(std::function<void(std::string line)> post_line);

// A launch's terminal's answer, `own`: the agents registered on its connection. A question
// of any other agent is refused, and nothing is answered. The grantor recorded names the
// person at the launch's terminal: "alice at the launch's terminal (agent a1, control connection uid 0)".
control::Reply answer_from_terminal(ApprovalBook& book, const control::Answer& answer, const std::set<std::string>& own,
                                    uid_t peer);

}  // namespace netbox::proxy
