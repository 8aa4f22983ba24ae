#pragma once
// One audited exchange (a plain-HTTP request or a CONNECT tunnel) and its row, which it
// builds from what the session learns: the connection (who), the request (what), the
// target (where) and admission's answer (the decision). A refused request's row is
// written whole at once; an admitted one is inserted at decision time and completed
// exactly once at close, also when the connection dies or the proxy shuts down (the
// destructor completes it). It also holds the cap token, so the slot is given back when
// the exchange ends. A member of its session, reused request after request; a tunnel
// takes it over by move.
#include "netbox/audit/record.hpp"
#include "netbox/audit/writer.hpp"

#include "netbox/proxy/proxy_options.hpp"

#include "pipeline/admission.hpp"
#include "pipeline/caps.hpp"
#include "pipeline/client_slots.hpp"
#include "pipeline/outcome.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace netbox::proxy {

struct DoorServices;

class Exchange {
 public:
  explicit Exchange(DoorServices& impl) : impl_(&impl) {}
  Exchange(Exchange&& o) noexcept;
  Exchange& operator=(Exchange&&) = delete;
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;
  ~Exchange() { end(); }

  // Once per agent connection: who sends its requests, and the agent label their counts
  // carry (DoorServices::metric_label).
  // `origin`: the lookup of the process that opened it (AgentIdentity::origin), which every
  // row of the connection records.
  void connection(std::string agent, std::string client_addr, std::string metric_label,
                  std::shared_future<audit::ProcessOrigin> origin = {});
  const std::shared_future<audit::ProcessOrigin>& origin() const { return origin_; }
  // A new request: the row starts over, from the connection.
  void begin();
  // What was asked, as far as it could be read. Text from a head refused before Beast
  // parsed it may hold any byte: `escape` stores it escaped.
  void request(bool connect, std::string_view method, bool escape = false);
  void target(std::string_view host, std::uint16_t port, std::string_view path, bool escape = false);
  void host(std::string_view name) { record_.host = name; }
  // The front door it came through, when not the HTTP listener's ("socks", "transparent").
  void kind(std::string_view k) { record_.kind = k; }
  // A request inside an inspected tunnel: its row links to the tunnel's (parent_id).
  void parent(audit::RowHandle tunnel_row) { record_.parent = tunnel_row; }

  // Admission's answer. admitted() takes the decision and the cap slot and queues the
  // row: false when the audit store refused it (the caller answers 503).
  bool admitted(Admitted& a);
  void refused(Refused& r);

  // netbox answers instead of forwarding. An open exchange ends as error (the request was
  // admitted, then failed); otherwise its whole row is written under r.outcome.
  void refuse(const Refusal& r, std::string error);
  // Completes the open row, logs the canonical line, counts the request under its outcome
  // and its bytes. `failed`: netbox answered instead of the upstream (the outcome becomes
  // error). Only the first call counts.
  void finish(std::optional<int> status, std::string error = {}, bool failed = false);
  // An admitted exchange refused after all (an inspected tunnel whose ClientHello names
  // another host, a body holding a credential's placeholder): its row is completed under
  // `outcome`, `rule` and `reason`, also when netbox answers (refuse) rather than the upstream.
  void overrule(Outcome outcome, std::string rule, std::string reason) {
    outcome_ = outcome;
    overruled_ = true;
    record_.rule = std::move(rule);
    record_.reason = std::move(reason);
  }
  // What a checked body said (its JSON-RPC methods and MCP tool names, or a push's refs:
  // BodyGate::calls, issue 28), added to
  // the row's reason when it completes, whatever the outcome: the reason column is where
  // a row says what decided it.
  void note_body(std::string_view calls);
  // An open exchange that ends without an answer (the connection or the proxy went away).
  void end();
  // The outcome can no longer change (a tunnel is established): counted now rather than
  // at its end, so a long-lived tunnel shows in the metrics while it lasts.
  void settle();

  bool is_open() const { return open_ && !finished_; }
  void dialled(std::string address) { record_.resolved_addr = std::move(address); }
  // The queued row, for Writer::on_committed (--audit-sync). kNoRow before admitted().
  audit::RowHandle row() const { return row_; }
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
  // What its relays charge to the agent's budgets (from admission). Once it has cut a
  // relay, the row is completed as `budget`, naming the budget.
  ByteMeter meter;
  ClientSlot client_slot;  // a tunnel's: the agent connection it took over from its session

 private:
  void note_refusal(Outcome outcome, const std::string& rule);

  DoorServices* impl_;
  std::shared_ptr<AgentGuard> guard_;  // the agent's: its refusals are guardian events
  std::string agent_;
  std::string client_addr_;
  std::string metric_label_;
  std::shared_future<audit::ProcessOrigin> origin_;
  audit::AuditRecord record_;
  Outcome outcome_ = kNotRefused;
  CapToken cap_;
  audit::RowHandle row_ = audit::kNoRow;
  std::chrono::steady_clock::time_point started_;
  bool open_ = false;
  bool finished_ = false;
  bool counted_ = false;  // in netbox_requests_total
  bool overruled_ = false;
  bool noted_ = false;  // note_body changed the reason
};

}  // namespace netbox::proxy
