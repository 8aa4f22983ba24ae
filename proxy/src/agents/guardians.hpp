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
#include <string>
#include <thread>

namespace netbox::proxy {

struct ProxyRuntime;

class Guardians {
 public:
  // `rt` null: admission's unit tests, where rules are counted but nothing is recorded.
  explicit Guardians(ProxyRuntime* rt);
  ~Guardians();
  Guardians(const Guardians&) = delete;
  Guardians& operator=(const Guardians&) = delete;

  // The agent's guard, made on its first connection of the launch.
  std::shared_ptr<AgentGuard> of(const std::string& agent);
  // Null when the agent has made no connection in this launch.
  std::shared_ptr<AgentGuard> find(const std::string& agent) const;
  // The agent has left: its next launch starts afresh; its enforcer goes too.
  void forget(const std::string& agent);
  void set_enforcer(const std::string& agent, GuardianEnforcer enforcer);

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
  void notify(const std::string& url, const std::string& ca, std::string body);  // ca: guardian.webhook_ca, or ""
  void sighted(const std::string& agent, policy::GuardianEvent event, const std::string& particulars,
               const std::string& message, const std::string& detail, LogFields fields);
  void record(AgentGuard& guard, const policy::GuardianRule& rule, const std::string& trigger,
              const std::string& detail, const std::string& result, bool failed);

  ProxyRuntime* rt_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<AgentGuard>, std::less<>> guards_;
  std::map<std::string, GuardianEnforcer, std::less<>> enforcers_;
  std::map<std::string, std::unique_ptr<Webhook>, std::less<>> webhooks_;  // by URL as written, and CA file
  std::deque<std::function<void()>> work_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace netbox::proxy
