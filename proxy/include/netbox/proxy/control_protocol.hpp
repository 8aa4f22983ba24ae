#pragma once
// The messages of the control socket (`netbox proxy --control PATH`, which
// `netbox launch --proxy-control PATH` talks to): one JSON object per line each way.
// Both ends read and write them through these types only, so the wire form is spelled
// once, here and in docs/proxy.md ("Control socket").
#include "netbox/proxy/agent_attachment.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace netbox::proxy::control {

// A request line longer than this is refused and the connection closed.
inline constexpr std::size_t kMaxLine = 64 * 1024;
// At most this many descriptors (SCM_RIGHTS) come with one request: an agent's HTTP and
// SOCKS5 listeners, capture listeners (each on 127.0.0.1 and ::1) and two DNS sockets are 8.
// More is refused, and the kernel closes what did not fit.
inline constexpr std::size_t kMaxFds = 16;

struct Ping {};
// Which files of its own the proxy keeps (its policy and audit store), so a launcher can
// hide them from its agents.
struct Info {};

struct Register {
  std::string addr;     // the agent's client address (none with `sockets`)
  std::string agent;    // its name
  std::string profile;  // key of the policy's agents; empty: the top level
  std::string listen;   // ADDR:PORT of a listener for it (the host side of its link); empty: none
  std::optional<AgentLaunch> launch;  // opens its agents row
  std::string socks_listen;  // ADDR:PORT of a SOCKS5 listener for it; empty: none
  // "credentials": [{"name", "placeholder", "secret"}], the secrets of its profile's
  // credentials (docs/inspection.md); absent: none.
  std::vector<CredentialSecret> credentials;
  // CIDR of the agent's synthetic pool: serve it the DNS view on port 53 of the listener's
  // address and capture its TCP connections (--network transparent); empty: neither.
  std::string dns_pool;
  // "ipv6": {"agent", "host", "pool"}: IPv6 on the agent's link too (needs dns_pool): its
  // address there, the host side's (a second capture listener listens on it) and the
  // pool its AAAA answers come from (AgentAttachment::ipv6). Absent: IPv4 only.
  struct Ipv6 {
    std::string agent, host, pool;
  };
  std::optional<Ipv6> ipv6;
  // "sockets": {"http": N, "socks": N, "capture": N, "dns": true, "diag": true}: the agent
  // is known by listening sockets its launcher made inside its network namespace, sent with
  // this line as SCM_RIGHTS descriptors in that order (http, socks, capture, then DNS over
  // UDP and TCP, then its NETLINK_SOCK_DIAG socket, AgentSockets::diag); `addr`, `listen`,
  // `socks_listen` and `ipv6` are then not used. Absent: by address.
  struct Sockets {
    int http = 0, socks = 0, capture = 0;
    bool dns = false;
    bool diag = false;
    std::size_t count() const {
      return static_cast<std::size_t>(http) + static_cast<std::size_t>(socks) + static_cast<std::size_t>(capture) +
             (dns ? 2 : 0) + (diag ? 1 : 0);
    }
  };
  std::optional<Sockets> sockets;
  std::string dns_pool6;  // with sockets and dns_pool: the synthetic IPv6 pool (AAAA answers); empty: none
  // "ask": {"timeout_ms": N, "terminal": true}: netbox launch --ask (AgentAttachment::ask);
  // "terminal": the launcher asks on its own terminal, so the proxy pushes it each question
  // (Asked) and answers its Answer. Absent: refused at once.
  std::optional<AskSettings> ask;
};

struct Unregister {
  std::string addr;
  std::optional<int> exit_status;
  std::string resource_usage;  // a JSON object as text; empty: none
};

// An operator's request (`netbox agent`, docs/proxy.md "Operator ops"): only a peer with
// the socket owner's uid, or root, may send one. `op` is one of operator_ops(); what each
// does is the proxy's table (agents/operator_ops.hpp).
struct Operator {
  std::string op;
  std::string agent;  // the agent acted on; empty for list
  std::string args;   // the line's whole object as text, for an op with fields of its own
};

// A launcher's answer to an Act the proxy sent it on its registration connection.
struct Acted {
  std::uint64_t id = 0;
  bool ok = false;
  std::string result;  // what it did, or why it could not
};

