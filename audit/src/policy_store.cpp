#include "netbox/audit/policy_store.hpp"

#include "netbox/audit/query.hpp"
#include "netbox/audit/schema.hpp"
#include "pg.hpp"
#include "pg_schema.hpp"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace netbox::audit {

PublishedPolicy latest_policy(const std::string& address) {
  auto conn = detail::open_postgresql_for_reading(address);
  detail::PgResult r;
  try {
    r = conn->query("SELECT version, body, published FROM policies ORDER BY version DESC LIMIT 1");
  } catch (const detail::PgError& e) {
    throw std::runtime_error("cannot read the policies of " + address + ": " + e.what());
  }
  if (PQntuples(r.get()) == 0)
    throw DatabaseRejected(address + " holds no policy: publish one with netbox policy push FILE --policy " + address);
  return {std::stoll(detail::pg_value(r.get(), 0, 0)), detail::pg_value(r.get(), 0, 1), detail::pg_value(r.get(), 0, 2)};
}

std::int64_t publish_policy(const std::string& address, const std::string& body, const std::string& digest,
                            const std::string& by) {
  auto conn = detail::open_postgresql_for_writing(address);
  try {
    // The body as given: a policy file is UTF-8 JSON (the loader refused anything else).
    auto r = conn->query("INSERT INTO policies (published, published_by, digest, body) VALUES ($1, $2, $3, $4) "
                         "RETURNING version",
                         {format_timestamp(Clock::now()), detail::pg_text(by), digest, body});
    return std::stoll(detail::pg_value(r.get(), 0, 0));
  } catch (const detail::PgError& e) {
    throw std::runtime_error("cannot publish the policy to " + address + ": " + e.what());
  }
}

struct PolicyWatch::State {
  std::string address;
  std::function<bool()> changed;
  std::function<void(std::string)> trouble;
  int stop_fd = -1;  // an eventfd: written once to end the thread
  std::string last_trouble;
  std::thread thread;

  // Waits until `fd` is readable (true), the watch is stopped or `ms` passed (false).
  bool wait(int fd, int ms, bool& stopping) const {
    pollfd fds[2] = {{stop_fd, POLLIN, 0}, {fd, POLLIN, 0}};
    const int n = ::poll(fds, fd < 0 ? 1 : 2, ms);
    stopping = n > 0 && (fds[0].revents & POLLIN);
    return n > 0 && !stopping && fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR));
  }

  // One connection's life: LISTEN, then a `changed` per notification until it breaks.
  void listen_once(bool& stopping) {
    detail::PgConn conn(address);
    conn.exec("LISTEN netbox_policy");
    last_trouble.clear();
    // Whatever changed while nothing listened (before the first LISTEN, or while the
    // connection was down): the caller reloads only what differs from what it runs.
    bool due = !changed();  // a read is owed: one failed, or notifications came too soon
    auto last = std::chrono::steady_clock::now();
    PGconn* c = conn.native();
    while (!stopping) {
      // At most one read a second: any role that may connect to the database can NOTIFY
      // this channel, and every read is a query of every proxy; notifications that come
      // meanwhile are one change to read.
      const auto next = last + std::chrono::seconds(1);
      const auto now = std::chrono::steady_clock::now();
      if (due && now >= next) {
        last = now;
        due = !changed();
        continue;
      }
      const int ms = due ? static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(next - now).count()) : 60000;
      if (!wait(PQsocket(c), ms, stopping)) continue;
      if (PQconsumeInput(c) != 1) throw detail::PgError(std::string("PostgreSQL: ") + PQerrorMessage(c));
      while (PGnotify* n = PQnotifies(c)) {
        due = true;
        PQfreemem(n);
      }
      if (PQstatus(c) != CONNECTION_OK) throw detail::PgError("the connection to PostgreSQL was lost");
    }
  }

  void run() {
    pthread_setname_np(pthread_self(), "netbox-policy-pg");
    bool stopping = false;
    while (!stopping) {
      try {
        listen_once(stopping);
      } catch (const std::exception& e) {
        std::string why = e.what();
        while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
        if (why != last_trouble) trouble(why);  // once per cause, not every second
        last_trouble = why;
        wait(-1, 1000, stopping);
      }
    }
  }
};

PolicyWatch::PolicyWatch(std::string address, std::function<bool()> changed, std::function<void(std::string)> trouble)
    : state_(std::make_unique<State>()) {
  state_->address = std::move(address);
  state_->changed = std::move(changed);
  state_->trouble = std::move(trouble);
  state_->stop_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (state_->stop_fd < 0) throw std::runtime_error("eventfd failed: cannot watch the policy");
  state_->thread = std::thread([s = state_.get()] { s->run(); });
}

PolicyWatch::~PolicyWatch() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(state_->stop_fd, &one, sizeof one);
  if (state_->thread.joinable()) state_->thread.join();
  ::close(state_->stop_fd);
}

}  // namespace netbox::audit
