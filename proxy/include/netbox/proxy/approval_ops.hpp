#pragma once
// The control ops of approve on the spot (docs/proxy.md, "Control socket"): `pending`,
// `approve` and `deny`, one JSON object per line each way, for a shared proxy's control
// socket and a launch's operator socket alike. Kept apart from control_protocol.hpp (the
// launcher's registration messages): an op here changes what an agent may reach, so its
// caller must have checked who is asking (the socket owner's uid or root) first.
#include "netbox/proxy/approval.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netbox::proxy {

// Where the ops go: the proxy's pending questions and its answer (Server::pending_asks,
// Server::answer_ask, or the runtime's book).
struct ApprovalDesk {
  std::function<std::vector<PendingAsk>()> pending;
  std::function<std::string(const AskTarget&, const AskAnswer&)> answer;
};

// Whether `line` is one of these ops ({"op": "pending" | "approve" | "deny", ...}).
bool is_approval_op(std::string_view line);

// The answer line ('\n' included) to an approval op. `grantor`: who the peer is, recorded
// with a grant ("uid 1000 (control socket)"); empty: the peer may not answer, and is told so.
//   {"op":"pending"} -> {"ok":true,"pending":[{"id","agent","host","port","door","first_seen",
//                        "expires","waiters","scopes"}]}
//   {"op":"approve","agent":A,"host":H[,"port":P][,"id":N][,"scope":"once"|"launch"|"policy"]}
//   {"op":"deny","agent":A,"host":H[,"port":P][,"id":N]} -> {"ok":true} or {"ok":false,"error"}
std::string approval_op(const ApprovalDesk& desk, std::string_view line, const std::string& grantor);

// "HOST" or "HOST:PORT" (or "[V6]:PORT") into an AskTarget's host and port; empty: fine,
// otherwise what is wrong.
std::string read_ask_host(std::string_view text, AskTarget& target);

}  // namespace netbox::proxy
