#include "agents/agent_guard.hpp"

#include "agents/guardians.hpp"
#include "pipeline/policy_answer.hpp"

namespace netbox::proxy {
namespace {

using policy::GuardianEvent;

constexpr std::size_t kActionsKept = 32;

std::string bytes_text(std::uint64_t n) { return std::to_string(n) + " bytes"; }

// `what` is "bytes_up" or "bytes_down"; `rule` the key as the policy spells it.
BudgetCut cut_of(const std::string& rule, std::string_view what, std::uint64_t limit, const std::string& whose) {
  const bool up = what == "bytes_up";
  return {rule, whose + " budget " + rule + " of " + bytes_text(limit) + (up ? " sent" : " received") +
                    " is spent for this launch"};
}

}  // namespace

std::uint64_t ByteMeter::charge(const std::vector<Entry>& budgets, std::uint64_t n) {
  if (guard_ && guard_->halted()) {
    if (!cut_) cut_ = guard_->halt_cut();
    return 0;
  }
  std::uint64_t allowed = n;
  const BudgetCut* spent = nullptr;
  for (const auto& e : budgets) {
    const auto got = e.budget->charge(allowed);
    if (got < allowed) {
      allowed = got;
      spent = e.spent;
    }
  }
  if (spent && !cut_) {
    cut_ = *spent;
    if (guard_) guard_->note(GuardianEvent::budget_exhausted, spent->rule);
  }
  return allowed;
}

std::chrono::steady_clock::duration ByteMeter::pace_up(std::uint64_t n) {
  return paced_up_ && n > 0 ? guard_->pace(true, n, AgentGuard::Clock::now()) : AgentGuard::Clock::duration::zero();
}

std::chrono::steady_clock::duration ByteMeter::pace_down(std::uint64_t n) {
  return paced_down_ && n > 0 ? guard_->pace(false, n, AgentGuard::Clock::now()) : AgentGuard::Clock::duration::zero();
}

void AgentGuard::configure(const policy::Profile& profile) {
  std::lock_guard lock(mu_);
  if (configured_) return;
  configured_ = true;
  limits_ = profile.limits;
  rules_ = profile.guardian.rules;
  webhook_ = profile.guardian.webhook;
  webhook_ca_ = profile.guardian.webhook_ca;
  const auto now = Clock::now();
  auto budget = [&](std::optional<std::uint64_t> limit, const std::string& rule, std::string_view what,
                    const std::string& whose) -> std::optional<Budget> {
    if (!limit) return std::nullopt;
    return Budget{std::make_unique<guardian::ByteBudget>(*limit), cut_of(rule, what, *limit, whose)};
  };
  up_ = budget(limits_.bytes_up, "limits.bytes_up", "bytes_up", "the agent's");
  down_ = budget(limits_.bytes_down, "limits.bytes_down", "bytes_down", "the agent's");
  if (auto r = limits_.rate()) rate_.emplace(r->per_minute, std::chrono::minutes(1), r->burst, now);
  // One minute's worth of new hosts, one second's worth of bytes: the buckets' sizes.
  if (auto n = limits_.new_hosts_per_minute) new_hosts_.emplace(*n, std::chrono::minutes(1), *n, now);
  if (auto b = limits_.bandwidth_up) bandwidth_up_.emplace(*b, std::chrono::seconds(1), *b, now);
  if (auto b = limits_.bandwidth_down) bandwidth_down_.emplace(*b, std::chrono::seconds(1), *b, now);
  for (const auto& d : limits_.destinations) {
    DestinationState s;
    const std::string whose = "the destination's (" + d.host.written + ")";
    s.up = budget(d.bytes_up, d.cite() + " bytes_up", "bytes_up", whose);
    s.down = budget(d.bytes_down, d.cite() + " bytes_down", "bytes_down", whose);
    if (d.requests) s.rate.emplace(d.requests->per_minute, std::chrono::minutes(1), d.requests->burst, now);
    destinations_.push_back(std::move(s));
  }
  for (std::size_t r = 0; r < rules_.size(); ++r)
    for (std::size_t t = 0; t < rules_[r].on.size(); ++t)
      windows_.push_back({r, t, guardian::EventWindow(rules_[r].on[t].threshold, rules_[r].on[t].window)});
}

std::optional<Refusal> AgentGuard::spent(const std::optional<Budget>& b) {
  if (!b || !b->budget->exhausted()) return std::nullopt;
  return Refusal{403, Outcome::budget, {}, b->spent.rule, b->spent.reason, {}};
}

void AgentGuard::halt(std::string rule, std::string reason) {
  std::lock_guard lock(mu_);
  halt_ = {std::move(rule), std::move(reason)};
  halted_.store(true, std::memory_order_release);
}

void AgentGuard::resume() { halted_.store(false, std::memory_order_release); }

BudgetCut AgentGuard::halt_cut() const {
  std::lock_guard lock(mu_);
  return halt_;
}

std::optional<Refusal> AgentGuard::admit(const std::string& host, std::uint16_t port, Clock::time_point now) {
  if (halted()) {
    auto cut = halt_cut();
    return refusal_of(policy::Decision::refused(std::move(cut.rule), std::move(cut.reason)), 403);
  }
  std::optional<Refusal> no;
  {
    std::lock_guard lock(mu_);
    const auto covering = policy::destination_limits_for(limits_, host, port);
    // A spent budget first: it is final for the launch, and takes no token of a rate.
    no = spent(up_);
    if (!no) no = spent(down_);
    for (const auto* d : covering) {
      auto& s = destinations_[static_cast<std::size_t>(d - limits_.destinations.data())];
      if (!no) no = spent(s.up);
      if (!no) no = spent(s.down);
    }
    auto rate = [&](guardian::TokenBucket& bucket, const std::string& rule, const policy::RequestRate& r) {
      const auto wait = bucket.take(now);
      if (wait == Clock::duration::zero()) return;
      const auto after = guardian::TokenBucket::retry_after_seconds(wait);
      no = Refusal{429, Outcome::cap, {}, rule,
                   rule + " allows " + std::to_string(r.per_minute) + " requests a minute (burst " +
                       std::to_string(r.burst) + "); the next is allowed in " + std::to_string(after) + " s",
                   static_cast<unsigned>(after)};
    };
    if (!no && new_hosts_ && !hosts_.contains(host)) {
      // A host not asked for before in this launch takes a token of its own bucket first.
      if (const auto wait = new_hosts_->take(now); wait != Clock::duration::zero()) {
        const auto after = guardian::TokenBucket::retry_after_seconds(wait);
        no = Refusal{429, Outcome::cap, {}, "limits.new_hosts_per_minute",
                     "limits.new_hosts_per_minute allows " + std::to_string(*limits_.new_hosts_per_minute) +
                         " hosts not asked for before a minute; " + host + " is a new one, allowed in " +
                         std::to_string(after) + " s",
                     static_cast<unsigned>(after)};
      } else {
        hosts_.insert(host);
      }
    }
    if (!no && rate_) rate(*rate_, "limits.requests_per_minute", *limits_.rate());
    for (const auto* d : covering) {
      auto& s = destinations_[static_cast<std::size_t>(d - limits_.destinations.data())];
      if (!no && s.rate) rate(*s.rate, d->cite() + " requests_per_minute", *d->requests);
    }
  }
  if (no) note(no->outcome == Outcome::budget ? GuardianEvent::budget_exhausted : GuardianEvent::rate_limited, no->rule);
  return no;
}

ByteMeter AgentGuard::meter(const std::string& host, std::uint16_t port) {
  std::vector<ByteMeter::Entry> up, down;
  bool paced_up = false, paced_down = false;
  {
    std::lock_guard lock(mu_);
    paced_up = bandwidth_up_.has_value();
    paced_down = bandwidth_down_.has_value();
    auto add = [](std::vector<ByteMeter::Entry>& to, std::optional<Budget>& b) {
      if (b) to.push_back({b->budget.get(), &b->spent});
    };
    add(up, up_);
    add(down, down_);
    for (const auto* d : policy::destination_limits_for(limits_, host, port)) {
      auto& s = destinations_[static_cast<std::size_t>(d - limits_.destinations.data())];
      add(up, s.up);
      add(down, s.down);
    }
  }
  // Always with the guard, budgets or not: a halt cuts every relay of the agent.
  return ByteMeter(shared_from_this(), std::move(up), std::move(down), paced_up, paced_down);
}

AgentGuard::Clock::duration AgentGuard::pace(bool up, std::uint64_t n, Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto& bucket = up ? bandwidth_up_ : bandwidth_down_;
  return bucket ? bucket->reserve(now, n) : Clock::duration::zero();
}

void AgentGuard::note(GuardianEvent event, const std::string& detail) {
  std::vector<std::pair<policy::GuardianRule, std::string>> fired;
  {
    std::lock_guard lock(mu_);
    ++violations_[std::string(policy::to_string(event))];
    const auto now = Clock::now();
    std::size_t last_rule = rules_.size();  // a rule acts once per event, whichever trigger fired
    for (auto& w : windows_) {
      if (rules_[w.rule].on[w.trigger].event != event) continue;
      if (!w.window.add(now) || w.rule == last_rule) continue;
      last_rule = w.rule;
      fired.emplace_back(rules_[w.rule], rules_[w.rule].on[w.trigger].written);
    }
  }
  for (const auto& [rule, trigger] : fired) owner_.act(*this, rule, trigger, detail);
}

void AgentGuard::record_action(GuardReport::Action a) {
  std::lock_guard lock(mu_);
  actions_.push_back(std::move(a));
  if (actions_.size() > kActionsKept) actions_.pop_front();
}

GuardReport AgentGuard::report() const {
  std::lock_guard lock(mu_);
  GuardReport r;
  auto add = [&r](const std::optional<Budget>& b) {
    if (b) r.budgets.push_back({b->spent.rule, b->budget->used(), b->budget->limit()});
  };
  add(up_);
  add(down_);
  for (const auto& d : destinations_) {
    add(d.up);
    add(d.down);
  }
  r.violations = violations_;
  r.actions.assign(actions_.begin(), actions_.end());
  return r;
}

}  // namespace netbox::proxy
