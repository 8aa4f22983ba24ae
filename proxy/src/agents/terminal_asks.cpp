#include "agents/terminal_asks.hpp"

#include "pipeline/approvals.hpp"

#include <algorithm>

namespace netbox::proxy {

AskListener terminal_listener(std::function<void(std::string line)> post_line) {
  AskListener l;
  l.asked = [post_line](const PendingAsk& q) { post_line(control::to_line(control::Asked{q})); };
  l.settled = [post_line](std::uint64_t id, bool answered, const std::string& how) {
    post_line(control::to_line(control::Settled{id, answered, how}));
  };
  return l;
}

control::Reply answer_from_terminal(ApprovalBook& book, const control::Answer& a, const std::set<std::string>& own,
                                    uid_t peer) {
  const auto waiting = book.pending();
  const auto q = std::find_if(waiting.begin(), waiting.end(), [&a](const PendingAsk& p) { return p.id == a.id; });
  // Another agent's question is refused as one that does not exist: a connection learns
  // nothing of other launches' questions (whose agent, that it waits) by probing ids.
  if (q == waiting.end() || !own.count(q->agent))
    return control::Reply::refused("no question " + std::to_string(a.id) +
                                   " of an agent registered on this connection is waiting (answered elsewhere, no "
                                   "answer came in time, or not this launch's: a launch answers its own agent's "
                                   "questions only)");
  AskAnswer answer;
  answer.approve = a.approve;
  answer.scope = a.scope;
  answer.grantor = (a.user.empty() ? std::string("the user") : a.user) + " at the launch's terminal (agent " + q->agent +
                   ", control connection uid " + std::to_string(peer) + ")";
  // Named by id and agent both: the book takes it only if it is still that agent's.
  if (auto why = book.answer(AskTarget{a.id, q->agent, {}, 0}, answer); !why.empty())
    return control::Reply::refused(why);
  return {};
}

}  // namespace netbox::proxy
