#include "agents/guardians.hpp"

#include "base/door_services.hpp"

#include <nlohmann/json.hpp>

namespace netbox::proxy {

Guardians::Guardians(DoorServices* rt) : rt_(rt), thread_([this] { run(); }) {}

Guardians::~Guardians() { stop(); }

void Guardians::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::map<std::string, std::unique_ptr<Webhook>, std::less<>> hooks;
  {
    std::lock_guard lock(mu_);
    hooks.swap(webhooks_);
  }
  hooks.clear();  // joins their threads, outside the lock
}

std::shared_ptr<AgentGuard> Guardians::of(const std::string& agent) {
  std::lock_guard lock(mu_);
  auto& g = guards_[agent];
  if (!g) g = std::make_shared<AgentGuard>(*this, agent);
  return g;
}

std::shared_ptr<AgentGuard> Guardians::find(const std::string& agent) const {
  std::lock_guard lock(mu_);
  auto it = guards_.find(agent);
  return it == guards_.end() ? nullptr : it->second;
}

bool Guardians::claim(const std::string& agent) {
  std::lock_guard lock(mu_);
  return attached_.insert(agent).second;
}

void Guardians::forget(const std::string& agent) {
  std::lock_guard lock(mu_);
  attached_.erase(agent);
  guards_.erase(agent);
  cards_.erase(agent);
}

void Guardians::act(AgentGuard& guard, const policy::GuardianRule& rule, const std::string& trigger,
                    const std::string& detail) {
  if (rule.action == policy::GuardianAction::report) return record(guard, rule, trigger, detail, "reported", false);
  GuardianEnforcer enforcer;
  const std::string action(policy::to_string(rule.action));
  // At once, before the launcher is asked: nothing more goes through meanwhile (nor,
  // where no launcher can act, at all until an operator resumes the agent).
  guard.halt(rule.cite(), "the guardian is " + std::string(action == "kill" ? "killing" : "freezing") +
                              " the agent (" + rule.cite() + ", on " + trigger + "): nothing more of it is relayed");
  {
    std::lock_guard lock(mu_);
    if (auto it = cards_.find(guard.agent()); it != cards_.end() && it->second.enforcer) {
      // What the agent already sent keeps tripping the rule while it is being frozen or
      // killed (thousands of pipelined requests): each would be one more round trip to its
      // launcher, queued ahead of every other agent's actions and the operators'.
      AgentCard& card = it->second;
      if (card.under_way.contains(action) || card.under_way.contains("kill") || (action == "freeze" && card.frozen))
        return;
      card.under_way.insert(action);
      enforcer = card.enforcer;
    }
  }
  if (!enforcer)
    return record(guard, rule, trigger, detail,
                  "could not " + std::string(policy::to_string(rule.action)) +
                      " the agent: no launcher is attached to act on it (it keeps running; the proxy refuses its "
                      "requests until an operator resumes it)",
                  true);
  // Off the io thread: a kill waits out its grace. The guard stays alive for the record.
  auto keep = guard.shared_from_this();
  queue([this, keep, rule, trigger, detail, enforcer = std::move(enforcer)] {
    std::string result;
    bool failed = false;
    try {
      result = enforcer(policy::to_string(rule.action), rule.cite() + " (on " + trigger + ")");
      note_done(keep->agent(), policy::to_string(rule.action));
    } catch (const std::exception& e) {
      result = "could not " + std::string(policy::to_string(rule.action)) + " the agent: " + e.what();
      failed = true;
    }
    settle(keep->agent(), policy::to_string(rule.action), failed);
    record(*keep, rule, trigger, detail, result, failed);
  });
}

void Guardians::settle(const std::string& agent, std::string_view action, bool failed) {
  std::lock_guard lock(mu_);
  auto it = cards_.find(agent);
  if (it == cards_.end()) return;
  // A kill done stays: the agent is going, nothing more is asked of its launcher.
  if (failed || action != "kill") it->second.under_way.erase(std::string(action));
}

bool Guardians::queue(std::function<void()> job) {
  std::lock_guard lock(mu_);
  if (stopping_) return false;
  work_.push_back(std::move(job));
  wake_.notify_one();
  return true;
}

void Guardians::notify(const std::string& url, const std::string& ca, std::string body, bool urgent) {
  if (!rt_) return;
  Webhook* hook = nullptr;
  {
    std::lock_guard lock(mu_);
    const std::string key = url + '\0' + ca;  // one sender per URL and trust
    auto it = webhooks_.find(key);
    if (it == webhooks_.end()) {
      auto parsed = parse_webhook_url(url);
      std::unique_ptr<Webhook> made;
      if (parsed) made = std::make_unique<Webhook>(std::move(*parsed), url, ca, rt_->counters, rt_->log);
      else
        rt_->log.write(LogLevel::error, log_event::webhook_failed,
                       {{log_key::url, url},
                        {log_key::reason, "only http:// and https:// webhooks are sent; this one never will be"}});
      it = webhooks_.emplace(key, std::move(made)).first;
    }
    hook = it->second.get();
  }
  if (hook) hook->post(std::move(body), urgent);
  else rt_->counters.webhook_dropped.fetch_add(1);
}

void Guardians::sighted(const std::string& agent, policy::GuardianEvent event, const std::string& particulars,
                        const std::string& message, const std::string& detail, LogFields fields) {
  if (rt_) rt_->agent_event(std::string(policy::to_string(event)), agent, particulars, message, detail, fields);
  if (auto guard = find(agent)) guard->note(event, particulars);
}

void Guardians::run() {
  std::unique_lock lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !work_.empty(); });
    if (work_.empty()) return;  // stopping, nothing left
    auto job = std::move(work_.front());
    work_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

void Guardians::record(AgentGuard& guard, const policy::GuardianRule& rule, const std::string& trigger,
                       const std::string& detail, const std::string& result, bool failed) {
  if (!rt_) return;
  const auto action = std::string(policy::to_string(rule.action));
  const auto event = trigger.substr(0, trigger.find(' '));  // the event's name: a bounded label
  rt_->counters.count_guardian_action(action, event);
  if (failed) rt_->counters.guardian_actions_failed.fetch_add(1);
  const auto now = audit::Clock::now();
  guard.record_action({rule.cite(), trigger, action, result,
                       std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count()});
  const nlohmann::json d{{"agent", guard.agent()}, {"rule", rule.list + "[" + std::to_string(rule.index) + "]"},
                         {"trigger", trigger}, {"action", action}, {"detail", detail}, {"result", result},
                         {"failed", failed}};
  const std::string message = rule.cite() + ": " + result;
  rt_->log.write(failed ? LogLevel::error : LogLevel::warn,
                 failed ? log_event::guardian_action_failed : log_event::guardian_action,
                 {{log_key::agent, guard.agent()},
                  {log_key::rule, rule.cite()},
                  {log_key::trigger, trigger},
                  {log_key::action, action},
                  {log_key::detail, detail},
                  {log_key::result, result}});
  audit::Event e;
  e.ts = now;
  e.kind = failed ? "guardian_action_failed" : "guardian_action";
  e.agent = guard.agent();
  e.may_fold = false;  // each action a row of its own, however many events the agent caused
  e.message = message;
  e.detail = d.dump();
  if (rt_->options.exporter) rt_->options.exporter->event(e);
  // A freeze or kill (or its failure) goes before the reports a flood may have queued.
  if (auto url = guard.webhook())
    notify(*url, guard.webhook_ca().value_or(""), d.dump(), rule.action != policy::GuardianAction::report);
  rt_->writer->event(std::move(e));
}

}  // namespace netbox::proxy
