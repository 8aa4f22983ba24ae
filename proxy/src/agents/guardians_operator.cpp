// The operator's side of the guardian (issue 25 item 3): the roster `netbox agent list`
// reads, and `netbox agent kill|freeze|resume`, done by the same launcher's hand as a
// guardian rule's action and recorded the same way (an events row and the metric).
#include "agents/guardians.hpp"

#include "base/door_services.hpp"

#include <nlohmann/json.hpp>

namespace netbox::proxy {

AgentCard agent_card(const AgentAttachment& a) {
  AgentCard c;
  c.profile = a.profile;
  c.pid = a.launch ? a.launch->pid : 0;
  c.started_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::system_clock::now().time_since_epoch()).count();
  c.enforcer = a.enforcer;
  return c;
}

std::uint64_t Guardians::enlist(const std::string& agent, AgentCard card) {
  std::lock_guard lock(mu_);
  card.serial = ++last_serial_;
  cards_[agent] = std::move(card);
  return last_serial_;
}

void Guardians::delist(const std::string& agent, std::uint64_t serial) {
  std::lock_guard lock(mu_);
  if (auto it = cards_.find(agent); it != cards_.end() && (serial == 0 || it->second.serial == serial)) cards_.erase(it);
}

std::vector<Guardians::Listed> Guardians::roster() const {
  std::vector<Listed> out;
  std::vector<std::shared_ptr<AgentGuard>> guards;
  {
    std::lock_guard lock(mu_);
    for (const auto& [name, card] : cards_) {
      out.push_back({name, card, 0});
      out.back().card.enforcer = nullptr;  // the hand stays here
      auto g = guards_.find(name);
      guards.push_back(g == guards_.end() ? nullptr : g->second);
    }
  }
  // Read outside mu_: a guard takes its own lock, and calls into this one while holding it.
  for (std::size_t i = 0; i < out.size(); ++i)
    if (guards[i]) {
      const auto v = guards[i]->report().violations;
      if (auto d = v.find("denied"); d != v.end()) out[i].denied = d->second;
    }
  return out;
}

// The kernel said the action was done: what `list` shows from now on.
void Guardians::note_done(const std::string& agent, std::string_view action) {
  std::lock_guard lock(mu_);
  if (auto it = cards_.find(agent); it != cards_.end()) {
    if (action == "freeze") it->second.frozen = true;
    if (action == "resume" || action == "kill") it->second.frozen = false;
  }
}

void Guardians::operate(const std::string& agent, const std::string& action, unsigned uid,
                        std::function<void(OperatorOutcome)> done) {
  GuardianEnforcer enforcer;
  bool known = false;
  {
    std::lock_guard lock(mu_);
    if (auto it = cards_.find(agent); it != cards_.end()) {
      known = true;
      enforcer = it->second.enforcer;
    }
  }
  if (!known) return done({false, "no agent named " + agent + " is attached to this proxy"});
  // As a guardian rule's: refused and cut from now, not once the launcher has acted.
  if (action == "freeze" || action == "kill")
    if (auto guard = find(agent))
      guard->halt("operator", "operator uid " + std::to_string(uid) + " is " +
                                  (action == "kill" ? "killing" : "freezing") + " the agent: nothing more of it is relayed");
  if (!enforcer) {
    OperatorOutcome o{false, "no launcher is attached to act on " + agent + " (it keeps running)"};
    record_operator(agent, action, uid, o);
    return done(o);
  }
  const bool queued = queue([this, agent, action, uid, done, enforcer = std::move(enforcer)] {
    OperatorOutcome o;
    try {
      o.result = enforcer(action, "operator uid " + std::to_string(uid) + " (netbox agent " + action + ")");
      o.ok = true;
      note_done(agent, action);
      if (action == "resume")
        if (auto guard = find(agent)) guard->resume();
    } catch (const std::exception& e) {
      o.result = "could not " + action + " " + agent + ": " + e.what();
    }
    record_operator(agent, action, uid, o);
    done(o);
  });
  if (!queued) done({false, "the proxy is stopping"});
}

void Guardians::record_operator(const std::string& agent, const std::string& action, unsigned uid,
                                const OperatorOutcome& o) {
  if (!rt_) return;
  rt_->counters.count_guardian_action(action, "operator");
  if (!o.ok) rt_->counters.guardian_actions_failed.fetch_add(1);
  const auto now = audit::Clock::now();
  const nlohmann::json d{{"agent", agent}, {"action", action}, {"operator_uid", uid}, {"result", o.result},
                         {"failed", !o.ok}};
  rt_->log.write(o.ok ? LogLevel::warn : LogLevel::error, o.ok ? "operator_action" : "operator_action_failed",
                 {{"agent", agent}, {"action", action}, {"operator_uid", static_cast<std::uint64_t>(uid)},
                  {"result", o.result}});
  if (auto guard = find(agent))
    guard->record_action({"operator uid " + std::to_string(uid), "operator", action, o.result,
                          std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count()});
  audit::Event e;
  e.ts = now;
  e.kind = o.ok ? "operator_action" : "operator_action_failed";
  e.agent = agent;
  e.may_fold = false;  // each action a row of its own, however many events the agent caused
  e.message = "operator uid " + std::to_string(uid) + ": " + action + " " + agent + ": " + o.result;
  e.detail = d.dump();
  if (rt_->options.exporter) rt_->options.exporter->event(e);
  rt_->writer->event(std::move(e));
}

}  // namespace netbox::proxy
