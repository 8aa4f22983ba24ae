// A running `netbox proxy --control PATH`, reached over its Unix socket (JSON lines): the
// agent's sockets, made in its namespace, go with its registration (SCM_RIGHTS).
// The connection stays open for the agent's lifetime: if the launcher dies, the
// proxy sees it close and unregisters the agent by itself. Meanwhile the proxy may send
// an Act on it (a guardian rule's or an operator's kill, freeze or resume): a thread of
// the launcher reads it and acts with the same enforcer as for the embedded proxy.
// With --ask and a terminal the agent does not own, the proxy also pushes the agent's
// questions on it (Asked, Settled): asked on the launch's terminal by the same prompt as
// with the embedded proxy (ask_prompt.hpp), and answered on the same connection (Answer).
#include "netbox/launcher/ask_prompt.hpp"
#include "netbox/launcher/launch.hpp"
#include "netbox/launcher/proxy_link.hpp"
#include "netbox/proxy/control_protocol.hpp"

#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <future>
#include <iostream>
#include <mutex>
#include <thread>
#include <vector>

namespace netbox::launcher {
namespace {

// Who sits at the launch's terminal, as the grantor of its answers names them: the sudo
// caller (SUDO_UID) when run as root through sudo, else the launcher's own user.
std::string terminal_user() {
  uid_t uid = ::getuid();
  if (const char* sudo = std::getenv("SUDO_UID"); uid == 0 && sudo && *sudo) {
    char* end = nullptr;
    const unsigned long n = std::strtoul(sudo, &end, 10);
    if (end && *end == '\0') uid = static_cast<uid_t>(n);
  }
  passwd pw{};
  passwd* found = nullptr;
  std::vector<char> buf(4096);
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found) return found->pw_name;
  return "uid " + std::to_string(uid);
}

// How long the terminal's answer waits for the proxy to take it.
constexpr auto kAnswerWait = std::chrono::seconds(10);

class ControlClient final : public ProxyLink {
 public:
  ControlClient(std::filesystem::path socket, std::unique_ptr<AskPrompt> prompt = nullptr)
      : path_(std::move(socket)), prompt_(std::move(prompt)) {}
  ~ControlClient() override {
    stop_watching();
    stop_asking();
    if (fd_ >= 0) ::close(fd_);
  }

  void attach(const AgentIdentity& agent) override {
    agent_ = agent;
    connect_socket();
    attach_sockets(agent);
    if (::pipe2(stop_, O_CLOEXEC) != 0)
      throw LaunchError(kExitLauncherFailure, std::string("a pipe for the control connection's reader: ") + std::strerror(errno));
    watcher_ = std::thread([this] { watch(); });
  }

  // The agent's sockets go to the proxy with its registration (SCM_RIGHTS): it serves them
  // as the embedded proxy does, knows the agent by them, and answers the key to unregister.
  void attach_sockets(const AgentIdentity& agent) {
    if (!agent.sockets) throw LaunchError(kExitLauncherFailure, "the agent has no sockets for the proxy");
    const proxy::AgentSockets& s = *agent.sockets;
    proxy::control::Register req;
    req.agent = agent.name;
    req.profile = agent.profile;
    req.sockets = proxy::control::Register::Sockets{static_cast<int>(s.http.size()), static_cast<int>(s.socks.size()),
                                                    static_cast<int>(s.capture.size()), agent.dns_pool.has_value(),
                                                    s.diag >= 0};
    if (agent.dns_pool) req.dns_pool = agent.dns_pool->to_string();
    if (agent.dns_pool6) req.dns_pool6 = agent.dns_pool6->to_string();
    req.launch = proxy::AgentLaunch{agent.pid, agent.command_line, "", agent.policy_digest, agent.sandbox};
    req.credentials = agent.credentials;
    req.ask = agent.ask;
    if (req.ask && prompt_) {
      req.ask->terminal = true;  // the proxy pushes the questions here; the prompt answers them
      asks_ = prompt_->listener();
      prompt_->answer_with([this](const proxy::AskTarget& t, const proxy::AskAnswer& a) { return answer(t, a); });
    }
    std::vector<int> fds;
    for (const auto* list : {&s.http, &s.socks, &s.capture}) fds.insert(fds.end(), list->begin(), list->end());
    if (agent.dns_pool) fds.insert(fds.end(), {s.dns_udp, s.dns_tcp});
    if (s.diag >= 0) fds.push_back(s.diag);
    const auto reply = exchange(req, fds);
    if (!reply.ok)
      throw LaunchError(kExitLauncherFailure, "the proxy at " + path_.string() + " refused the agent: " + reply.error);
    registered_ = true;
    key_ = reply.addr;
    if (key_.empty()) {
      AgentOutcome refused;
      refused.exit_status = kExitLauncherFailure;
      detach(refused);
      throw LaunchError(kExitLauncherFailure, "the proxy at " + path_.string() +
                                                  " took the agent's sockets but named no key to unregister it (an older netbox?)");
    }
  }

