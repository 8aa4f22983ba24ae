// One door-conformance suite (issue 23, item 6): the same table of cases through every
// front door of the proxy (HTTP forward, CONNECT, SOCKS5, a captured connection, an
// inspected CONNECT), each expecting the same outcome, rule, reason and audit row (read
// back from the SQLite store). A door that answers differently from the others is a bug
// of that door, not a line of its own in this file: the few differences that are by
// design are written next to the case, with why.
//
// Everything runs as the agent would from inside `netbox launch`: its connections come
// from its own address (kAgent) to its listeners on the host side of its "link" (kHost),
// and its captured connections are DNATed to the capture listener by nftables, as the
// launcher's rules do, so the proxy reads their original destination from conntrack. To
// do that without `netbox launch` (and without touching the machine's own rules), the test
// process moves to a network namespace of its own before the proxy starts: only its
// loopback exists there, so no decision, right or wrong, can send a byte anywhere else.
#include "credentials_fixture.hpp"

#include "netbox/audit/writer.hpp"
#include "netbox/proxy/counters.hpp"
#include "support/process.hpp"
#include "support/websocket_frames.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace netbox::test {
namespace {

namespace ip = boost::asio::ip;

// The namespace is the test process's own: fixed addresses cannot collide with another test.
constexpr const char* kHost = "127.0.0.2";   // the host side of the agent's link: its listeners
constexpr const char* kAgent = "127.0.0.3";  // the agent
constexpr const char* kPool = "198.18.0.0/15";
constexpr const char* kDenied = "127.0.0.7";    // the policy's deny list names it
constexpr const char* kInternal = "127.0.0.8";  // loopback, not in internal.allow
constexpr std::uint16_t kClosedPort = 9;        // not in the policy's ports
constexpr std::uint16_t kRefusingPort = 10;     // in the policy's ports, nothing listens on it

enum class Door { http_forward, connect, socks5, captured, inspected };

const char* name_of(Door d) {
  switch (d) {
    case Door::http_forward: return "HttpForward";
    case Door::connect: return "Connect";
    case Door::socks5: return "Socks5";
    case Door::captured: return "Captured";
    case Door::inspected: return "Inspected";
  }
  return "?";
}

// How a case is set up around its attempt.
enum class Setup { none, cap_held, store_blocked, out_of_descriptors, queue_full };

struct Case {
  const char* name;
  std::string host{};         // what the agent asks for
  // What it asks the inspected door for instead, when the request must reach the TLS
  // upstream (whose certificate is for upstream.test only).
  std::string inspected_host{};
  bool closed_port = false;   // a port the policy does not list, instead of the door's own
  bool refusing_port = false; // a port the policy lists where the upstream refuses connections
  std::string path = "/ok";
  std::string headers{};      // extra request headers
  std::string server_name{};  // a TLS hello naming this instead of a request (fronting)
  Setup setup = Setup::none;
  bool report_mode = false;   // the policy's mode is report: what enforce would refuse goes, reported
  bool websocket = false;     // the request is a WebSocket handshake; once answered 101, a message is echoed
  // The expected answer. Empty decision: let through to the upstream, every row `allow`.
  // Otherwise one of the attempt's rows has this decision, a rule starting with `rule` and
  // a reason holding `reason`; the upstream gets nothing. (store_blocked: see the test.)
  std::string decision{};
  std::string rule{};
  std::string reason{};
  int status = 0;                   // the refusing row's status (0: not checked, for a report)
  int socks_reply = -1;             // the SOCKS5 reply expected, when not the refusal's usual one
  std::vector<Door> not_through{};  // doors the case cannot be put to (why: at the case)
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }
void PrintTo(Door d, std::ostream* os) { *os << name_of(d); }

std::vector<Case> cases() {
  const std::string placeholder = std::string("Authorization: Bearer ") + kPlaceholder + "\r\n";
  return {
      {.name = "Allowed", .host = "upstream.test"},
      {.name = "DeniedByHost", .host = kDenied, .decision = "deny", .rule = "deny[0] 127.0.0.7", .reason = "127.0.0.7",
       .status = 403},
      {.name = "DeniedByPort", .host = "upstream.test", .closed_port = true, .decision = "deny", .rule = "ports",
       .reason = "port 9", .status = 403},
      {.name = "InternalAddress", .host = kInternal, .decision = "deny", .rule = "internal", .reason = "127.0.0.8",
       .status = 403},
      {.name = "CapReached", .host = "upstream.test", .setup = Setup::cap_held, .decision = "cap",
       .rule = "limits.max_connections_per_host", .reason = "upstream.test", .status = 429},
      // A CONNECT (blind) tunnel to a host `rules` name is refused as a whole, with the
      // same decision and rule; the other doors see the request and refuse it.
      {.name = "RuleRefusal", .host = "ruled.test", .path = "/no", .decision = "deny", .rule = "rules",
       .reason = "ruled.test", .status = 403},
      // A forward request names its host once, in its target: there is no second name to front with.
      {.name = "FrontingRefused", .host = "upstream.test", .server_name = "evil.test", .decision = "deny",
       .rule = "sni", .reason = "evil.test, not upstream.test", .status = 403, .not_through = {Door::http_forward}},
      // A blind CONNECT tunnel's bytes are relayed unread: no request in it is ever checked
      // (its host is allowed, and holds no credential: the placeholder is worthless there).
      {.name = "Tripwire", .host = "upstream.test", .headers = placeholder, .decision = "deny",
       .rule = "credentials.openai", .reason = "upstream.test", .status = 403, .not_through = {Door::connect}},
      // Report mode: what `rules` would refuse goes through, and the row says what enforce
      // would have done; a CONNECT (blind) tunnel is reported as a whole (as above).
      {.name = "ReportedRuleRefusal", .host = "ruled.test", .inspected_host = "upstream.test", .path = "/no",
       .report_mode = true, .decision = "report", .rule = "rules", .reason = "rules"},
      // Bytes that are not HTTP (here TLS) in a tunnel to a host `rules` name cannot be
      // checked: reported on every door that tunnels blindly (the SOCKS5 and captured doors
      // once let them through as a plain allow). The forward door has no tunnel, and the
      // inspected one reads the requests inside.
      {.name = "ReportedBlindTunnel", .host = "ruled.test", .server_name = "ruled.test", .report_mode = true,
       .decision = "report", .rule = "rules", .reason = "does not inspect",
       .not_through = {Door::http_forward, Door::inspected}},
      // Admitted, but the upstream refuses the connection: 502 where netbox answers in
      // HTTP, "connection refused" (5) in SOCKS5, the row `error` 502 on every door. The
      // inspected door inspects its TLS port only: to this port it is a CONNECT.
      {.name = "UpstreamRefuses", .host = "upstream.test", .refusing_port = true, .decision = "error", .status = 502,
       .socks_reply = 5, .not_through = {Door::inspected}},
      // Refused (503, a SOCKS failure, a reset) and no row: the store takes none.
      {.name = "AuditStoreBlocked", .host = "upstream.test", .setup = Setup::store_blocked},
      {.name = "OutOfDescriptors", .host = "upstream.test", .setup = Setup::out_of_descriptors},
      // Back pressure: with the audit writer's queue full, the door reads nothing of the
      // attempt until there is room, then serves it, and no row is lost (issue 23: one
      // wait where every connection opens, none of a door's own).
      {.name = "AuditQueueFull", .host = "upstream.test", .setup = Setup::queue_full},
      // A WebSocket: decided as any request, and once the upstream answers 101 its frames
      // go both ways, counted in the handshake's row. A blind CONNECT tunnel carries it
      // unread (its row is the tunnel's).
      {.name = "WebSocket", .host = "upstream.test", .websocket = true},
      {.name = "WebSocketRuleRefusal", .host = "ruled.test", .path = "/no", .websocket = true, .decision = "deny",
       .rule = "rules", .reason = "ruled.test", .status = 403},
      {.name = "WebSocketTripwire", .host = "upstream.test", .headers = placeholder, .websocket = true,
       .decision = "deny", .rule = "credentials.openai", .reason = "upstream.test", .status = 403,
       .not_through = {Door::connect}},
      // Any other upgrade is refused with a reason, not stripped into a plain request (a
      // blind CONNECT tunnel cannot see it: the upstream answers it as it likes).
      {.name = "H2cUpgradeRefused", .host = "upstream.test",
       .headers = "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\nConnection: Upgrade, HTTP2-Settings\r\n",
       .decision = "error", .rule = "upgrade", .reason = "netbox relays HTTP/1.1 only", .status = 501,
       .not_through = {Door::connect}},
  };
}

// The test process's own network namespace, with its loopback up and a route for the
// DNS view's synthetic pool (captured connections to it are DNATed before they leave).
// unshare moves the calling thread only: called on the main thread before the fixture
// starts any other (upstreams, the proxy's), which then inherit it.
bool enter_own_network_namespace() {
  static const bool done = [] {
    if (::unshare(CLONE_NEWNET) != 0) return false;
    return run({"ip", "link", "set", "lo", "up"}).exit_code == 0 &&
           run({"ip", "route", "add", kPool, "dev", "lo"}).exit_code == 0;
  }();
  return done;
}

// Every TCP connection from the agent but to the host side of its link goes to its
// capture listener, as the launcher's nftables rules send it.
bool capture_agent_tcp(std::uint16_t capture_port) {
  // Declared, deleted, made anew: a run of several cases in one process keeps one rule.
  const std::string rules = std::string("table ip door_conformance {}\ndelete table ip door_conformance\n"
                                        "table ip door_conformance {\n"
                                        "  chain out { type nat hook output priority -100;\n"
                                        "    ip saddr ") +
                            kAgent + " ip daddr != " + kHost + " meta l4proto tcp dnat to " + kHost + ":" +
                            std::to_string(capture_port) +
                            "; }\n}\n";
  const auto file = std::filesystem::temp_directory_path() / ("door-conformance-" + std::to_string(::getpid()) + ".nft");
  std::ofstream(file) << rules;
  const bool ok = run({"nft", "-f", file.string()}).exit_code == 0;
  std::filesystem::remove(file);
  return ok;
}

sockaddr_in sin_of(const std::string& addr, std::uint16_t port) {
  sockaddr_in s{};
  s.sin_family = AF_INET;
  s.sin_port = htons(port);
  ::inet_pton(AF_INET, addr.c_str(), &s.sin_addr);
  return s;
}

// One connection of the agent's: made from kAgent, every read bounded.
class AgentSocket {
 public:
  AgentSocket() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    auto me = sin_of(kAgent, 0);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&me), sizeof me);
    timeval tv{20, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~AgentSocket() {
    if (tls_) SSL_free(tls_);
    ::close(fd_);
  }
  AgentSocket(const AgentSocket&) = delete;
  AgentSocket& operator=(const AgentSocket&) = delete;

  bool connect(const std::string& addr, std::uint16_t port) {
    auto to = sin_of(addr, port);
    return ::connect(fd_, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0;
  }
  bool write(const std::string& bytes) {
    if (tls_) return SSL_write(tls_, bytes.data(), static_cast<int>(bytes.size())) == static_cast<int>(bytes.size());
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }
  std::string read_exactly(std::size_t n) {
    std::string out(n, '\0');
    std::size_t got = 0;
    while (got < n) {
      const auto r = receive(out.data() + got, n - got);
      if (r <= 0) break;
      got += static_cast<std::size_t>(r);
    }
    out.resize(got);
    return out;
  }
  // Up to the end of a response head (a CONNECT's answer), byte by byte: nothing after it is taken.
  std::string read_head() {
    std::string head;
    char c;
    while (head.find("\r\n\r\n") == std::string::npos && receive(&c, 1) == 1) head.push_back(c);
    return head;
  }
  long receive(char* into, std::size_t n) {
    if (tls_) return SSL_read(tls_, into, static_cast<int>(n));
    return static_cast<long>(::recv(fd_, into, n, 0));
  }
  std::string read_to_end() {
    std::string out;
    char buf[4096];
    for (;;) {
      const auto n = receive(buf, sizeof buf);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
  }
  // A TLS handshake asking for `server_name`, trusting `ca` only. False when it failed.
  bool start_tls(const std::string& server_name, const std::filesystem::path& ca) {
    ctx_.reset(SSL_CTX_new(TLS_client_method()));
    SSL_CTX_load_verify_locations(ctx_.get(), ca.c_str(), nullptr);
    SSL_CTX_set_verify(ctx_.get(), SSL_VERIFY_PEER, nullptr);
    tls_ = SSL_new(ctx_.get());
    SSL_set_fd(tls_, fd_);
    std::string name = server_name;  // SSL_set_tlsext_host_name, without its C cast
    SSL_ctrl(tls_, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, name.data());
    return SSL_connect(tls_) == 1;
  }

 private:
  struct CtxFree {
    void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
  };
  int fd_;
  std::unique_ptr<SSL_CTX, CtxFree> ctx_;
  SSL* tls_ = nullptr;
};

int status_of(const std::string& response) {
  if (response.rfind("HTTP/1.", 0) != 0 || response.size() < 12) return 0;
  return std::atoi(response.substr(9, 3).c_str());
}

// The X-Netbox-Decision header of a response's head (empty: none), names compared lower-case.
std::string decision_header(const std::string& response) {
  std::string head = response.substr(0, response.find("\r\n\r\n"));
  std::string lower = head;
  for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const std::string name = "\r\nx-netbox-decision:";
  const auto at = lower.find(name);
  if (at == std::string::npos) return {};
  auto value = head.substr(at + name.size(), head.find("\r\n", at + 2) - at - name.size());
  value.erase(0, value.find_first_not_of(' '));
  return value;
}

// The A record the agent's DNS view gives `name` (UDP to kHost:53 from kAgent); empty: none.
std::string view_address(const std::string& name) {
  std::string q{"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00", 12};
  for (std::size_t start = 0; start <= name.size();) {
    const auto dot = std::min(name.find('.', start), name.size());
    q.push_back(static_cast<char>(dot - start));
    q += name.substr(start, dot - start);
    start = dot + 1;
  }
  q += std::string("\x00\x00\x01\x00\x01", 5);
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  auto me = sin_of(kAgent, 0);
  auto to = sin_of(kHost, 53);
  ::bind(fd, reinterpret_cast<sockaddr*>(&me), sizeof me);
  ::sendto(fd, q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
  pollfd p{fd, POLLIN, 0};
  std::string answer(1500, '\0');
  std::string out;
  if (::poll(&p, 1, 5000) == 1) {
    const auto n = ::recv(fd, answer.data(), answer.size(), 0);
    // One question, one A record, no OPT: its four bytes end the message.
    if (n >= 16 && (answer[7] != 0 || answer[6] != 0)) {
      char text[INET_ADDRSTRLEN];
      ::inet_ntop(AF_INET, answer.data() + n - 4, text, sizeof text);
      out = text;
    }
  }
  ::close(fd);
  return out;
}

// The process's descriptors used up, as a proxy under attack would have them, until release().
class DescriptorsUsedUp {
 public:
  DescriptorsUsedUp() {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    int highest = 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd"))
      highest = std::max(highest, std::atoi(e.path().filename().c_str()));
    rlimit low = saved_;
    low.rlim_cur = static_cast<rlim_t>(highest + 16);
    ::setrlimit(RLIMIT_NOFILE, &low);
    for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) held_.push_back(fd);
    used_up_ = errno == EMFILE;
  }
  ~DescriptorsUsedUp() { release(); }
  void release() {
    for (int fd : held_) ::close(fd);
    held_.clear();
    ::setrlimit(RLIMIT_NOFILE, &saved_);
  }
  bool used_up() const { return used_up_; }

 private:
  rlimit saved_{};
  bool used_up_ = false;
  std::vector<int> held_;
};

bool eventually(const std::function<bool()>& pred) {
  for (int i = 0; i < 800; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return false;
}

class DoorConformance : public CredentialsFixture, public ::testing::WithParamInterface<std::tuple<Door, Case>> {
 protected:
  static void SetUpTestSuite() { enter_own_network_namespace(); }

  void SetUp() override {
    ASSERT_TRUE(enter_own_network_namespace()) << "no network namespace of the test's own (root is needed)";
    const auto& c = std::get<1>(GetParam());
    if (c.setup == Setup::store_blocked) audit_hold = 1;
    if (c.setup == Setup::queue_full)
      tune = [](proxy::ProxyOptions& o) {
        o.audit_queue = 4;
        // Room for the fillers below, which ask for room at once and then each make a row
        // (has_room() lets every asker overshoot by one); not for a door that would not wait.
        o.audit_overflow = 32;
        o.audit_fold_refusals = false;
      };
    auto j = nlohmann::json::parse(base_policy());
    j["allow"] = {"upstream.test", "ruled.test", "cred.test", kDenied};
    j["deny"] = {kDenied};
    j["internal"]["allow"] = {"127.0.0.1/32", std::string(kDenied) + "/32"};
    for (const char* name : {"ruled.test", "cred.test"}) j["resolve"][name] = {"127.0.0.1"};
    j["ports"] = {tls_upstream.port(), upstream.port(), kRefusingPort};
    const std::string tls_port = ":" + std::to_string(tls_upstream.port());
    j["inspect"] = {"upstream.test" + tls_port, "ruled.test" + tls_port, "cred.test"};
    j["rules"] = nlohmann::json::parse(R"([{"host": "ruled.test", "methods": ["GET"], "paths": ["/ok"],
                                            "action": "allow"}])");
    j["rules"].push_back({{"host", "upstream.test" + tls_port}, {"methods", {"GET"}}, {"paths", {"/ok"}},
                          {"action", "allow"}});
    j["credentials"] = nlohmann::json::parse(R"([{"name": "openai", "hosts": ["cred.test"],
      "header": "Authorization", "format": "Bearer {secret}", "secret_env": "OPENAI_API_KEY"}])");
    if (c.setup == Setup::cap_held) j["limits"]["max_connections_per_host"] = 1;
    if (c.report_mode) j["mode"] = "report";
    start_proxy(j.dump());
    proxy::AgentAttachment a;
    a.addr = ip::make_address(kAgent);
    a.name = "conformer";
    a.listen = ip::tcp::endpoint(ip::make_address(kHost), 0);
    a.socks_listen = ip::tcp::endpoint(ip::make_address(kHost), 0);
    a.dns_pool = policy::Cidr::parse(kPool);
    a.credentials.push_back({"openai", kPlaceholder, proxy::Secret(kSecret)});
    agent = server->attach_agent(a);
    ASSERT_TRUE(agent->listener && agent->socks_listener && agent->transparent);
    ASSERT_TRUE(capture_agent_tcp(agent->transparent->port()));
  }

  std::uint16_t port_for(const Case& c, Door d) const {
    if (c.closed_port) return kClosedPort;
    if (c.refusing_port) return kRefusingPort;
    return d == Door::inspected ? tls_upstream.port() : upstream.port();
  }
  static std::string host_for(const Case& c, Door d) {
    return d == Door::inspected && !c.inspected_host.empty() ? c.inspected_host : c.host;
  }
  static std::string request(const Case& c, const std::string& host) {
    return "GET " + c.path + " HTTP/1.1\r\nHost: " + host + "\r\n" + c.headers + ending(c);
  }
  // A WebSocket handshake's fields end it (RFC 6455 4.1), or Connection: close.
  static std::string ending(const Case& c) {
    return c.websocket ? std::string(kWebSocketHandshake) : "Connection: close\r\n\r\n";
  }

  // What the agent got: the HTTP answer's status (0: none, the connection was reset or
  // closed), and on SOCKS5 the reply's code when it was not "succeeded".
  struct Answer {
    int status = 0;
    int socks_reply = -1;
    std::string decision;  // its X-Netbox-Decision, when netbox answered
    bool echoed = false;   // a WebSocket's message came back
    static Answer of(const std::string& response) { return {status_of(response), -1, decision_header(response), false}; }
  };

  // The attempt through `d`. `before` runs once the agent's socket exists, before it
  // connects; `after` once it connected.
  Answer attempt(Door d, const Case& c, const std::function<void()>& before, const std::function<void()>& after) {
    const auto to_port = port_for(c, d);
    const auto host = host_for(c, d);
    const std::string authority = host + ":" + std::to_string(to_port);
    std::string captured_address;
    if (d == Door::captured) {
      const bool literal = host.find_first_not_of("0123456789.") == std::string::npos;
      captured_address = literal ? host : !looked_up.empty() ? looked_up : view_address(host);
      if (captured_address.empty()) {
        ADD_FAILURE() << "the DNS view gave no address for " << host;
        return {};
      }
    }
    AgentSocket s;
    before();
    const bool connected = d == Door::captured ? s.connect(captured_address, to_port)
                           : d == Door::socks5 ? s.connect(kHost, agent->socks_listener->port())
                                               : s.connect(kHost, agent->listener->port());
    after();
    if (!connected) return {};
    switch (d) {
      case Door::http_forward:
        s.write("GET http://" + authority + c.path + " HTTP/1.1\r\nHost: " + authority + "\r\n" + c.headers +
                ending(c));
        return answer_of(s, c);
      case Door::connect:
      case Door::inspected: {
        s.write("CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n");
        const auto head = s.read_head();
        if (status_of(head) != 200) return Answer::of(head);
        break;
      }
      case Door::socks5: {
        s.write(std::string("\x05\x01\x00", 3));
        if (s.read_exactly(2) != std::string("\x05\x00", 2)) return {};
        std::string req("\x05\x01\x00\x03", 4);
        req.push_back(static_cast<char>(host.size()));
        req += host;
        req.push_back(static_cast<char>(to_port >> 8));
        req.push_back(static_cast<char>(to_port & 0xff));
        s.write(req);
        const auto reply = s.read_exactly(10);
        if (reply.size() != 10) return {};
        if (reply[1] != 0) return {0, reply[1], {}, false};
        break;
      }
      case Door::captured: break;
    }
    // Inside the tunnel: TLS where netbox terminates it (or to front), else plain HTTP.
    if (d == Door::inspected || !c.server_name.empty()) {
      const auto name = c.server_name.empty() ? host : c.server_name;
      if (!s.start_tls(name, ca_pem)) return {};
    }
    s.write(request(c, host));
    return answer_of(s, c);
  }

  // The answer to the request just sent; for a WebSocket answered 101, messages sent
  // and their echoes read back (masked as a client's must be), then a close.
  static Answer answer_of(AgentSocket& s, const Case& c) {
    if (!c.websocket) return Answer::of(s.read_to_end());
    const auto head = s.read_head();
    if (status_of(head) != 101) return Answer::of(head + s.read_to_end());
    Answer a = Answer::of(head);
    // Many messages in one write, their echoes read only after: the relay reads the agent
    // while it writes to it (inside TLS on the inspected door, both at once on one engine).
    std::string frames, echoes;
    for (int i = 0; i < 64; ++i) {
      const std::string message = "message " + std::to_string(i) + " " + std::string(90, 'w');
      frames += client_text_frame(message);
      echoes += server_text_frame(message);
    }
    s.write(frames);
    a.echoed = s.read_exactly(echoes.size()) == echoes;
    s.write(client_close_frame());
    s.read_to_end();  // the upstream's close, then the end of the connection
    return a;
  }

  std::vector<AuditRow> rows_but_dns() {
    std::vector<AuditRow> out;
    for (auto& r : rows())
      if (r.kind != "dns") out.push_back(std::move(r));
    return out;
  }
  std::uint64_t upstream_requests() const { return upstream.requests() + tls_upstream.requests(); }

  std::optional<proxy::AttachedAgent> agent;
  std::string looked_up;  // the captured door's address, asked before the case's setup
};

