#pragma once
// Who made each request (issue 27): the agent's process that opened a connection, found
// from the connection's socket inside the agent's network namespace. The proxy asks the
// namespace's socket table (sock_diag.hpp, over a netlink socket the launcher made there)
// for the inode of the client's socket, finds the process holding it among the agent's
// processes (process_table.hpp, from the init of its PID namespace down) and reads what it
// runs. All of it on one thread of its own, never an io thread: a lookup is queued at
// accept (look_up answers a future at once) and the audit writer takes the answer before it
// writes the row, waiting a bounded time. Bounded everywhere, against an agent that opens
// thousands of connections or holds thousands of descriptors: a full queue, a stale
// lookup or a scan over its budget answer "unknown" rather than wait.
#include "netbox/audit/record.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace netbox::proxy {

class Attribution {
 public:
  // `warn`: called once per agent (on the attribution thread) when its processes cannot
  // be read at all (a proxy without ptrace access to them), with the agent's name and why.
  using Warn = std::function<void(const std::string& agent, const std::string& why)>;
  explicit Attribution(Warn warn = {});
  ~Attribution();  // answers every queued lookup "unknown", then stops the thread
  Attribution(const Attribution&) = delete;
  Attribution& operator=(const Attribution&) = delete;

  // An agent known by its sockets in network namespace `netns`: its NETLINK_SOCK_DIAG
  // socket there (owned from here on) and the host pid of its PID namespace's init (0:
  // unknown; its lookups answer "unknown").
  void add(std::uint64_t netns, const std::string& agent, int diag_fd, pid_t root);
  void remove(std::uint64_t netns);

  // The process that opened the connection on `s`, accepted from the agent of `netns`.
  // Invalid (no lookup) for an agent added without a netlink socket, or none at all.
  std::shared_future<audit::ProcessOrigin> look_up(std::uint64_t netns, const boost::asio::ip::tcp::socket& s);

  static constexpr std::size_t kMaxQueued = 1024;
  // A lookup queued longer than this is answered "unknown" unlooked: the writer has
  // given up on it already, and a flood must not leave the thread behind for long.
  static constexpr std::chrono::milliseconds kStale{1000};
  static constexpr std::chrono::milliseconds kScanTime{100};  // per lookup, /proc scan and netlink both

 private:
  struct Source;
  struct Job {
    std::shared_ptr<Source> source;
    boost::asio::ip::tcp::endpoint local, peer;
    std::chrono::steady_clock::time_point queued;
    std::promise<audit::ProcessOrigin> answer;
  };
  void run();
  audit::ProcessOrigin find(Job& job);

  Warn warn_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::uint64_t, std::shared_ptr<Source>> sources_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  std::thread thread_;  // started with the first agent
};

// The answer when nothing better is known.
audit::ProcessOrigin unknown_origin();

}  // namespace netbox::proxy