// A launch's terminal answering a question of the agent registered on this connection
// (pushed to it as an Asked): {"op":"answer","id":N,"approve":true,"scope":"once","user":"alice"}.
// A question of any other agent is refused.
struct Answer {
  std::uint64_t id = 0;
  bool approve = false;
  AskScope scope = AskScope::once;
  std::string user;  // who sits at the launch's terminal (named in the grantor)
};

using Request = std::variant<Ping, Info, Register, Unregister, Operator, Acted, Answer>;

// The operator ops a proxy knows (list, kill, freeze, resume, and the approval ops).
const std::vector<std::string_view>& operator_ops();

// The answer to any request; the fields after `error` are set by the requests named.
struct Reply {
  bool ok = true;
  std::string error;        // why, when !ok
  std::string listen;       // register: the listener the agent uses (ADDR:PORT); empty: none
  std::string socks_listen;  // register: its SOCKS5 listener (ADDR:PORT); empty: none
  std::string dns;           // register with dns_pool: where its DNS view answers (ADDR:53)
  std::string capture;       // register with dns_pool: where its captured TCP goes (ADDR:PORT)
  std::string capture6;      // register with ipv6: the same on its IPv6 host address ([ADDR]:PORT)
  std::string dns_pool;      // register with dns_pool: the pool it got (another agent's: the next free one)
  std::string dns_pool6;     // register with ipv6 or dns_pool6: likewise its IPv6 pool
  std::string addr;          // register with sockets: the key the agent is attached under (unregister names it)
  std::string policy_file;  // info: absolute; empty when the proxy has no policy file
  std::string audit_db;     // info: absolute
  std::string ca_pem;       // info: the CA certificate (PEM) the proxy inspects with; empty: it does not
  std::string result;       // kill, freeze, resume: what was done (kill: ok only once the agent is gone)
  std::string agents;       // list: a JSON array of the attached agents, as text

  static Reply refused(std::string why) {
    Reply r;
    r.ok = false;
    r.error = std::move(why);
    return r;
  }
};

// Sent by the proxy on a launcher's registration connection, never as an answer: freeze,
// resume or kill the agent registered there (a guardian rule or an operator asked; `why`
// says which). The launcher answers with an Acted of the same id.
struct Act {
  std::uint64_t id = 0;
  std::string action;  // freeze, resume or kill
  std::string why;
};
// Sent by the proxy on the registration connection of an agent registered with
// "ask": {"terminal": true}: a new question of that agent (its launch asks it on its
// terminal, and answers with an Answer of the same id).
//   {"asked":{"id":7,"agent":"a1","host":"h","port":443,"door":"http","expires_ms":N,"scopes":[...]}}
struct Asked {
  PendingAsk question;
};
// ... and the end of one: answered elsewhere (or on the terminal), or not at all.
//   {"settled":{"id":7,"answered":true,"how":"allowed (once) by uid 1000 (control socket)"}}
struct Settled {
  std::uint64_t id = 0;
  bool answered = false;
  std::string how;
};
// What a launcher reads on its registration connection: an answer, an Act, or a question
// and its end.
using FromProxy = std::variant<Reply, Act, Asked, Settled>;

// A line that is not a message of this protocol; what() names the key and what it
// should have been, for the answer to a broken or hostile peer.
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One line (its '\n' removed or not) to a message. Throws ProtocolError.
Request parse_request(std::string_view line);
Reply parse_reply(std::string_view line);
// A message as one line, '\n' included. Never throws for text that is not UTF-8 (it is
// replaced); throws ProtocolError when `sandbox` or `resource_usage` is not a JSON object.
std::string to_line(const Request& request);
std::string to_line(const Reply& reply);
std::string to_line(const Act& act);
std::string to_line(const Asked& asked);
std::string to_line(const Settled& settled);
// A line on a launcher's connection: an Act when it has "act", else a Reply. Throws ProtocolError.
FromProxy parse_from_proxy(std::string_view line);

// The same, as JSON values (nlohmann's ADL hooks); from_json throws ProtocolError.
void to_json(nlohmann::json& j, const Request& request);
void from_json(const nlohmann::json& j, Request& request);
void to_json(nlohmann::json& j, const Reply& reply);
void from_json(const nlohmann::json& j, Reply& reply);

}  // namespace netbox::proxy::control