// The `kind` of the row a door opens for the agent's connection (an inspected one: its CONNECT's).
std::string kind_of(Door d) {
  switch (d) {
    case Door::http_forward: return "http";
    case Door::connect:
    case Door::inspected: return "connect";
    case Door::socks5: return "socks";
    case Door::captured: return "transparent";
  }
  return "?";
}

std::string describe(const std::vector<AuditRow>& rows) {
  std::string out;
  for (const auto& r : rows)
    out += "\n  " + r.kind + " " + r.method + " " + r.host + ":" + std::to_string(r.port) + r.path + " -> " +
           r.decision + " [" + r.rule + "] " + (r.status ? std::to_string(*r.status) : "-") + " " + r.reason + (r.error.empty() ? "" : " (error: " + r.error + ")");
  return out;
}

TEST_P(DoorConformance, EveryDoorAnswersTheCaseAlike) {
  const auto& [door, c] = GetParam();
  std::function<void()> before = [] {}, after = [] {};
  std::unique_ptr<AgentSocket> holder;
  std::unique_ptr<StoreWriteLock> lock;
  std::unique_ptr<DescriptorsUsedUp> fds;
  std::size_t rows_before = 0;
  if (c.setup == Setup::cap_held) {
    // Another connection of the agent's to the host holds its one place.
    holder = std::make_unique<AgentSocket>();
    ASSERT_TRUE(holder->connect(kHost, agent->listener->port()));
    const auto authority = "upstream.test:" + std::to_string(upstream.port());
    holder->write("CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n");
    ASSERT_EQ(status_of(holder->read_head()), 200);
  }
  if (c.setup == Setup::store_blocked) {
    // The store cannot write and already holds --audit-hold rows (one, this request's):
    // the attempt's row would be lost, so the attempt is refused.
    rows_before = rows_but_dns().size();
    lock = std::make_unique<StoreWriteLock>(db_path);
    ASSERT_TRUE(lock->held());
    AgentSocket queued;
    ASSERT_TRUE(queued.connect(kHost, agent->listener->port()));
    queued.write("GET " + upstream_url("/queued") + " HTTP/1.1\r\nHost: upstream.test\r\nConnection: close\r\n\r\n");
    ASSERT_EQ(status_of(queued.read_to_end()), 200);
    ASSERT_TRUE(audit_turns_unhealthy()) << "the audit writer never reported the lock";
  }
  if (c.setup == Setup::out_of_descriptors) {
#if defined(__SANITIZE_ADDRESS__)
    // As in fd_exhaustion_test.cpp: UBSan checks a dynamic type by probing memory through
    // a pipe of its own, and in a process with no descriptor left it reports a false
    // "invalid vptr" and exits. The normal build runs this case on every door.
    GTEST_SKIP() << "a sanitized proxy cannot run out of descriptors: UBSan needs a pipe to check types";
#endif
    const auto errors = server->counters().accept_errors;
    before = [&] { fds = std::make_unique<DescriptorsUsedUp>(); };
    after = [&, errors] {
      EXPECT_TRUE(fds->used_up());
      // The connection waits in the listener's queue while accepting fails for want of a
      // descriptor; once there are some again, it is served as any other.
      EXPECT_TRUE(eventually([&] { return server->counters().accept_errors > errors; }))
          << "the proxy never ran out of descriptors: the case did not test it";
      fds->release();
    };
  }
  std::vector<std::unique_ptr<AgentSocket>> fillers;
  std::thread releaser;
  bool held_back = false;
  if (c.setup == Setup::queue_full) {
    // The DNS view waits for room too: the captured door's name is looked up first.
    if (door == Door::captured) looked_up = view_address(host_for(c, door));
    server->audit().flush();
    lock = std::make_unique<StoreWriteLock>(db_path);
    ASSERT_TRUE(lock->held());
    // Refused requests fill the queue (a row each, nothing upstream) until one is held.
    const std::string denied = std::string(kDenied) + ":" + std::to_string(upstream.port());
    for (int i = 0; i < 16; ++i) {
      fillers.push_back(std::make_unique<AgentSocket>());
      ASSERT_TRUE(fillers.back()->connect(kHost, agent->listener->port()));
      fillers.back()->write("GET http://" + denied + "/ HTTP/1.1\r\nHost: " + denied + "\r\n\r\n");
    }
    ASSERT_TRUE(eventually([&] { return server->audit().stats().room_waits > 0; })) << "the queue never filled";
    // Every filler is in the queue or held (the count stands still), so the next wait is the attempt's.
    std::uint64_t waits = 0;
    int still = 0;
    ASSERT_TRUE(eventually([&] {
      const auto now = server->audit().stats().room_waits;
      still = now == waits ? still + 1 : 0;
      waits = now;
      return still >= 10;
    }));
    // Once the attempt is held too, the store lets the writer commit again.
    after = [&, waits] {
      releaser = std::thread([&, waits] {
        held_back = eventually([&] { return server->audit().stats().room_waits > waits; });
        lock->release();
      });
    };
  }
  const auto upstream_before = upstream_requests();
  const auto answer = attempt(door, c, before, after);
  if (releaser.joinable()) releaser.join();
  const int status = answer.status;
  holder.reset();
  if (lock) lock->release();
  const auto all = rows_but_dns();
  const std::vector<AuditRow> mine(all.begin() + static_cast<std::ptrdiff_t>(std::min(rows_before, all.size())),
                                   all.end());

  if (c.setup == Setup::queue_full) {
    EXPECT_TRUE(held_back) << name_of(door) << " read the attempt while the audit queue was full";
    EXPECT_EQ(status, 200);
    EXPECT_EQ(server->audit().stats().rejected, 0u) << "a row went past the queue";
    EXPECT_TRUE(eventually([&] {
      server->audit().flush();
      const auto now = rows_but_dns();
      return std::any_of(now.begin(), now.end(), [&](const AuditRow& r) {
        return r.kind == kind_of(door) && r.decision == "allow" && r.agent == "conformer";
      });
    })) << "the attempt's row is missing";
    return;
  }
  // A SOCKS5 request refused before any connection: "not allowed" for the policy or a
  // limit, a general failure for anything else.
  if (answer.socks_reply >= 0) {
    EXPECT_EQ(answer.socks_reply, c.socks_reply >= 0                         ? c.socks_reply
                                  : c.decision == "deny" || c.decision == "cap" ? 2
                                                                                : 1);
  }
  if (c.setup == Setup::store_blocked) {
    EXPECT_NE(status, 200);
    if (door == Door::socks5) {
      EXPECT_EQ(answer.socks_reply, 1) << "a connection that cannot be audited is never made";
    }
    if (status != 0) {
      EXPECT_EQ(status, 503);
      EXPECT_EQ(answer.decision, "error");
    }
    EXPECT_EQ(upstream_requests(), upstream_before) << "a request that cannot be audited must not be forwarded";
    ASSERT_EQ(mine.size(), 1u) << "only the queued request's row, none of the attempt's:" << describe(mine);
    EXPECT_EQ(mine[0].path, "/queued");
    return;
  }
  // The attempt went through the door under test.
  EXPECT_TRUE(std::any_of(mine.begin(), mine.end(), [&](const AuditRow& r) { return r.kind == kind_of(door); }))
      << "no " << kind_of(door) << " row among" << describe(mine);
  if (c.decision.empty()) {
    EXPECT_EQ(status, c.websocket ? 101 : 200) << describe(mine);
    EXPECT_EQ(upstream_requests(), upstream_before + 1);
    ASSERT_FALSE(mine.empty());
    for (const auto& r : mine) {
      EXPECT_EQ(r.decision, "allow") << describe(mine);
      EXPECT_EQ(r.agent, "conformer");
    }
    if (c.websocket) {
      EXPECT_TRUE(answer.echoed) << "the message did not come back through " << name_of(door);
      // The row that carried it: the handshake's, with its 101 (a blind tunnel's: its 200).
      const int carried = door == Door::connect ? 200 : 101;
      EXPECT_TRUE(std::any_of(mine.begin(), mine.end(), [&](const AuditRow& r) {
        return r.status == carried && r.bytes_up > 0 && r.bytes_down > 0 && r.error.empty();
      })) << "no row " << carried << " with bytes both ways among" << describe(mine);
    }
    return;
  }
  if (!c.report_mode) {
    EXPECT_NE(status, 200) << describe(mine);
    // Where netbox answered in HTTP, its answer says what the row says.
    if (status != 0) {
      EXPECT_EQ(answer.decision, c.decision) << status;
    }
    EXPECT_EQ(upstream_requests(), upstream_before) << "a refused attempt reached the upstream" << describe(mine);
  } else {
    EXPECT_NE(answer.decision, "deny") << "report mode refuses nothing" << describe(mine);
    if (c.server_name.empty()) {
      EXPECT_EQ(status, 200) << "a reported request goes upstream" << describe(mine);
    }
  }
  const AuditRow* found = nullptr;
  for (const auto& r : mine) {
    if (!found && r.decision == c.decision && r.rule.rfind(c.rule, 0) == 0 &&
        r.reason.find(c.reason) != std::string::npos && r.agent == "conformer" &&
        (c.status == 0 || r.status == c.status))
      found = &r;
  }
  ASSERT_TRUE(found) << "no row " << c.decision << " [" << c.rule << "...] " << c.status << " with '" << c.reason
                     << "' among" << describe(mine);
  // The metric (netbox_requests_total) says what the row says: a tunnel is counted once its
  // outcome can no longer change, never as allowed before a check that then refuses it (a
  // CONNECT's fronting check once came after it was counted).
  std::uint64_t counted = 0;
  for (const auto& r : server->counters().requests)
    if (r.kind == found->kind && r.decision == found->decision) counted += r.count;
  EXPECT_GE(counted, 1u) << "the row is " << found->kind << " " << found->decision << ", the metric never said so";
}

std::vector<std::tuple<Door, Case>> table() {
  std::vector<std::tuple<Door, Case>> out;
  for (const auto& c : cases())
    for (Door d : {Door::http_forward, Door::connect, Door::socks5, Door::captured, Door::inspected})
      if (std::find(c.not_through.begin(), c.not_through.end(), d) == c.not_through.end()) out.emplace_back(d, c);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Table, DoorConformance, ::testing::ValuesIn(table()),
                         [](const ::testing::TestParamInfo<std::tuple<Door, Case>>& p) {
                           return std::string(std::get<1>(p.param).name) + "_" + name_of(std::get<0>(p.param));
                         });

}  // namespace
}  // namespace netbox::test
