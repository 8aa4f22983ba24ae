#pragma once
// Approve on the spot (issue 27 item 3, `netbox launch --ask`): a destination the policy
// does not allow, asked of a person instead of refused at once. The values here are what
// the launcher, the control socket and the admin API see; the book that parks the
// requests is the proxy's (proxy/src/pipeline/approvals.*). See docs/launch.md, "Asking".
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace netbox::proxy {

// How far a grant reaches: the requests waiting on this question only (once), every later
// request of this launch to the same host and port (launch), or that and the host written
// into the policy file (policy).
enum class AskScope { once, launch, policy };
std::string_view to_string(AskScope s);
// "once", "launch", "policy", or their first letters; nullopt for anything else.
std::optional<AskScope> parse_ask_scope(std::string_view text);

// An agent attached with `ask` (AgentAttachment::ask): how long a question waits for an
// answer before the request is refused as if nobody had been asked.
struct AskSettings {
  std::chrono::milliseconds timeout{60000};
  static constexpr std::chrono::milliseconds kDefaultTimeout{60000};
};

// One question waiting for an answer. Requests of one agent to one host and port share it.
struct PendingAsk {
  std::uint64_t id = 0;
  std::string agent;
  std::string host;
  std::uint16_t port = 0;
  std::string door;  // http, socks or capture: how the first request came
  std::chrono::system_clock::time_point first_seen{};
  std::chrono::system_clock::time_point expires{};  // refused then, unanswered
  std::size_t waiters = 0;    // requests parked on it now
  bool policy_offered = false;  // scope `policy` may be chosen (the proxy has a policy file to write)
};

// An answer, from whoever may give one (the launch's terminal, the control socket's owner,
// the admin API's token holder); never from the agent.
struct AskAnswer {
  bool approve = false;
  AskScope scope = AskScope::once;
  std::string grantor;  // who answered, recorded with the grant: "terminal", "uid 1000 (control socket)"
};

// Which question an answer is for: by id, or by agent and host (and port; 0: any port of
// that host the agent is waiting on, when exactly one is).
struct AskTarget {
  std::uint64_t id = 0;
  std::string agent;
  std::string host;
  std::uint16_t port = 0;
};

// ProxyOptions::on_ask: told of each new question (not of requests that join one). Called
// on an io thread: it must not block (the launcher's prompt queues it for its own thread).
using AskNotifier = std::function<void(const PendingAsk&)>;

}  // namespace netbox::proxy
