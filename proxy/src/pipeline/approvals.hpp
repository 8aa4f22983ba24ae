#pragma once
// The approval book (issue 27 item 3, `netbox launch --ask`): the questions waiting for a
// person, and the grants people gave. Admission's askable refusals (a host or port the
// policy does not list, of an agent attached with `ask`) are parked here by `decide`
// (admission_steps.hpp); an answer from the launch's terminal, the control socket or the
// admin API resumes them. Never an io thread waits: a parked request is a callback, and
// its timer runs on its connection's executor (ask_step.hpp).
//
// Shared by every io thread, the control socket and the launcher's prompt thread: one
// mutex, held only to read or change the maps, never while a callback runs.
#include "netbox/proxy/approval.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

namespace netbox::proxy {

struct DoorServices;

// A destination a person let an agent reach. The rows of the requests it let through name
// it (rule `grant:ID`).
struct Grant {
  std::uint64_t id = 0;
  std::string host;
  std::uint16_t port = 0;
  AskScope scope = AskScope::once;
  std::string grantor;
  std::string rule() const { return "grant:" + std::to_string(id); }
};

// What a parked request is resumed with: a grant, or why it stays refused.
struct AskOutcome {
  std::optional<Grant> grant;
  std::string why_refused;  // "denied by terminal", "no answer within 60s", ...
};

class ApprovalBook {
 public:
  // Questions one agent may have waiting at once; one more is refused at once.
  static constexpr std::size_t kMaxPendingPerAgent = 32;
  // Requests waiting on one question (an agent retrying in a loop); more are refused at once.
  static constexpr std::size_t kMaxWaitersPerQuestion = 64;

  // `reload_policy`: after a grant of scope policy written to the policy file in force.
  ApprovalBook(DoorServices& rt, std::function<void()> reload_policy)
      : rt_(rt), reload_policy_(std::move(reload_policy)) {}

  // An agent attached with `ask` (its profile: where scope `policy` writes; `listener`: who
  // is told of its questions, may be unset); forget() when it leaves.
  void enable(const std::string& agent, const std::string& profile, AskSettings settings, AskListener listener = {});
  // The agent is gone: its grants end, its questions are refused (their waiters resumed).
  void forget(const std::string& agent);
  std::optional<AskSettings> settings(const std::string& agent) const;

  // A grant of scope launch or policy for this agent, host and port, if one was given.
  std::optional<Grant> granted(const std::string& agent, const std::string& host, std::uint16_t port) const;

  // Called once, on any thread, outside the book's lock.
  using Resume = std::function<void(AskOutcome)>;
  struct Parked {
    std::uint64_t question = 0;
    std::uint64_t ticket = 0;  // this waiter's, for leave()
  };
  // Parks a request: on the agent's question for host:port (made, and announced, when it
  // has none). A string: refused at once, and why (too many questions waiting).
  std::variant<Parked, std::string> park(const std::string& agent, const std::string& host, std::uint16_t port,
                                         std::string_view door, std::chrono::system_clock::time_point expires,
                                         Resume resume);
  // Why a waiter gives up.
  enum class Leaving {
    timed_out,    // its timer fired: the question ends with its last waiter (`ask_expired`)
    client_left,  // its client closed: the question stays, answerable, until its expiry
  };
  // The waiter gives up; its resume is not called. A question left without waiters by a
  // client that closed stays listed until it expires: the agent's retry joins it instead
  // of asking again, and a `launch` or `policy` answer still counts for it. Returns whether
  // the waiter was still parked (false: an answer already took it).
  bool leave(const Parked& p, std::string_view why, Leaving how = Leaving::timed_out);

  // An answer: empty when it was taken, otherwise why not (no such question, scope policy
  // where no policy file may be written, the file refused the entry).
  std::string answer(const AskTarget& target, const AskAnswer& answer);
  std::vector<PendingAsk> pending();

 private:
  struct Question {
    PendingAsk shown;
    std::map<std::uint64_t, Resume> waiters;
  };
  struct AgentAsk {
    AskSettings settings;
    AskListener listener;
    std::string profile;
    std::map<std::pair<std::string, std::uint16_t>, Grant> grants;
  };
  using Key = std::tuple<std::string, std::string, std::uint16_t>;  // agent, host, port

  // A question that ended unanswered, with whom to tell.
  struct Ended {
    PendingAsk question;
    AskListener listener;
    std::string why;
  };
  std::map<Key, Question>::iterator find_locked(const AskTarget& t, std::string& why);
  // The question an answer takes out of the book (and its grant kept); empty, or why not.
  std::string take_locked(const AskTarget& target, const AskAnswer& ans, Question& q, Grant& g);
  // Questions without waiters past their expiry (their clients left) end now.
  void reap_locked(std::vector<Ended>& ended);
  AskListener listener_locked(const std::string& agent) const;
  void expired(const std::vector<Ended>& ended);
  std::string write_policy_locked(const Question& q);
  void record(const std::string& kind, const PendingAsk& q, const std::string& message, const std::string& detail);

  DoorServices& rt_;
  std::function<void()> reload_policy_;
  mutable std::mutex mu_;
  std::map<std::string, AgentAsk> agents_;
  std::map<Key, Question> questions_;
  std::uint64_t next_id_ = 1;
};

}  // namespace netbox::proxy
