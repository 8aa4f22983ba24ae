#include "agents/control_registration.hpp"

#include "agents/process_table.hpp"

#include "netbox/proxy/endpoint.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <limits>

namespace netbox::proxy {

namespace asio = boost::asio;

std::string address_problem(const std::string& text, boost::asio::ip::address& out) {
  boost::system::error_code ec;
  out = asio::ip::make_address(text, ec);
  return ec ? "\"addr\" is not an IP address: \"" + text + "\"" : std::string();
}

// The uid of the peer of a Unix socket (SO_PEERCRED); -1 when unknown, which operates nothing.
uid_t peer_uid(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return static_cast<uid_t>(-1);
  return cred.uid;
}
// The pid of the peer of a Unix socket (SO_PEERCRED, at connect); 0 when unknown (a peer in
// a PID namespace the proxy does not see).
pid_t peer_pid(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return 0;
  return cred.pid;
}

// Exactly the descriptors a request names may come with it: a registration by sockets
// its count, anything else none. Empty: they match.
std::string descriptors_problem(const control::Request& request, const ReceivedFds& fds) {
  if (fds.overflowed())
    return "more than " + std::to_string(control::kMaxFds) + " descriptors came with the request; none was kept";
  const auto* r = std::get_if<control::Register>(&request);
  const std::size_t wanted = r && r->sockets ? r->sockets->count() : 0;
  if (fds.size() == wanted) return {};
  if (wanted == 0)
    return std::to_string(fds.size()) + " descriptors came with a request that takes none; none was kept";
  return "the registration names " + std::to_string(wanted) + " sockets (\"sockets\"), but " +
         std::to_string(fds.size()) + " descriptors came with it";
}

// The attachment a registration by address asks for; empty, or what is wrong with it.
std::string read_attachment(const control::Register& r, AgentAttachment& a) {
  if (auto why = address_problem(r.addr, a.addr); !why.empty()) return why;
  a.name = r.agent;
  a.profile = r.profile;
  a.credentials = r.credentials;
  a.launch = r.launch;
  a.ask = r.ask;
  try {
    if (!r.listen.empty()) a.listen = parse_endpoint(r.listen);
  } catch (const std::invalid_argument& e) {
    return std::string("\"listen\" ") + e.what();
  }
  try {
    if (!r.socks_listen.empty()) a.socks_listen = parse_endpoint(r.socks_listen);
  } catch (const std::invalid_argument& e) {
    return std::string("\"socks_listen\" ") + e.what();
  }
  if (!r.dns_pool.empty()) {
    a.dns_pool = policy::Cidr::parse(r.dns_pool);
    if (!a.dns_pool) return "\"dns_pool\" is not a network such as 198.18.4.0/22: \"" + r.dns_pool + "\"";
  }
  if (!r.ipv6) return {};
  boost::system::error_code agent_ec, host_ec;
  const auto agent6 = asio::ip::make_address(r.ipv6->agent, agent_ec);
  const auto host6 = asio::ip::make_address(r.ipv6->host, host_ec);
  const auto pool6 = policy::Cidr::parse(r.ipv6->pool);
  if (agent_ec || !agent6.is_v6()) return "\"ipv6\" \"agent\" is not an IPv6 address: \"" + r.ipv6->agent + "\"";
  if (host_ec || !host6.is_v6()) return "\"ipv6\" \"host\" is not an IPv6 address: \"" + r.ipv6->host + "\"";
  if (!pool6 || !pool6->base.is_v6())
    return "\"ipv6\" \"pool\" is not an IPv6 network such as 2001:2:0:1::/64: \"" + r.ipv6->pool + "\"";
  a.ipv6 = AgentAttachment::Ipv6Link{agent6, host6, *pool6};
  return {};
}

// What the launcher is told of an attached agent: where its listeners and views are.
control::Reply reply_of(const AttachedAgent& got) {
  control::Reply reply;
  if (got.listener) reply.listen = endpoint_text(*got.listener);
  if (got.socks_listener) reply.socks_listen = endpoint_text(*got.socks_listener);
  if (got.transparent) {
    reply.dns = endpoint_text({got.listener->address(), 53});
    reply.capture = endpoint_text(*got.transparent);
    if (got.transparent6) reply.capture6 = endpoint_text(*got.transparent6);
    if (got.dns_pool) reply.dns_pool = got.dns_pool->to_string();
    if (got.dns_pool6) reply.dns_pool6 = got.dns_pool6->to_string();
  }
  return reply;
}

// The attachment a registration by sockets asks for, its descriptors taken from `fds` in
// the order the registration counts them (descriptors_problem checked the count); empty,
// or what is wrong with it.
std::string read_socket_attachment(const control::Register& r, const std::vector<int>& fds, AgentAttachment& a) {
  a.name = r.agent;
  a.profile = r.profile;
  a.credentials = r.credentials;
  a.launch = r.launch;
  a.ask = r.ask;
  if (r.sockets->dns == r.dns_pool.empty())
    return "\"sockets\" \"dns\" and \"dns_pool\" go together: the DNS view's sockets serve its pool";
  if (!r.dns_pool.empty() && !(a.dns_pool = policy::Cidr::parse(r.dns_pool)))
    return "\"dns_pool\" is not a network such as 198.18.4.0/22: \"" + r.dns_pool + "\"";
  if (!r.dns_pool6.empty() && !((a.dns_pool6 = policy::Cidr::parse(r.dns_pool6)) && a.dns_pool6->base.is_v6()))
    return "\"dns_pool6\" is not an IPv6 network such as 2001:2:0:1::/80: \"" + r.dns_pool6 + "\"";
  AgentSockets s;
  std::size_t i = 0;
  for (auto [list, n] : {std::pair{&s.http, r.sockets->http}, std::pair{&s.socks, r.sockets->socks},
                         std::pair{&s.capture, r.sockets->capture}})
    for (int k = 0; k < n; ++k) list->push_back(fds[i++]);
  if (r.sockets->dns) {
    s.dns_udp = fds[i];
    s.dns_tcp = fds[i + 1];
    i += 2;
  }
  if (r.sockets->diag) s.diag = fds[i];
  a.sockets = std::move(s);
  return {};
}

// The launch's pid is the init of the agent's PID namespace: the processes below it are
// taken for the agent's (attribution.hpp) and its row names it. Only the client's own
// launch may be named: a process it started (SO_PEERCRED's pid, at connect), not the
// proxy or any other process on the host.
std::string init_problem(const control::Register& r, pid_t peer) {
  if (!r.launch || r.launch->pid == 0) return {};
  const auto pid = r.launch->pid;
  if (peer <= 0)
    return "\"launch\" \"pid\" " + std::to_string(pid) +
           " cannot be checked: the registering client's pid is unknown here (another PID namespace)";
  if (pid == ::getpid())  // a client the proxy started is still not the proxy
    return "\"launch\" \"pid\" " + std::to_string(pid) + " is this proxy: only the client's own launch's init may be named";
  if (pid < 0 || pid > std::numeric_limits<pid_t>::max() || !descends_from(static_cast<pid_t>(pid), peer))
    return "\"launch\" \"pid\" " + std::to_string(pid) +
           " is not a process the registering client (pid " + std::to_string(peer) +
           ") started: only its own launch's init may be named";
  return {};
}

}  // namespace netbox::proxy