  // The files of the proxy's own that the agent must not read (its policy and audit
  // store), asked on a connection of its own before anything is set up. A proxy too old
  // to know "info" names none.
  RunningProxyFiles files() {
    connect_socket();
    const auto reply = exchange(proxy::control::Info{});
    ::close(fd_);
    fd_ = -1;
    buffer_.clear();
    RunningProxyFiles out;
    if (!reply.ok) return out;
    if (!reply.policy_file.empty()) out.policy = reply.policy_file;
    if (!reply.audit_db.empty()) out.audit_db = reply.audit_db;
    out.ca_pem = reply.ca_pem;
    return out;
  }

  void detach(const AgentOutcome& outcome) noexcept override {
    stop_watching();
    stop_asking();
    if (fd_ < 0) return;
    // Refused: nothing to unregister (closing the connection ends whatever the proxy may
    // hold). Taken without a key (an older proxy): unregistered anyway, so that it can
    // close the agent's row with the launch's status.
    if (registered_) {
      try {
        const auto reply =
            exchange(proxy::control::Unregister{key_, outcome.exit_status, outcome.resource_usage_json()});
        if (!reply.ok) std::cerr << "netbox launch: the proxy did not unregister the agent: " << reply.error << "\n";
      } catch (const std::exception& e) {
        std::cerr << "netbox launch: unregistering the agent: " << e.what() << "\n";
      }
    }
    ::close(fd_);
    fd_ = -1;
  }

 private:
  void connect_socket() {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path_.native().size() >= sizeof addr.sun_path)
      throw LaunchError(kExitUsage, "--proxy-control " + path_.string() + ": path too long for a Unix socket");
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      throw LaunchError(kExitLauncherFailure, "--proxy-control " + path_.string() + ": cannot connect: " +
                                                  std::strerror(errno) + " (is `netbox proxy --control` running?)");
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }

