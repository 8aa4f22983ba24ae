#include "agents/control_socket.hpp"

#include "runtime/policy_source.hpp"
#include "pipeline/accept_loop.hpp"

#include "netbox/proxy/approval_ops.hpp"
#include "netbox/proxy/control_protocol.hpp"
#include "netbox/proxy/endpoint.hpp"

#include "inspect/inspector.hpp"
#include "base/proxy_runtime.hpp"
#include "agents/control_registration.hpp"
#include "agents/operator_ops.hpp"
#include "agents/process_table.hpp"
#include "agents/received_fds.hpp"
#include "agents/terminal_asks.hpp"

#include <boost/asio/write.hpp>

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <deque>
#include <future>
#include <limits>
#include <map>
#include <set>

namespace netbox::proxy {

namespace asio = boost::asio;
using stream = asio::local::stream_protocol;

namespace {

// How long the proxy waits for a launcher to answer an Act: a kill's grace, then up to 5 s
// for the cgroup to empty, with room to spare.
constexpr auto kActWait = std::chrono::seconds(20);


class ControlSession : public std::enable_shared_from_this<ControlSession> {
 public:
  ControlSession(ProxyRuntime& impl, stream::socket s, uid_t owner, bool operator_only)
      : impl_(impl), socket_(std::move(s)), owner_(owner), operator_only_(operator_only),
        peer_(peer_uid(socket_.native_handle())), peer_pid_(peer_pid(socket_.native_handle())) {}
  ~ControlSession() {
    // A launcher that dies without saying goodbye leaves nothing attached.
    for (auto& [addr, agent] : attached_) {
      impl_.guardians.delist(agent.name, enlisted_[addr]);
      impl_.detach_agent(agent, {});
    }
    for (auto& [id, promise] : acts_) promise->set_value({id, false, "the launcher's control connection closed"});
  }
  void start() { read(); }

 private:
  // Lines are read with recvmsg(2), not asio's reads: a registration by sockets brings its
  // descriptors (SCM_RIGHTS), which belong to the line they came with.
  void read() {
    if (const auto nl = in_.find('\n'); nl != std::string::npos) return on_line(nl + 1);
    if (in_.size() >= control::kMaxLine)  // kMaxLine bytes and no end of line: answered, then closed
      return send(control::Reply::refused("the line is longer than " + std::to_string(control::kMaxLine) +
                                          " bytes; closing the connection"),
                  false);
    socket_.async_wait(stream::socket::wait_read, [self = shared_from_this()](boost::system::error_code ec) {
      if (!ec) self->on_readable();
    });
  }

  void on_readable() {
    char buf[8192];
    const std::size_t room = std::min(sizeof buf, control::kMaxLine - in_.size());
    const ssize_t n = fds_.receive(socket_.native_handle(), buf, room, control::kMaxFds);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return read();
    if (n <= 0) return;  // closed: the destructor detaches
    in_.append(buf, static_cast<std::size_t>(n));
    read();
  }

  void on_line(std::size_t n) {
    const std::string line = in_.substr(0, n);
    in_.erase(0, n);
    if (is_approval_op(line)) {  // pending, approve, deny: control_approvals.cpp
      fds_.clear();
      return send_text(approval_op(desk(), line, grantor()), true);
    }
    auto reply = answer(line);
    fds_.clear();  // what came with the line and no agent took: closed here
    if (reply) send(*reply, true);
    else read();  // answered later (an operator op), or nothing to answer (acted)
  }

  // Replies, operator answers and Acts share the connection: written in turn, in order.
  void send(const control::Reply& reply, bool read_on) { send_text(control::to_line(reply), read_on); }
  void send_text(std::string line, bool read_on) {
    write(std::move(line));
    if (!read_on) return;
    // A client that sends lines and never reads its answers: its next line is read once
    // they drained (write_front), so it cannot make the proxy hold its answers for it.
    if (out_bytes_ >= kPauseReadingAbove) reading_paused_ = true;
    else read();
  }

