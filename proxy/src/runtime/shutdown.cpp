// The proxy's orderly shutdown: no more reloads and actions, listeners closed on their io
// threads, open exchanges given the grace period, then the threads joined and what they
// served dropped in an order that leaves no handler behind its io_context.
#include "agents/control_socket.hpp"
#include "base/proxy_runtime.hpp"
#include "http/http_session.hpp"

#include "netbox/audit/writer.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <future>
#include <thread>

namespace netbox::proxy {

namespace asio = boost::asio;

namespace {

// Closes every listener (and, on the first io thread, the control socket and the host
// watches), each on its own io thread, waiting for each in turn.
void stop_accepting(ProxyRuntime& rt) {
  for (auto& w : rt.workers) {
    std::promise<void> done;
    auto f = done.get_future();
    asio::post(w->ioc, [&rt, wp = w.get(), &done] {
      for (auto& [ep, acc] : wp->acceptors) {
        boost::system::error_code ec;
        acc->close(ec);
      }
      wp->acceptors.clear();
      const bool first = wp == rt.workers.front().get();
      if (first && rt.control) rt.control->stop();
      if (first && rt.host_refresh) rt.host_refresh->cancel();
      if (first && rt.interface_watch) rt.interface_watch->stop();
      done.set_value();
    });
    f.wait();
  }
}

// Lets open tunnels and requests finish for the grace period, then stops and joins the io threads.
void drain_and_join(ProxyRuntime& rt) {
  const auto deadline = std::chrono::steady_clock::now() + rt.options.shutdown_grace;
  while (rt.counters.active_exchanges.load() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (auto& w : rt.workers) {
    w->guard.reset();
    w->ioc.stop();
  }
  for (auto& w : rt.workers)
    if (w->thread.joinable()) w->thread.join();
}

}  // namespace

void ProxyRuntime::stop() {
  {
    std::lock_guard lock(state_mu);
    if (lifecycle >= Lifecycle::stopping) return;
    lifecycle = Lifecycle::stopping;
  }
  follower.reset();  // no reload while shutting down
  // The guardian's and operators' actions under way finish first, while the io threads
  // still carry their answers (an operator's kill is answered once the agent is gone).
  guardians.stop();
  stop_dns_views();
  if (!workers.empty() && workers.front()->thread.joinable()) {
    stop_accepting(*this);
    drain_and_join(*this);
  }
  // Sessions waiting for audit queue room go with their io_contexts below, not later.
  if (writer) writer->cancel_room_waiters();
  // Resolvers and pools go first; then each io_context, whose destruction drops the
  // sessions still open (their audit rows are completed by their destructors).
  control.reset();
  host_refresh.reset();
  interface_watch.reset();
  for (auto& w : workers) {
    w->acceptors.clear();
    w->resolver.reset();
    w->pool.reset();
  }
  workers.clear();
  registry.withdraw();
  if (writer) writer->flush();
  log.write(log_event::stopped, {});
  {
    std::lock_guard lock(state_mu);
    lifecycle = Lifecycle::stopped;
  }
  state_cv.notify_all();
}

void ProxyRuntime::wait() {
  std::unique_lock lock(state_mu);
  state_cv.wait(lock, [this] { return lifecycle == Lifecycle::stopped; });
}

}  // namespace netbox::proxy