  // While the agent runs: the proxy's Acts, each done and answered, until detach stops it.
  void watch() {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
    for (;;) {
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[1].revents) return;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        std::cerr << "netbox launch: the proxy at " << path_.string()
                  << " closed the control connection; its guardian and operators can no longer act on the agent\n";
        return close_answers("the proxy closed the control connection");
      }
      buffer_.append(buf, static_cast<std::size_t>(n));
      for (auto nl = buffer_.find('\n'); nl != std::string::npos; nl = buffer_.find('\n')) {
        const std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        read_from_proxy(line, false);
      }
      if (buffer_.size() > proxy::control::kMaxLine) buffer_.clear();  // a line too long for anything: dropped
    }
  }

  // A line the proxy sent while the agent runs: an Act is done (or, once the agent has
  // ended, answered so) and answered; a question, or its end, goes to the prompt; a reply
  // to the prompt's answer to it; anything else is said and dropped.
  void read_from_proxy(const std::string& line, bool ended) {
    try {
      dispatch(proxy::control::parse_from_proxy(line), ended);
    } catch (const proxy::control::ProtocolError& e) {
      std::cerr << "netbox launch: an unreadable line from the proxy (" << e.what() << "); ignored\n";
    }
  }

  void dispatch(const proxy::control::FromProxy& msg, bool ended) {
    if (const auto* act = std::get_if<proxy::control::Act>(&msg)) return act_on(*act, ended);
    if (const auto* q = std::get_if<proxy::control::Asked>(&msg)) {
      if (asks_.asked && !ended) asks_.asked(q->question);
      return;
    }
    if (const auto* s = std::get_if<proxy::control::Settled>(&msg)) {
      if (asks_.settled) asks_.settled(s->id, s->answered, s->how);
      return;
    }
    {
      std::lock_guard lock(answer_mu_);
      if (answer_waiting_) {
        answer_waiting_->set_value(std::get<proxy::control::Reply>(msg));
        answer_waiting_.reset();
        return;
      }
    }
    std::cerr << "netbox launch: the proxy sent an answer nothing asked for; ignored\n";
  }

  // The terminal's answer (the prompt's thread), on the registration connection; its reply
  // comes to the reader. Empty: taken; otherwise why not.
  std::string answer(const proxy::AskTarget& t, const proxy::AskAnswer& a) {
    std::future<proxy::control::Reply> reply;
    {
      std::lock_guard lock(answer_mu_);
      if (answers_closed_) return "not answered: " + answers_closed_why_;
      answer_waiting_.emplace();
      reply = answer_waiting_->get_future();
      try {
        send_line(proxy::control::to_line(
            proxy::control::Request{proxy::control::Answer{t.id, a.approve, a.scope, terminal_user()}}));
      } catch (const std::exception& e) {
        answer_waiting_.reset();
        return std::string("not answered: ") + e.what();
      }
    }
    if (reply.wait_for(kAnswerWait) != std::future_status::ready) {
      std::lock_guard lock(answer_mu_);
      answer_waiting_.reset();
      return "the proxy did not take the answer within " + std::to_string(kAnswerWait.count()) + " s";
    }
    const auto r = reply.get();
    return r.ok ? std::string() : r.error;
  }

  // After the reader: nothing tells the prompt of a question any more. Its thread ends
  // (an answer it was giving returns at once: the answers are closed).
  void stop_asking() noexcept {
    asks_ = {};
    prompt_.reset();
  }

  // No more answers go out (the reader stops): one waiting is told why.
  void close_answers(const std::string& why) noexcept {
    std::lock_guard lock(answer_mu_);
    answers_closed_ = true;
    answers_closed_why_ = why;
    if (answer_waiting_) answer_waiting_->set_value(proxy::control::Reply::refused(why));
    answer_waiting_.reset();
  }

  void act_on(const proxy::control::Act& act, bool ended) {
    proxy::control::Acted done{act.id, false, {}};
    if (ended) {
      done.ok = act.action == "kill";
      done.result = done.ok ? "the agent had already ended" : "the agent has ended";
    } else if (!agent_.enforcer) {
      done.result = "this launcher has no hand on its agent";
    } else {
      try {
        done.result = agent_.enforcer(act.action, act.why);
        done.ok = true;
      } catch (const std::exception& e) {
        done.result = e.what();
      }
    }
    try {
      send_line(proxy::control::to_line(proxy::control::Request{done}));
    } catch (const std::exception& e) {
      std::cerr << "netbox launch: answering the proxy's " << act.action << ": " << e.what() << "\n";
    }
  }

  void stop_watching() noexcept {
    close_answers("the launch is ending");
    if (!watcher_.joinable()) return;
    (void)!::write(stop_[1], "x", 1);
    watcher_.join();
    ::close(stop_[0]);
    ::close(stop_[1]);
    stop_[0] = stop_[1] = -1;
  }

  // From the reader (an Act's answer) and the prompt's thread (an answer): one line at a time.
  void send_line(const std::string& line) {
    std::lock_guard lock(send_mu_);
    for (std::size_t off = 0; off < line.size();) {
      const ssize_t n = ::send(fd_, line.data() + off, line.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        throw LaunchError(kExitLauncherFailure, "--proxy-control " + path_.string() + ": send: " + std::strerror(errno));
      off += static_cast<std::size_t>(n);
    }
  }

  // `fds` go with the line's first bytes (SCM_RIGHTS); the proxy duplicates what it keeps.
  // An Act that comes meanwhile (the agent has ended: this is its unregistering) is answered.
  proxy::control::Reply exchange(const proxy::control::Request& req, const std::vector<int>& fds = {}) {
    std::string line = proxy::control::to_line(req);
    if (!fds.empty()) {
      ssize_t n;
      while ((n = send_with_fds(line, fds)) < 0 && errno == EINTR) {
      }
      if (n <= 0)
        throw LaunchError(kExitLauncherFailure, "--proxy-control " + path_.string() + ": send: " + std::strerror(errno));
      line.erase(0, static_cast<std::size_t>(n));
    }
    send_line(line);
    for (;;) {
      auto nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        const std::string reply = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        try {
          auto msg = proxy::control::parse_from_proxy(reply);
          if (auto* answer = std::get_if<proxy::control::Reply>(&msg)) return std::move(*answer);
          dispatch(msg, true);
          continue;
        } catch (const proxy::control::ProtocolError& e) {
          throw LaunchError(kExitLauncherFailure,
                            "--proxy-control " + path_.string() + ": unreadable answer (" + e.what() + ")");
        }
      }
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        throw LaunchError(kExitLauncherFailure, "--proxy-control " + path_.string() + ": the proxy closed the connection" +
                                                    (n < 0 ? std::string(": ") + std::strerror(errno) : ""));
      buffer_.append(buf, static_cast<std::size_t>(n));
      if (buffer_.size() > proxy::control::kMaxLine)
        throw LaunchError(kExitLauncherFailure, "--proxy-control " + path_.string() + ": an answer longer than " +
                                                    std::to_string(proxy::control::kMaxLine) + " bytes");
    }
  }

  ssize_t send_with_fds(const std::string& line, const std::vector<int>& fds) {
    std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
    iovec iov{const_cast<char*>(line.data()), line.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    return ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
  }

  std::filesystem::path path_;
  std::string key_;  // registered by sockets: what the proxy keys the agent by
  bool registered_ = false;  // the proxy took the registration (detach then unregisters)
  int fd_ = -1;
  std::string buffer_;
  AgentIdentity agent_;
  int stop_[2] = {-1, -1};  // written by detach: the reader stops
  std::thread watcher_;
  std::mutex send_mu_;
  // The launch's terminal (--ask), null when it does not ask there; asks_ is its listener.
  std::unique_ptr<AskPrompt> prompt_;
  proxy::AskListener asks_;
  std::mutex answer_mu_;
  std::optional<std::promise<proxy::control::Reply>> answer_waiting_;  // the prompt's answer, awaiting its reply
  bool answers_closed_ = false;
  std::string answers_closed_why_;
};

}  // namespace

std::unique_ptr<ProxyLink> make_control_client(std::filesystem::path control_socket, std::unique_ptr<AskPrompt> prompt) {
  return std::make_unique<ControlClient>(std::move(control_socket), std::move(prompt));
}

RunningProxyFiles running_proxy_files(const std::filesystem::path& control_socket) {
  return ControlClient(control_socket).files();
}

}  // namespace netbox::launcher
