#pragma once
// The steps every front door runs around Admission (TargetStep for a CONNECT, SOCKS5 and
// capture; the request loop, http_session.hpp, for each HTTP request), written once: the decision with its lookup (timed into dns_latency),
// the opening of an admitted exchange's row (with --audit-sync, only once the store has
// made it durable; a row the store refuses means no connection, and an audit_refused
// line says why), and the dial of the admitted addresses (timed into connect_latency).
// Each door answers in its own way (a 503, a SOCKS reply, a reset); what it answers is
// its own, the steps are these. Templates, so that a door's completion handler is not
// wrapped (and allocated) on the path that does not wait.
#include "pipeline/admission.hpp"
#include "pipeline/ask_step.hpp"
#include "upstream/dialer.hpp"
#include "pipeline/exchange.hpp"
#include "base/door_services.hpp"

#include <boost/asio/post.hpp>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace netbox::proxy {

// Decides host:port; when admission needs a lookup it runs on the worker's resolver.
// `then(AdmissionResult)` runs at once or on the lookup's completion; it keeps the door
// (and so `admission`) alive. An askable refusal of an agent launched with --ask waits for
// a person's answer first (ask_step.hpp), never on the io thread.
template <class Then>
void decide(Admission& admission, Worker& worker, Counters& counters, const policy::Host& host, std::uint16_t port,
            Then then) {
  decide_as(admission, worker, counters, host, port, nullptr, std::move(then));
}

// decide, under a person's grant (null: none).
template <class Then>
void decide_as(Admission& admission, Worker& worker, Counters& counters, const policy::Host& host,
               std::uint16_t port, const Grant* grant, Then then) {
  if (auto r = admission.begin(host, port, grant)) {
    if (auto* no = std::get_if<Refused>(&*r); no && no->askable)
      return ask_person(admission, worker, counters, host, port, std::move(*no), std::move(then));
    return then(std::move(*r));
  }
  const auto t0 = std::chrono::steady_clock::now();
  worker.resolver->resolve(host.name, [&admission, &counters, t0, then = std::move(then)](ResolveResult r) mutable {
    if (!r.from_cache) counters.dns_latency.observe(std::chrono::steady_clock::now() - t0);
    then(admission.resolved(r));
  });
}

// The exchange could not be recorded: it ends, and the log says why (`host`, `agent`).
void note_unaudited(DoorServices& rt, Exchange& exchange, const std::string& host, const std::string& agent,
                    const std::string& why);

// Opens the admitted exchange's row and moves the admitted addresses to `allowed`.
// `then(why)`: `why` empty when the row is queued (with --audit-sync: durable, and `then`
// runs on `on`); otherwise the exchange has ended (note_unaudited) and the door answers
// without connecting anything. `then` keeps the door (and `exchange`) alive.
template <class Executor, class Then>
void open_row(DoorServices& rt, Exchange& exchange, Admitted& yes, std::vector<boost::asio::ip::tcp::endpoint>& allowed,
              const std::string& host, const std::string& agent, const Executor& on, Then then) {
  const bool queued = exchange.admitted(yes);
  allowed = std::move(yes.endpoints);
  if (!queued) {
    std::string why = "the audit store did not accept the record of this request";
    note_unaudited(rt, exchange, host, agent, why);
    return then(std::move(why));
  }
  if (!rt.options.audit_sync) return then(std::string());
  // Strict mode: nothing leaves until the decision row is durable. The store answers on
  // its writer thread; the door continues on its own io thread.
  rt.writer->on_committed(exchange.row(), [&rt, &exchange, host, agent, on, then = std::move(then)](bool ok) mutable {
    boost::asio::post(on, [&rt, &exchange, host, agent, ok, then = std::move(then)]() mutable {
      if (ok) return then(std::string());
      std::string why = "the audit store could not make the record of this request durable";
      note_unaudited(rt, exchange, host, agent, why);
      then(std::move(why));
    });
  });
}

// Dials the admitted addresses under the profile's limits; `then(DialResult)`.
template <class Then>
void dial_admitted(DoorServices& rt, Worker& worker, const std::vector<boost::asio::ip::tcp::endpoint>& to,
                   const policy::Limits& limits, Then then) {
  const auto t0 = std::chrono::steady_clock::now();
  dial(worker.ioc, to, DialLimits::of(limits, rt.dial_fd_ceiling, worker.pool.get()),
       [&rt, t0, then = std::move(then)](DialResult r) mutable {
         rt.counters.connect_latency.observe(std::chrono::steady_clock::now() - t0);
         then(std::move(r));
       });
}

}  // namespace netbox::proxy
