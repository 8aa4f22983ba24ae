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
  // The launch asks its questions on its own terminal (a launcher registered with a shared
  // proxy: "ask": {"terminal": true}); the proxy then pushes each to its registration
  // connection (docs/proxy.md, "Control socket").
  bool terminal = false;
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

// AgentAttachment::ask_listener: told of each new question of one agent (not of requests
// that join one) and of how each ended, so that a prompt showing it can say it was
// answered elsewhere. Called on any thread (an io thread, the control socket's, an
// answerer's), never under the book's lock: it must not block (the launcher's prompt
// queues for its own thread; the control socket posts a line to its connection).
struct AskListener {
  std::function<void(const PendingAsk&)> asked;
  // Question `id` is over: `answered` by someone (`how`: "allowed (once) by uid 1000 (control
  // socket)", "denied by ..."), or not (no answer in time).
  std::function<void(std::uint64_t id, bool answered, const std::string& how)> settled;
  explicit operator bool() const { return asked != nullptr; }
};

}  // namespace netbox::proxy
