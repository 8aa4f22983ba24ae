#pragma once
// One agent's guardian state for one launch (issue 25): its byte budgets, request rates and
// the event windows of its guardian rules, made from the profile its first connection was
// decided under. Every door admits through it (Admission: a spent budget answers 403
// `budget`, a rate 429 with Retry-After) and every relay charges its bytes to it through
// the exchange's ByteMeter, so a budget holds on every path. Events (a denial, a spent
// budget, ...) go through note(), which fires the rules and hands their actions to
// Guardians. Shared by the agent's connections on any io thread: the buckets and windows
// are under one small mutex, the budgets are lock-free (guardian::ByteBudget).
#include "netbox/guardian/byte_budget.hpp"
#include "netbox/guardian/event_window.hpp"
#include "netbox/guardian/token_bucket.hpp"
#include "netbox/policy/policy.hpp"

#include "pipeline/denial.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace netbox::proxy {

class Guardians;
class AgentGuard;

// Why a relay stopped: the budget spent, as the row keeps it.
struct BudgetCut {
  std::string rule;    // "limits.bytes_up", "limits.destinations[0] *.github.com bytes_up"
  std::string reason;  // names the limit and its value
};

// What one exchange charges as its relays pass bytes on: the agent's budgets and those of
// the destinations its host falls under. A default one charges nothing.
class ByteMeter {
 public:
  struct Entry {
    guardian::ByteBudget* budget;
    const BudgetCut* spent;  // what the row says once this one stops a relay
  };
  ByteMeter() = default;
  ByteMeter(std::shared_ptr<AgentGuard> guard, std::vector<Entry> up, std::vector<Entry> down, bool paced_up,
            bool paced_down)
      : guard_(std::move(guard)), up_(std::move(up)), down_(std::move(down)), paced_up_(paced_up),
        paced_down_(paced_down) {}

  // `n` bytes are about to go up (agent -> upstream) or down: answers how many of them the
  // budgets allow. Fewer than `n`: the relay sends those and stops; cut() says why.
  std::uint64_t up(std::uint64_t n) { return charge(up_, n); }
  std::uint64_t down(std::uint64_t n) { return charge(down_, n); }
  const std::optional<BudgetCut>& cut() const { return cut_; }

  // limits.bandwidth_up / bandwidth_down: whether a direction is shaped, and, for `n`
  // bytes just relayed that way, how long its relay pauses before reading again (zero:
  // none). The relay waits on a timer: the pause never blocks a thread.
  bool paced() const { return paced_up_ || paced_down_; }
  std::chrono::steady_clock::duration pace_up(std::uint64_t n);
  std::chrono::steady_clock::duration pace_down(std::uint64_t n);

 private:
  std::uint64_t charge(const std::vector<Entry>& budgets, std::uint64_t n);

  std::shared_ptr<AgentGuard> guard_;
  std::vector<Entry> up_, down_;
  std::optional<BudgetCut> cut_;
  bool paced_up_ = false, paced_down_ = false;
};

// /api/agents/{name}: what the guardian knows of one agent.
struct GuardReport {
  struct Budget {
    std::string rule;
    std::uint64_t used = 0, limit = 0;
  };
  struct Action {
    std::string rule, trigger, action, result;
    std::int64_t ts_ms = 0;  // Unix epoch
  };
  std::vector<Budget> budgets;
  std::map<std::string, std::uint64_t> violations;  // event -> count
  std::vector<Action> actions;                      // the last 32
};

class AgentGuard : public std::enable_shared_from_this<AgentGuard> {
 public:
  using Clock = std::chrono::steady_clock;
  AgentGuard(Guardians& owner, std::string agent) : owner_(owner), agent_(std::move(agent)) {}

  // The limits and rules of `profile`: the first call sets them for the launch, later ones
  // (a reload, another connection) change nothing.
  void configure(const policy::Profile& profile);

  // Before an admitted exchange to host:port: a spent budget (403, outcome budget) or a
  // rate with no token left (429 with Retry-After, outcome cap); nullopt: go on.
  std::optional<Refusal> admit(const std::string& host, std::uint16_t port, Clock::time_point now);
  ByteMeter meter(const std::string& host, std::uint16_t port);

  // The shaping of limits.bandwidth_up (up) or bandwidth_down: the pause after `n` bytes.
  Clock::duration pace(bool up, std::uint64_t n, Clock::time_point now);

  // A freeze or kill is on its way to the agent (a guardian rule's, an operator's): from
  // now its requests are refused and its open relays cut at their next piece (ByteMeter),
  // so that the launcher's round trip and a kill's grace let nothing more through.
  // resume() (an operator's) lifts it.
  void halt(std::string rule, std::string reason);
  void resume();
  bool halted() const { return halted_.load(std::memory_order_acquire); }
  BudgetCut halt_cut() const;

  // One event of this agent: counted, and every rule it fires acts (Guardians::act).
  void note(policy::GuardianEvent event, const std::string& detail);
  void record_action(GuardReport::Action a);

  const std::string& agent() const { return agent_; }
  std::optional<std::string> webhook() const {
    std::lock_guard lock(mu_);
    return webhook_;
  }
  std::optional<std::string> webhook_ca() const {  // guardian.webhook_ca: an https:// webhook's CAs
    std::lock_guard lock(mu_);
    return webhook_ca_;
  }
  GuardReport report() const;

 private:
  struct Budget {
    std::unique_ptr<guardian::ByteBudget> budget;
    BudgetCut spent;
  };
  struct DestinationState {
    std::optional<Budget> up, down;
    std::optional<guardian::TokenBucket> rate;
  };
  struct Window {
    std::size_t rule;
    std::size_t trigger;
    guardian::EventWindow window;
  };
  static std::optional<Refusal> spent(const std::optional<Budget>& b);

  Guardians& owner_;
  const std::string agent_;
  std::atomic<bool> halted_{false};
  mutable std::mutex mu_;
  BudgetCut halt_;  // why, while halted_
  bool configured_ = false;
  policy::Limits limits_;
  std::vector<policy::GuardianRule> rules_;
  std::optional<std::string> webhook_;
  std::optional<std::string> webhook_ca_;
  std::optional<Budget> up_, down_;
  std::optional<guardian::TokenBucket> rate_;
  std::optional<guardian::TokenBucket> new_hosts_;           // limits.new_hosts_per_minute
  std::set<std::string, std::less<>> hosts_;                 // asked for and let through this launch
  std::optional<guardian::TokenBucket> bandwidth_up_, bandwidth_down_;
  std::vector<DestinationState> destinations_;  // by index in limits_.destinations
  std::vector<Window> windows_;
  std::map<std::string, std::uint64_t> violations_;
  std::deque<GuardReport::Action> actions_;
};

}  // namespace netbox::proxy
