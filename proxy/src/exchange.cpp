#include "exchange.hpp"

#include "server_impl.hpp"

#include <charconv>

namespace netbox::proxy {
namespace {

// Decimal text of a number in a caller's buffer: the request line formats five of them
// per request, without a std::string each.
struct Number {
  char text[24];
  std::size_t size = 0;
  template <typename Int>
  explicit Number(Int v) { size = static_cast<std::size_t>(std::to_chars(text, text + sizeof text, v).ptr - text); }
  std::string_view view() const { return {text, size}; }
};

void log_request(Server::Impl& impl, const audit::AuditRecord& r, Outcome outcome) {
  switch (impl.options.log_requests) {
    case LogRequests::all: break;
    case LogRequests::none: return;
    case LogRequests::refusals:
      if (outcome == Outcome::allow && r.status.value_or(0) < 400 && r.error.empty()) return;
      break;
  }
  const Number port(r.port), up(r.bytes_up), down(r.bytes_down);
  const Number status(r.status.value_or(0));
  const Number ms(r.duration_ms.value_or(0));
  impl.log.write("request", {{"agent", r.agent},
                             {"client", r.client_addr},
                             {"kind", r.kind},
                             {"method", r.method},
                             {"host", r.host},
                             {"port", r.port ? port.view() : std::string_view()},
                             {"path", r.path},
                             {"addr", r.resolved_addr},
                             {"decision", r.decision},
                             {"status", r.status ? status.view() : std::string_view("-")},
                             {"rule", r.rule},
                             {"reason", r.reason},
                             {"up", up.view()},
                             {"down", down.view()},
                             {"ms", r.duration_ms ? ms.view() : std::string_view()},
                             {"error", r.error}});
}

}  // namespace

Exchange::Exchange(Server::Impl& impl, audit::AuditRecord record, Outcome outcome, std::string metric_label)
    : impl_(impl),
      record_(std::move(record)),
      outcome_(outcome),
      metric_label_(std::move(metric_label)),
      started_(std::chrono::steady_clock::now()) {}

Exchange::~Exchange() {
  if (open_ && !finished_)
    finish(std::nullopt, impl_.is_stopping() ? "proxy shut down before the exchange finished"
                                             : "connection closed before the exchange finished");
}

bool Exchange::open() {
  record_.ts = audit::Clock::now();
  record_.decision = to_string(outcome_);
  row_ = impl_.writer->insert(record_);
  if (row_ == audit::kNoRow) return false;
  open_ = true;
  impl_.counters.active_exchanges.fetch_add(1);
  return true;
}

void Exchange::finish(std::optional<int> status, std::string error, bool failed) {
  if (!open_ || finished_) return;
  finished_ = true;
  if (failed) outcome_ = Outcome::error;
  cap.release();
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started_).count();
  audit::Completion c;
  c.status = status;
  c.bytes_up = bytes_up;
  c.bytes_down = bytes_down;
  c.duration_ms = ms;
  c.resolved_addr = record_.resolved_addr;
  c.error = error;
  if (failed) c.decision = to_string(outcome_);  // the row was inserted with the admission's
  if (!impl_.writer->complete(row_, c))
    impl_.log.write("audit_error", {{"message", "audit queue full: could not complete row"},
                                    {"host", record_.host}});
  record_.status = status;
  record_.bytes_up = bytes_up;
  record_.bytes_down = bytes_down;
  record_.duration_ms = ms;
  record_.error = std::move(error);
  record_.decision = to_string(outcome_);
  // Counted once it ended, under the outcome it ended with (an admitted request whose
  // upstream failed counts as error, as its answer and its row say).
  impl_.counters.count_request(metric_label_, record_.kind, record_.decision);
  impl_.counters.bytes_up.fetch_add(bytes_up);
  impl_.counters.bytes_down.fetch_add(bytes_down);
  impl_.counters.active_exchanges.fetch_sub(1);
  log_request(impl_, record_, outcome_);
}

void record_refusal(Server::Impl& impl, audit::AuditRecord record, Outcome outcome, const std::string& metric_label) {
  record.ts = audit::Clock::now();
  record.decision = to_string(outcome);
  if (!record.duration_ms) record.duration_ms = 0;
  impl.counters.count_request(metric_label, record.kind, record.decision);
  if (!impl.writer->insert_complete(record)) {
    record.error += record.error.empty() ? "audit store refused the row" : "; audit store refused the row";
  }
  log_request(impl, record, outcome);
}

}  // namespace netbox::proxy