  // Who may answer questions (approval_ops.hpp): the peer with this proxy's uid, or root.
  // The socket's mode already keeps others out; this holds if its folder or mode is loosened.
  std::string grantor() {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(socket_.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return {};
    if (cred.uid != 0 && cred.uid != ::geteuid()) return {};
    return "uid " + std::to_string(cred.uid) + " (control socket)";
  }

  ApprovalDesk desk() const {
    auto& book = impl_.approvals;
    return {[&book] { return book.pending(); },
            [&book](const AskTarget& t, const AskAnswer& a) { return book.answer(t, a); }};
  }

  void write(std::string line) {
    if (!socket_.is_open()) return;
    // Pushes (a launch's questions) come whether or not the client reads: past the bound it
    // is closed, which detaches its agents, rather than the proxy's memory growing for it.
    // One line alone is always sent (a `pending` of a busy proxy may be large).
    if (!out_.empty() && out_bytes_ + line.size() > kMaxUnsent) {
      boost::system::error_code ec;
      socket_.close(ec);
      return;
    }
    out_bytes_ += line.size();
    out_.push_back(std::move(line));
    if (out_.size() == 1) write_front();
  }

  void write_front() {
    asio::async_write(socket_, asio::buffer(out_.front()), [self = shared_from_this()](boost::system::error_code e,
                                                                                       std::size_t) {
      if (e) return;
      self->out_bytes_ -= self->out_.front().size();
      self->out_.pop_front();
      if (!self->out_.empty()) self->write_front();
      if (self->reading_paused_ && self->out_bytes_ < kPauseReadingAbove) {
        self->reading_paused_ = false;
        self->read();
      }
    });
  }

  // Nullopt: no answer now.
  std::optional<control::Reply> answer(std::string_view line) {
    try {
      const auto request = control::parse_request(line);
      if (auto why = descriptors_problem(request, fds_); !why.empty()) return control::Reply::refused(why);
      if (operator_only_ && !std::holds_alternative<control::Operator>(request) &&
          !std::holds_alternative<control::Ping>(request))
        return control::Reply::refused("this is a launch's operator socket: it answers the operator ops (" +
                                       operator_op_names() + ") and ping only");
      return std::visit([this](const auto& r) -> std::optional<control::Reply> { return handle(r); }, request);
    } catch (const std::exception& e) {
      return control::Reply::refused(e.what());
    }
  }

  static std::string operator_op_names() {
    std::string out;
    for (auto op : control::operator_ops()) out += (out.empty() ? "" : ", ") + std::string(op);
    return out;
  }

  // An operator op, from the socket owner's uid or root only (SO_PEERCRED): its handler
  // answers when it is done (a kill takes seconds), posted back to this connection.
  std::optional<control::Reply> handle(const control::Operator& op) {
    if (!may_operate(peer_, owner_))
      return control::Reply::refused("operator op \"" + op.op + "\" refused: uid " + std::to_string(peer_) +
                                     " is neither this socket's owner (uid " + std::to_string(owner_) + ") nor root");
    const auto handler = operator_handler(op.op);
    if (!handler) return control::Reply::refused("operator op \"" + op.op + "\" is not served by this proxy");
    auto self = shared_from_this();
    handler(impl_, OperatorCall{op, peer_, [self](control::Reply r) {
                                  asio::post(self->socket_.get_executor(),
                                             [self, r = std::move(r)] { self->write(control::to_line(r)); });
                                }});
    return std::nullopt;
  }

  // A launcher's answer to an Act of ours: the enforcer waiting for it gets it.
  std::optional<control::Reply> handle(const control::Acted& acted) {
    if (auto it = acts_.find(acted.id); it != acts_.end()) {
      it->second->set_value(acted);
      acts_.erase(it);
    }
    return std::nullopt;
  }

  // The hand of a launcher registered here on its agent (issue 25): an Act line on this
  // connection, and its answer awaited on the caller's (the guardian's) thread.
  GuardianEnforcer launcher_hand() {
    std::weak_ptr<ControlSession> weak = weak_from_this();
    return [weak](std::string_view action, const std::string& why) -> std::string {
      auto promise = std::make_shared<std::promise<control::Acted>>();
      auto answered = promise->get_future();
      {
        auto self = weak.lock();
        if (!self) throw std::runtime_error("the launcher's control connection is closed");
        asio::post(self->socket_.get_executor(), [self, promise, act = control::Act{0, std::string(action), why}]() mutable {
          act.id = ++self->last_act_;
          self->acts_[act.id] = promise;
          self->write(control::to_line(act));
        });
      }
      if (answered.wait_for(kActWait) != std::future_status::ready)
        throw std::runtime_error("the launcher did not answer within " + std::to_string(kActWait.count()) + " s");
      auto acted = answered.get();
      if (!acted.ok) throw std::runtime_error(acted.result);
      return acted.result;
    };
  }

  // A launch's terminal answering its own agent's question (terminal_asks.hpp).
  std::optional<control::Reply> handle(const control::Answer& a) {
    if (!may_operate(peer_, owner_))  // as for approve and deny: the socket's mode may be loosened
      return control::Reply::refused("answer refused: uid " + std::to_string(peer_) + " is neither this socket's owner (uid " +
                                     std::to_string(owner_) + ") nor root");
    std::set<std::string> own;
    for (const auto& [addr, agent] : attached_) own.insert(agent.name);
    return answer_from_terminal(impl_.approvals, a, own, peer_);
  }

  // A launch that asks on its own terminal is pushed its agent's questions on this connection.
  void listen_for_terminal(AgentAttachment& a) {
    if (!a.ask || !a.ask->terminal) return;
    std::weak_ptr<ControlSession> weak = weak_from_this();
    a.ask_listener = terminal_listener([weak](std::string line) {
      if (auto self = weak.lock())
        asio::post(self->socket_.get_executor(), [self, line = std::move(line)]() mutable { self->write(std::move(line)); });
    });
  }

  // A launched agent (its registration names its launch) is enlisted with its launcher's hand.
  void enlist(const control::Register& r, const AgentAttachment& a, const asio::ip::address& key) {
    if (!r.launch) return;
    AgentAttachment with_hand = a;
    with_hand.enforcer = launcher_hand();
    enlisted_[key] = impl_.guardians.enlist(a.name, agent_card(with_hand));
  }

  control::Reply handle(const control::Ping&) { return {}; }

  // What the launcher hides from the agents it registers: this proxy's own files.
  control::Reply handle(const control::Info&) {
    control::Reply reply;
    reply.audit_db = std::filesystem::absolute(impl_.options.audit_db).string();
    // A database source is no file the launcher could read (docs/fleet.md).
    if (!impl_.options.policy_file.empty() && !is_database_source(impl_.options.policy_file))
      reply.policy_file = std::filesystem::absolute(impl_.options.policy_file).string();
    // Public: the launcher shows it to the agent, which then trusts the inspected hosts.
    if (impl_.inspector) reply.ca_pem = impl_.inspector->ca_certificate_pem();
    return reply;
  }

  control::Reply handle(const control::Register& r) {
    if (r.sockets) return register_sockets(r);
    AgentAttachment a;
    if (auto why = read_attachment(r, a); !why.empty()) return control::Reply::refused(why);
    // The row names the launch's pid as the agent's: by address too, only one the client started.
    if (auto why = init_problem(r, peer_pid_); !why.empty()) return control::Reply::refused(why);
    listen_for_terminal(a);
    // Registering an address again replaces its earlier registration; a listener that
    // one added and this one names again is kept, not closed and bound again.
    std::optional<AttachedAgent> previous;
    if (auto it = attached_.find(a.addr); it != attached_.end()) {
      previous = it->second;
      attached_.erase(it);
    }
    const bool keep_listener =
        previous && previous->listener_added && a.listen && previous->listener == a.listen;
    const bool keep_socks = previous && previous->socks_listener_added && a.socks_listen &&
                            previous->socks_listener == a.socks_listen;
    if (previous) {
      impl_.guardians.delist(previous->name, enlisted_[a.addr]);
      auto undo = *previous;
      undo.listener_added = undo.listener_added && !keep_listener;
      undo.socks_listener_added = undo.socks_listener_added && !keep_socks;
      impl_.detach_agent(undo, {});
    }
    try {
      auto got = impl_.attach_agent(a);
      got.listener_added = got.listener_added || keep_listener;
      got.socks_listener_added = got.socks_listener_added || keep_socks;
      auto reply = reply_of(got);
      attached_[a.addr] = std::move(got);
      enlist(r, a, a.addr);
      return reply;
    } catch (const std::exception& e) {
      if (keep_listener) impl_.remove_listener(*previous->listener);
      if (keep_socks) impl_.remove_listener(*previous->socks_listener);
      return control::Reply::refused(e.what());
    }
  }

  // The agent known by the sockets that came with the line (descriptors_problem counted
  // them); attach_agent checks each (type, listening, family, its own namespace) and keeps
  // duplicates, so what came is closed after the answer whatever it was.
  control::Reply register_sockets(const control::Register& r) {
    if (auto why = init_problem(r, peer_pid_); !why.empty()) return control::Reply::refused(why);
    AgentAttachment a;
    if (auto why = read_socket_attachment(r, fds_.fds(), a); !why.empty()) return control::Reply::refused(why);
    listen_for_terminal(a);
    try {
      auto got = impl_.attach_agent(a);
      control::Reply reply;
      reply.addr = got.addr.to_string();
      if (got.dns_pool) reply.dns_pool = got.dns_pool->to_string();
      if (got.dns_pool6) reply.dns_pool6 = got.dns_pool6->to_string();
      const auto key = got.addr;
      attached_[key] = std::move(got);
      enlist(r, a, key);
      return reply;
    } catch (const std::exception& e) {
      return control::Reply::refused(e.what());
    }
  }

  control::Reply handle(const control::Unregister& u) {
    asio::ip::address addr;
    if (auto why = address_problem(u.addr, addr); !why.empty()) return control::Reply::refused(why);
    auto it = attached_.find(addr);
    if (it == attached_.end()) return control::Reply::refused(u.addr + " is not registered on this connection");
    impl_.guardians.delist(it->second.name, enlisted_[addr]);
    enlisted_.erase(addr);
    impl_.detach_agent(it->second, AgentEnd{u.exit_status, u.resource_usage});
    attached_.erase(it);
    return {};
  }

  ProxyRuntime& impl_;
  stream::socket socket_;
  std::string in_;
  ReceivedFds fds_;  // what came with the lines not yet answered
  std::deque<std::string> out_;  // lines being written, the front one first
  std::size_t out_bytes_ = 0;    // their size
  bool reading_paused_ = false;  // until out_ drains below kPauseReadingAbove
  static constexpr std::size_t kPauseReadingAbove = 64 * 1024;
  static constexpr std::size_t kMaxUnsent = 1024 * 1024;
  std::map<asio::ip::address, AttachedAgent> attached_;
  std::map<asio::ip::address, std::uint64_t> enlisted_;  // the serial of each one's card (Guardians::enlist)
  uid_t owner_;        // the proxy's user, who made the socket
  bool operator_only_;
  uid_t peer_;         // SO_PEERCRED, at connect
  pid_t peer_pid_;     // likewise
  std::uint64_t last_act_ = 0;
  std::map<std::uint64_t, std::shared_ptr<std::promise<control::Acted>>> acts_;  // Acts awaiting their answer
};

}  // namespace

ControlServer::ControlServer(ProxyRuntime& impl, asio::io_context& ioc, std::filesystem::path path,
                             bool operator_only)
    : impl_(impl), path_(std::move(path)), operator_only_(operator_only), acceptor_(ioc) {
  std::error_code fec;
  if (std::filesystem::is_socket(path_, fec)) std::filesystem::remove(path_, fec);
  boost::system::error_code ec;
  acceptor_.open(stream(), ec);
  if (!ec) acceptor_.bind(stream::endpoint(path_.string()), ec);
  if (ec) throw std::runtime_error("--control " + path_.string() + ": cannot bind: " + ec.message());
  // Only the proxy's own user may register agents: chmod before listen, so nobody
  // can connect in between.
  if (::chmod(path_.c_str(), 0600) != 0)
    throw std::runtime_error("--control " + path_.string() + ": cannot set mode 0600");
  acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw std::runtime_error("--control " + path_.string() + ": cannot listen: " + ec.message());
}

ControlServer::~ControlServer() {
  std::error_code fec;
  std::filesystem::remove(path_, fec);
}

void ControlServer::start() { accept(); }

void ControlServer::stop() {
  boost::system::error_code ec;
  acceptor_.close(ec);
}

// Out of descriptors, the loop pauses and accepts again (it used to stop for good, leaving
// launchers unable to register until the proxy restarted).
void ControlServer::accept() {
  accept_with_backoff(impl_, acceptor_, "control", this,
                      [this](stream::socket s) {
                        std::make_shared<ControlSession>(impl_, std::move(s), ::geteuid(), operator_only_)->start();
                      });
}

}  // namespace netbox::proxy
