#include "exchange.hpp"

#include "proxy_runtime.hpp"

namespace netbox::proxy {
namespace {

void log_request(ProxyRuntime& impl, const audit::AuditRecord& r) {
  const bool refused = r.decision != "allow" || r.status.value_or(0) >= 400 || !r.error.empty();
  switch (impl.options.log_requests) {
    case LogRequests::all: break;
    case LogRequests::none: return;
    case LogRequests::refusals:
      if (!refused) return;
      break;
  }
  // The audit row's own column names and types, so a log reader and a SQL reader agree.
  impl.log.write(refused ? LogLevel::warn : LogLevel::info, "request",
                 {{"agent", r.agent},
                  LogField::text_or_null("client_addr", r.client_addr),
                  {"kind", r.kind},
                  LogField::text_or_null("method", r.method),
                  {"host", r.host},
                  {"port", r.port},
                  LogField::text_or_null("path", r.path),
                  LogField::text_or_null("resolved_addr", r.resolved_addr),
                  {"decision", r.decision},
                  LogField::text_or_null("rule", r.rule),
                  LogField::text_or_null("reason", r.reason),
                  {"status", r.status},
                  {"bytes_up", r.bytes_up},
                  {"bytes_down", r.bytes_down},
                  {"duration_ms", r.duration_ms},
                  LogField::text_or_null("error", r.error)});
}

}  // namespace

Exchange::Exchange(ProxyRuntime& impl, audit::AuditRecord record, std::string metric_label)
    : impl_(impl),
      record_(std::move(record)),
      metric_label_(std::move(metric_label)),
      started_(std::chrono::steady_clock::now()) {}

Exchange::~Exchange() {
  if (open_ && !finished_)
    finish(std::nullopt, impl_.is_stopping() ? "proxy shut down before the exchange finished"
                                             : "connection closed before the exchange finished");
}

bool Exchange::open() {
  record_.ts = audit::Clock::now();
  row_ = impl_.writer->insert(record_);
  if (row_ == audit::kNoRow) return false;
  open_ = true;
  impl_.counters.active_exchanges.fetch_add(1);
  impl_.counters.count_request(metric_label_, record_.kind, record_.decision);
  return true;
}

void Exchange::finish(std::optional<int> status, std::string error) {
  if (!open_ || finished_) return;
  finished_ = true;
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
  if (!impl_.writer->complete(row_, c))
    impl_.log.write("audit_error", {{"message", "audit queue full: could not complete row"},
                                    {"host", record_.host}});
  record_.status = status;
  record_.bytes_up = bytes_up;
  record_.bytes_down = bytes_down;
  record_.duration_ms = ms;
  record_.error = std::move(error);
  impl_.counters.bytes_up.fetch_add(bytes_up);
  impl_.counters.bytes_down.fetch_add(bytes_down);
  impl_.counters.active_exchanges.fetch_sub(1);
  log_request(impl_, record_);
}

void record_refusal(ProxyRuntime& impl, audit::AuditRecord record, const std::string& metric_label) {
  record.ts = audit::Clock::now();
  if (!record.duration_ms) record.duration_ms = 0;
  impl.counters.count_request(metric_label, record.kind, record.decision);
  if (!impl.writer->insert_complete(record)) {
    record.error += record.error.empty() ? "audit store refused the row" : "; audit store refused the row";
  }
  log_request(impl, record);
}

}  // namespace netbox::proxy
