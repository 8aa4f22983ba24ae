#include "agents/attribution.hpp"

#include "agents/process_table.hpp"
#include "agents/sock_diag.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>

namespace netbox::proxy {

struct Attribution::Source {
  std::string agent;
  int diag = -1;
  pid_t root = 0;
  std::atomic<bool> warned{false};
  ~Source() {
    if (diag >= 0) ::close(diag);
  }
};

audit::ProcessOrigin unknown_origin() { return audit::ProcessOrigin{std::nullopt, "unknown", {}}; }

namespace {

std::shared_future<audit::ProcessOrigin> answered(audit::ProcessOrigin o) {
  std::promise<audit::ProcessOrigin> p;
  p.set_value(std::move(o));
  return p.get_future().share();
}

}  // namespace

Attribution::Attribution(Warn warn) : warn_(std::move(warn)) {}

Attribution::~Attribution() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (auto& job : queue_) job.answer.set_value(unknown_origin());
}

void Attribution::add(std::uint64_t netns, const std::string& agent, int diag_fd, pid_t root) {
  auto source = std::make_shared<Source>();
  source->agent = agent;
  source->diag = diag_fd;
  source->root = root;
  std::lock_guard lock(mu_);
  sources_[netns] = std::move(source);
  if (!thread_.joinable()) {
    thread_ = std::thread([this] { run(); });
    pthread_setname_np(thread_.native_handle(), "nb-attribution");
  }
}

void Attribution::remove(std::uint64_t netns) {
  std::lock_guard lock(mu_);
  sources_.erase(netns);  // its queued lookups keep it (and its netlink socket) until answered
}

std::shared_future<audit::ProcessOrigin> Attribution::look_up(std::uint64_t netns,
                                                              const boost::asio::ip::tcp::socket& s) {
  boost::system::error_code local_ec, peer_ec;
  Job job;
  job.local = s.local_endpoint(local_ec);
  job.peer = s.remote_endpoint(peer_ec);
  std::unique_lock lock(mu_);
  const auto it = sources_.find(netns);
  if (it == sources_.end()) return {};
  if (local_ec || peer_ec || stopping_ || queue_.size() >= kMaxQueued) {
    lock.unlock();
    return answered(unknown_origin());
  }
  job.source = it->second;
  job.queued = std::chrono::steady_clock::now();
  auto answer = job.answer.get_future().share();
  queue_.push_back(std::move(job));
  lock.unlock();
  cv_.notify_one();
  return answer;
}

void Attribution::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Job job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    audit::ProcessOrigin origin;
    try {
      origin = find(job);
    } catch (const std::exception&) {  // out of memory, say: no answer is still an answer
      origin = unknown_origin();
    }
    job.answer.set_value(std::move(origin));
    job = Job{};  // its source (and netlink socket) let go outside the lock
    lock.lock();
  }
}

audit::ProcessOrigin Attribution::find(Job& job) {
  const auto start = std::chrono::steady_clock::now();
  if (start - job.queued > kStale || job.source->root <= 0) return unknown_origin();
  const auto inode = peer_socket_inode(job.source->diag, job.local, job.peer, kScanTime);
  if (!inode) return unknown_origin();
  ScanBudget budget;
  budget.deadline = start + kScanTime;
  const SocketOwner owner = find_socket_owner(job.source->root, *inode, budget);
  if (owner.end == ScanEnd::no_access && warn_ && !job.source->warned.exchange(true))
    warn_(job.source->agent,
          "the proxy may not read the agent's processes (/proc/PID/fd needs ptrace access: root or CAP_SYS_PTRACE); "
          "its requests are recorded with client_exe \"unknown\"");
  if (owner.end != ScanEnd::found) return unknown_origin();
  auto origin = describe_process(owner.pid);
  // Read again: the pid was not reused by another process while it was described.
  if (!origin || !holds_socket(owner.pid, *inode, budget.descriptors)) return unknown_origin();
  return *origin;
}

}  // namespace netbox::proxy
