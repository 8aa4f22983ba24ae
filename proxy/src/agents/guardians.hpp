#pragma once
// Every agent's AgentGuard, by name, for the launch it belongs to (forgotten when the agent
// detaches, so the next launch of that name starts with full budgets), and what the
// guardian does when a rule fires (issue 25): an `events` row and a metric for every
// trigger and action, the action itself by the agent's enforcer (the launcher's hand on
// its cgroup: freeze, or kill), and a JSON POST to the policy's webhook (Webhook).
// Freezing and killing take time (a kill waits out a grace), so they run on the
// guardian's own thread, never on an io thread; an action that cannot be taken (no
// launcher to act, or the launcher failed) is said loudly: an error log line and a row.
#include "netbox/proxy/agent_attachment.hpp"
#include "netbox/proxy/log_field.hpp"

#include "agents/agent_guard.hpp"
#include "http/content_rules.hpp"
#include "base/webhook.hpp"

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace netbox::proxy {

struct DoorServices;

// An attached agent as `netbox agent list` shows it, and the launcher's hand on it.
struct AgentCard {
  std::string profile;
  std::int64_t pid = 0;
  std::int64_t started_ms = 0;  // Unix epoch
  GuardianEnforcer enforcer;    // unset: no launcher can act on it
  bool frozen = false;          // by the last freeze or resume that was done
  // A guardian's action queued for it and not done yet (or a kill done): while one is,
  // the rules that trip again add nothing to the one queue every agent's actions share.
  std::set<std::string, std::less<>> under_way;
  std::uint64_t serial = 0;     // set by enlist: which enlisting a delist undoes
};

// The card of an agent as its launcher attached it: now, its launch's pid and its hand.
AgentCard agent_card(const AgentAttachment& a);

// An operator's action (`netbox agent kill|freeze|resume`), done or not.
struct OperatorOutcome {
  bool ok = false;
  std::string result;  // what was done, or why not
};

class Guardians {
 public:
  // `rt` null: admission's unit tests, where rules are counted but nothing is recorded.
  explicit Guardians(DoorServices* rt);
  ~Guardians();
  Guardians(const Guardians&) = delete;
  Guardians& operator=(const Guardians&) = delete;

  // The agent's guard, made on its first connection of the launch.
  std::shared_ptr<AgentGuard> of(const std::string& agent);
  // Null when the agent has made no connection in this launch.
  std::shared_ptr<AgentGuard> find(const std::string& agent) const;
  // The name for an agent being attached (by address or by its sockets); false when an
  // agent of that name is attached already. One name is one agent: guards, approvals,
  // grants and operator actions are all kept by name, so a second agent under a name in
  // use would share the first's budgets, answer its questions and use its grants.
  bool claim(const std::string& agent);
  // The agent of this name has left (or its attach failed): its guard (spent budgets,
  // rate buckets, event windows) and its card go, so the next launch of the name is a new
  // agent with its full budgets ("per agent per launch") and nothing is kept per launch.
  // A guard still held by a connection of the old launch dies with it.
  void forget(const std::string& agent);
  // An attached agent, for `netbox agent list` and the actions on it (guardians_operator.cpp).
  // Agents are known by name: a second agent of a name replaces the first's card. Returns
  // the card's serial; delist with it removes that card only (0: whatever card it has).
  std::uint64_t enlist(const std::string& agent, AgentCard card);
  void delist(const std::string& agent, std::uint64_t serial = 0);
  // Every enlisted agent by name, and the denials its guard counted (0: none yet).
  struct Listed {
    std::string name;
    AgentCard card;
    std::uint64_t denied = 0;
  };
  std::vector<Listed> roster() const;
  // An operator's kill, freeze or resume of `agent`, on the guardian's thread (a kill waits
  // out its grace): an events row (operator_action, naming the operator's uid) and a
  // metric either way; `done` is called once with the outcome, on any thread.
  void operate(const std::string& agent, const std::string& action, unsigned uid,
               std::function<void(OperatorOutcome)> done);

  // A rule of `guard`'s fired on `trigger` (as written); `detail`: what set it off.
  void act(AgentGuard& guard, const policy::GuardianRule& rule, const std::string& trigger, const std::string& detail);
  // What the content rules saw (content_rules.hpp): an event row of the agent (kind,
  // where, digest: never the value), a log line, a count and the guardian's trigger.
  // The refusal for the agent in enforce mode; nullopt in report mode.
  std::optional<Refusal> secret_seen(const std::string& agent, const std::string& host, policy::ContentMode mode,
                                     const SecretSighting& seen);
  // The host's admission under `profile`: refused (enforce) when a label below a wildcard
  // allow looks encoded, recorded either way.
  std::optional<Refusal> check_labels(const std::string& agent, const policy::Profile& profile,
                                      const std::string& host, std::uint16_t port);
  // Waits for the actions under way and stops the guardian's thread.
  void stop();

 private:
  void run();
  // ca: guardian.webhook_ca, or ""; urgent: a freeze or kill (Webhook::post)
  void notify(const std::string& url, const std::string& ca, std::string body, bool urgent = false);
  void sighted(const std::string& agent, policy::GuardianEvent event, const std::string& particulars,
               const std::string& message, const std::string& detail, LogFields fields);
  bool queue(std::function<void()> job);  // false: stopping, not queued
  void note_done(const std::string& agent, std::string_view action);
  // A guardian's job for `agent` ended: its action is no longer under way (AgentCard).
  void settle(const std::string& agent, std::string_view action, bool failed);
  void record_operator(const std::string& agent, const std::string& action, unsigned uid, const OperatorOutcome& o);
  void record(AgentGuard& guard, const policy::GuardianRule& rule, const std::string& trigger,
              const std::string& detail, const std::string& result, bool failed);

  DoorServices* rt_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<AgentGuard>, std::less<>> guards_;
  std::map<std::string, AgentCard, std::less<>> cards_;
  std::set<std::string, std::less<>> attached_;  // the names of the agents attached now
  std::uint64_t last_serial_ = 0;
  std::map<std::string, std::unique_ptr<Webhook>, std::less<>> webhooks_;  // by URL as written, and CA file
  std::deque<std::function<void()>> work_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace netbox::proxy
