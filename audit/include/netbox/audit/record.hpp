#pragma once
// Value types for what the audit store keeps.
#include <chrono>
#include <cstdint>
#include <future>
#include <optional>
#include <string>
#include <utility>

namespace netbox::audit {

using Clock = std::chrono::system_clock;

// The agent's process that opened a connection (issue 27), as the proxy found it from the
// connection's socket (proxy/src/agents/attribution.*). Columns client_pid, client_exe, client_argv.
struct ProcessOrigin {
  std::optional<std::int64_t> pid;  // inside the agent's PID namespace (NSpid); none: unknown
  std::string exe;                  // the executable's path as the agent sees it; "unknown": not found
  std::string argv;                 // the command line's first words, printable: the process's claim
};

// One row of `requests`: inserted at decision time, completed at close.
struct AuditRecord {
  std::int64_t id = 0;            // assigned by the store; 0 before insertion
  Clock::time_point ts{};         // decision time (stored as UTC ISO-8601 with ms)
  std::string agent = "anonymous";
  std::string client_addr;        // "10.213.0.2:41234"
  std::string kind;               // "http", "connect" or "socks"
  std::string method;
  std::string host;
  std::uint16_t port = 0;
  std::string path;               // plain HTTP only, without the query string
  std::string resolved_addr;
  std::string decision;           // one of kDecisions (decision.hpp)
  std::string rule;
  std::string reason;
  std::optional<int> status;      // HTTP status sent to the agent (200 for an established tunnel)
  std::uint64_t bytes_up = 0;     // agent -> upstream
  std::uint64_t bytes_down = 0;   // upstream -> agent
  std::optional<std::int64_t> duration_ms;
  std::string error;
  // Requests this row stands for: 1, or more for a row into which the writer folded
  // repeated refusals of one agent (see Writer; the path and method are the first one's).
  std::uint64_t count = 1;
  // A request inside an inspected tunnel: the Writer's handle of the tunnel's row, stored
  // as that row's id in parent_id. 0: none.
  std::uint64_t parent = 0;
  std::int64_t parent_id = 0;     // read back: the tunnel row's id (0: none)
  std::string proxy_id;           // read back: the proxy that wrote the row (the writer sets it)
  // Who opened the connection; exe empty: not attributed (a client that was not launched).
  ProcessOrigin origin;
  // While the lookup runs: the writer thread takes its answer before it writes the row,
  // waiting a bounded time (then exe is "unknown"). Never waited on by the proxy.
  std::shared_future<ProcessOrigin> origin_later;

  // The origin as far as it is known now, without waiting (for the request log line and
  // the export, which must not wait): `origin`, or the lookup's answer once it is in;
  // empty while the lookup is still under way, or for a client that was not launched.
  ProcessOrigin origin_now() const {
    if (!origin.exe.empty() || !origin_later.valid()) return origin;
    if (origin_later.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return {};
    return origin_later.get();
  }
};

// What is known when a connection or request ends.
struct Completion {
  std::optional<int> status;
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
  std::int64_t duration_ms = 0;
  std::string resolved_addr;      // empty: keep what was inserted
  std::string error;
  std::string decision;           // empty: keep what was inserted ("error" when the upstream failed)
  std::string rule;               // empty: keep what was inserted (set with a decision overruled)
  std::string reason;             // likewise
};

// One row of `agents`.
struct AgentRecord {
  std::string name;
  std::int64_t pid = 0;
  std::string command_line;
  std::string policy_digest;
  std::string address;            // the agent's veth address
  Clock::time_point started{};
  std::string sandbox;            // JSON: the layers it ran under (the --explain report); empty: NULL
};

struct AgentExit {
  std::string name;
  std::int64_t pid = 0;
  Clock::time_point ended{};
  std::optional<int> exit_status;  // shell convention: 128+N when killed by signal N
  std::string resource_usage;      // JSON: {"user_ms":..,"sys_ms":..,"max_rss_kb":..}
};

// One row of `events`: policy loads and reload failures, audit-store errors, launcher events.
struct Event {
  Event() = default;
  // netbox's own event (no agent): the four columns it always had.
  Event(Clock::time_point t, std::string k, std::string m, std::string d = {})
      : ts(t), kind(std::move(k)), message(std::move(m)), detail(std::move(d)) {}

  Clock::time_point ts{};
  std::string kind;     // "policy_load", "policy_reload_failed", "audit_error", "audit_recovered", "launch", ...
  std::string message;
  std::string detail;   // optional JSON
  // An event an agent caused (exfiltration_attempt): its name. Such events are folded per
  // agent, kind and fold_key and minute into counted rows (WriterOptions::fold_events);
  // empty: netbox's own event, always a row of its own.
  std::string agent;
  std::string fold_key;  // the particulars that make two events of an agent the same
  // false: a record of what was done about the agent (a guardian's or an operator's
  // action, a question and its answer), a row of its own with its particulars whatever
  // the agent caused before it; only what the agent itself causes is folded.
  bool may_fold = true;
  // Events this row stands for: 1, or more for a row into which the writer folded repeats.
  std::uint64_t count = 1;
};

}  // namespace netbox::audit
