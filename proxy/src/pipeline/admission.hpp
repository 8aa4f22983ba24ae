#pragma once
// Where a request is admitted: the policy's verdict on its destination, then its place
// under the connection caps. In order:
//   1. the name (policy::decide_name): a deny is final, before any lookup;
//   2. its addresses: an IP literal's own, the policy's static pins, or DNS. A lookup is
//      the only step that waits, and the caller runs it: begin() says when one is needed,
//      resolved() takes its answer;
//   3. the destination (policy::decide_destination): every address against the policy
//      and against netbox's own endpoints, which no policy can allow;
//   4. the agent's budgets and rates (AgentGuard::admit): a spent budget, a rate out of
//      tokens;
//   5. the caps (Caps::acquire) on the first address let through.
// The result is a value: Admitted (where to dial, under which decision, holding the cap
// slot) or Refused (the answer to give and why). Opening the audit row is the Exchange's.
#include "netbox/policy/decide.hpp"
#include "netbox/policy/host.hpp"
#include "netbox/policy/policy.hpp"

#include "agents/agent_guard.hpp"
#include "agents/agent_registry.hpp"
#include "pipeline/approvals.hpp"
#include "pipeline/caps.hpp"
#include "base/counters.hpp"
#include "pipeline/denial.hpp"
#include "agents/guardians.hpp"
#include "pipeline/outcome.hpp"
#include "base/own_endpoints.hpp"
#include "upstream/resolver.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace netbox::proxy {

struct Admitted {
  policy::Decision decision;         // allow or report: the rule and reason the row keeps
  std::vector<boost::asio::ip::tcp::endpoint> endpoints;  // where to dial, in resolution order
  CapToken cap;                      // this exchange's place under the caps
  ByteMeter meter;                   // the budgets its relays charge (AgentGuard::meter)
  Outcome outcome() const { return outcome_of(decision.verdict); }
};

struct Refused {
  Refusal refusal;            // the answer: status, outcome (deny, cap, error), rule, reason; `what` is the caller's
  // The row's rule and reason: the refusal's, except after a failed lookup, where the row
  // keeps the name's decision and the failure is its error.
  std::string rule;
  std::string reason;
  std::string resolved_addr;  // the address the refusal is about, if any
  std::string error;
  // A person may be asked instead (netbox launch --ask, approvals.hpp): the agent asks, and
  // the policy only does not list the host or port. Never for a deny entry, an internal
  // address, netbox's own endpoints, a cap, a budget, a content rule or a tripwire.
  bool askable = false;
};

using AdmissionResult = std::variant<Admitted, Refused>;

class Admission {
 public:
  Admission(const OwnEndpoints& own, Caps& caps, Counters& counters, Guardians& guardians)
      : own_(own), caps_(caps), counters_(counters), guardians_(guardians) {}

  // What stays fixed for one agent connection: the policy it started under, its profile
  // (a reload applies to new connections), the agent's name (the per-agent cap) and its
  // credentials' tripwire (a placeholder in the host name is refused first).
  void bind(const policy::Policy& policy, const policy::Profile& profile, const AgentIdentity& who);

  // Decides host:port as far as it can without a lookup. nullopt: the caller resolves
  // host.name and hands the answer to resolved().
  // `grant`: a person let this agent reach host:port (approvals.hpp): decided as if the
  // policy's allow list named it first, every other step as it is; the row's rule names it.
  std::optional<AdmissionResult> begin(const policy::Host& host, std::uint16_t port, const Grant* grant = nullptr);
  AdmissionResult resolved(const ResolveResult& r);
  // The book this agent's askable refusals are parked in; null: it does not ask.
  ApprovalBook* asks() const { return asks_; }
  const std::string& agent() const { return agent_; }
  // Which door the connection came in by (http, socks, capture), for the question asked.
  void door(std::string_view d) { door_ = d; }
  std::string_view door() const { return door_; }
  // The agent's socket (its descriptor, owned by the door): a request parked on a question
  // watches it, so that a client that leaves while asked is let go at once (ask_step.hpp).
  void client(int fd) { client_ = fd; }
  int client() const { return client_; }

 private:
  AdmissionResult decide(std::span<const boost::asio::ip::address> addresses);
  static Refused refused(Refusal r, std::string resolved_addr = {});
  bool never_asked(const policy::Host& host, std::uint16_t port) const;

  const OwnEndpoints& own_;
  Caps& caps_;
  Counters& counters_;
  Guardians& guardians_;
  std::shared_ptr<AgentGuard> guard_;  // the agent's, for this launch
  const policy::Policy* policy_ = nullptr;
  const policy::Profile* profile_ = nullptr;
  std::string agent_;
  std::shared_ptr<const Tripwire> tripwire_;
  ApprovalBook* asks_ = nullptr;
  std::string_view door_ = "http";
  int client_ = -1;
  const policy::Profile* bound_profile_ = nullptr;  // the connection's; profile_ is it or granted_
  // The request under decision.
  std::optional<policy::Profile> granted_;  // bound_profile_ with the grant first in allow
  std::optional<Grant> grant_;
  policy::Host host_;
  std::uint16_t port_ = 0;
  policy::Decision name_;
};

}  // namespace netbox::proxy
