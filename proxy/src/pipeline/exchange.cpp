#include "pipeline/exchange.hpp"

#include "netbox/proxy/endpoint.hpp"

#include "base/door_services.hpp"

#include "netbox/audit/printable.hpp"


namespace netbox::proxy {
namespace {

void log_request(DoorServices& impl, const audit::AuditRecord& r, Outcome outcome) {
  const bool refused = !plainly_allowed(outcome) || r.status.value_or(0) >= 400 || !r.error.empty();
  switch (impl.options.log_requests) {
    case LogRequests::all: break;
    case LogRequests::none: return;
    case LogRequests::refusals:
      if (!refused) return;
      break;
  }
  // The audit row's own column names and types, so a log reader and a SQL reader agree.
  impl.log.write(refused ? LogLevel::warn : LogLevel::info, log_event::request,
                 {{log_key::agent, r.agent},
                  LogField::text_or_null(log_key::client_addr, r.client_addr),
                  {log_key::kind, r.kind},
                  LogField::text_or_null(log_key::method, r.method),
                  {log_key::host, r.host},
                  {log_key::port, r.port},
                  LogField::text_or_null(log_key::path, r.path),
                  LogField::text_or_null(log_key::resolved_addr, r.resolved_addr),
                  {log_key::decision, r.decision},
                  LogField::text_or_null(log_key::rule, r.rule),
                  LogField::text_or_null(log_key::reason, r.reason),
                  {log_key::status, r.status},
                  {log_key::bytes_up, r.bytes_up},
                  {log_key::bytes_down, r.bytes_down},
                  {log_key::duration_ms, r.duration_ms},
                  LogField::text_or_null(log_key::error, r.error),
                  // The executable, not its argv: a command line may hold a secret.
                  LogField::text_or_null(log_key::client_exe, r.origin_now().exe)});
}

}  // namespace

Exchange::Exchange(Exchange&& o) noexcept
    : bytes_up(o.bytes_up),
      bytes_down(o.bytes_down),
      meter(std::move(o.meter)),
      client_slot(std::move(o.client_slot)),
      impl_(o.impl_),
      guard_(std::move(o.guard_)),
      agent_(std::move(o.agent_)),
      client_addr_(std::move(o.client_addr_)),
      metric_label_(std::move(o.metric_label_)),
      origin_(std::move(o.origin_)),
      record_(std::move(o.record_)),
      outcome_(o.outcome_),
      cap_(std::move(o.cap_)),
      row_(o.row_),
      started_(o.started_),
      open_(o.open_),
      finished_(o.finished_),
      counted_(o.counted_),
      overruled_(o.overruled_),
      noted_(o.noted_) {
  o.open_ = false;  // the row is this one's to complete
}

void Exchange::connection(std::string agent, std::string client_addr, std::string metric_label,
                          std::shared_future<audit::ProcessOrigin> origin) {
  origin_ = std::move(origin);
  agent_ = std::move(agent);
  client_addr_ = std::move(client_addr);
  metric_label_ = std::move(metric_label);
  guard_ = impl_->guardians.of(agent_);
}

void Exchange::begin() {
  end();
  record_ = audit::AuditRecord{};
  record_.agent = agent_;
  record_.client_addr = client_addr_;
  record_.origin_later = origin_;
  record_.kind = "http";
  outcome_ = kNotRefused;
  row_ = audit::kNoRow;
  open_ = finished_ = counted_ = overruled_ = noted_ = false;
  bytes_up = bytes_down = 0;
  meter = ByteMeter();
}

void Exchange::note_body(std::string_view calls) {
  if (calls.empty()) return;
  record_.reason += (record_.reason.empty() ? "" : "; ") + audit::escape_controls(calls);
  noted_ = true;
}

void Exchange::request(bool connect, std::string_view method, bool escape) {
  record_.kind = connect ? "connect" : "http";
  record_.method = escape ? audit::escape_controls(method) : std::string(method);
}

void Exchange::target(std::string_view host, std::uint16_t port, std::string_view path, bool escape) {
  record_.host = escape ? audit::escape_controls(host) : std::string(host);
  record_.port = port;
  record_.path = escape ? audit::escape_controls(path) : std::string(path);
}

bool Exchange::admitted(Admitted& a) {
  outcome_ = a.outcome();
  record_.rule = std::move(a.decision.rule);
  record_.reason = std::move(a.decision.reason);
  record_.resolved_addr = address_text(a.endpoints.front().address());
  cap_ = std::move(a.cap);
  meter = std::move(a.meter);
  record_.ts = audit::Clock::now();
  record_.decision = to_string(outcome_);
  started_ = std::chrono::steady_clock::now();
  row_ = impl_->writer->insert(record_);
  if (row_ == audit::kNoRow) {
    cap_.release();
    return false;
  }
  open_ = true;
  impl_->counters.active_exchanges.fetch_add(1);
  return true;
}

void Exchange::refused(Refused& r) {
  record_.rule = std::move(r.rule);
  record_.reason = std::move(r.reason);
  record_.resolved_addr = std::move(r.resolved_addr);
}

void Exchange::refuse(const Refusal& r, std::string error) {
  if (is_open()) {
    // A refusal after admission (a body rule's: jsonrpc, body_schema, git) counts as a
    // denial too, or an agent could probe forbidden tools and refs without end.
    note_refusal(r.outcome, r.rule.empty() ? record_.rule : r.rule);
    return finish(static_cast<int>(r.status), error.empty() ? r.reason : std::move(error), true);
  }
  if (open_) return;  // answered already
  finished_ = true;
  auto& rec = record_;
  if (rec.rule.empty()) rec.rule = r.rule;
  if (rec.reason.empty()) rec.reason = r.reason;
  rec.status = static_cast<int>(r.status);
  rec.error = std::move(error);
  rec.ts = audit::Clock::now();
  rec.decision = to_string(r.outcome);
  rec.duration_ms = 0;
  impl_->counters.count_request(metric_label_, rec.kind, rec.decision);
  if (!impl_->writer->insert_complete(rec))
    rec.error += rec.error.empty() ? "audit store refused the row" : "; audit store refused the row";
  impl_->export_row(rec);
  log_request(*impl_, rec, r.outcome);
  note_refusal(r.outcome, rec.rule);
}

// A refusal by the policy is what guardian triggers count (budgets and rates are counted
// where they refuse, AgentGuard::admit).
void Exchange::note_refusal(Outcome outcome, const std::string& rule) {
  if (!guard_ || !refused_by_policy(outcome)) return;
  guard_->note(policy::GuardianEvent::denied, rule);
  if (rule.starts_with("internal")) guard_->note(policy::GuardianEvent::internal_probe, rule);
}

void Exchange::settle() {
  if (!is_open() || counted_) return;
  counted_ = true;
  impl_->counters.count_request(metric_label_, record_.kind, to_string(outcome_));
}

void Exchange::end() {
  if (is_open())
    finish(std::nullopt, impl_->is_stopping() ? "proxy shut down before the exchange finished"
                                              : "connection closed before the exchange finished");
}

void Exchange::finish(std::optional<int> status, std::string error, bool failed) {
  if (!open_ || finished_) return;
  finished_ = true;
  if (const auto& cut = meter.cut()) overrule(Outcome::budget, cut->rule, cut->reason);
  if (failed && !overruled_) outcome_ = Outcome::error;  // an overruled row keeps its verdict
  cap_.release();
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started_).count();
  audit::Completion c;
  c.status = status;
  c.bytes_up = bytes_up;
  c.bytes_down = bytes_down;
  c.duration_ms = ms;
  c.resolved_addr = record_.resolved_addr;
  c.error = error;
  if (failed || overruled_) c.decision = to_string(outcome_);  // the row was inserted with the admission's
  if (overruled_ || noted_) {
    c.rule = record_.rule;
    c.reason = record_.reason;
  }
  if (!impl_->writer->complete(row_, c))
    impl_->log.write(log_event::audit_error,
                     {{log_key::message, "audit queue full: could not complete row"}, {log_key::host, record_.host}});
  record_.status = status;
  record_.bytes_up = bytes_up;
  record_.bytes_down = bytes_down;
  record_.duration_ms = ms;
  record_.error = std::move(error);
  record_.decision = to_string(outcome_);
  // Counted once its outcome is final, under that outcome (an admitted request whose
  // upstream failed counts as error, as its answer and its row say).
  if (!counted_) impl_->counters.count_request(metric_label_, record_.kind, record_.decision);
  counted_ = true;
  impl_->counters.bytes_up.fetch_add(bytes_up);
  impl_->counters.bytes_down.fetch_add(bytes_down);
  impl_->counters.active_exchanges.fetch_sub(1);
  impl_->export_row(record_);
  log_request(*impl_, record_, outcome_);
}

}  // namespace netbox::proxy
