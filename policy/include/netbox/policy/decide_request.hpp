#pragma once
// Step 3, for what follows a host decision that let the connection through: each request
// whose method and path the proxy sees (plain HTTP, or HTTPS it inspects), a tunnel
// (CONNECT, SOCKS5, a captured connection) and the server name a TLS client asks for.
// The proxy acts on the answers and never re-derives them (docs/architecture.md): report
// mode, the merge of the host decision with a request rule's, the canonical path and the
// fronting check are all decided here.
#include "netbox/policy/decision.hpp"
#include "netbox/policy/host.hpp"
#include "netbox/policy/policy.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace netbox::policy {

// The profile's `rules`, in order, first match wins. A host no rule names is left to the
// host decision (allow, empty rule); a host some rule names but no rule matches for this
// request is denied, so a rule list is an allow list per host. `host` is the normalised
// name the host decision used, `path` the canonical path (normalize_request_path).
// Report mode turns a deny into a report, as everywhere.
Decision match_rules(const Profile& profile, const std::string& host, uint16_t port, std::string_view method,
                     std::string_view path);

// Whether some entry of the profile's `rules` names this host on this port: then its
// requests must be seen to be decided (plain HTTP, or an inspected CONNECT), and a blind
// tunnel to it is refused.
bool rules_name(const Profile& profile, const std::string& host, uint16_t port);

// Whether the profile inspects this host (its `inspect` list names it on this port).
bool inspects(const Profile& profile, const std::string& host, uint16_t port);

// Where a decision is asked for: the host decision's normalised name and port, and the
// decision admission made for it (allow or report: a denied host never gets this far).
struct Admitted {
  const std::string& host;
  uint16_t port;
  const Decision& decision;
};

// One request on an admitted host. For a host some rule names, the path is made
// canonical first (normalize_request_path) and that one canonical path is both matched
// and forwarded, so the upstream serves exactly what the policy looked at; a path that
// cannot be made canonical is refused, 400, as a deny (rules name the host and could not
// be applied). The row's decision is the rule's when a rule decided and either it does
// not allow or the host decision is a plain allow; otherwise the host's stands (a host
// decision that is a report is not hidden by a rule that allows). In report mode nothing
// is refused: the decision is a report with the reason, and the request goes as sent.
struct RequestDecision {
  Decision decision;           // for the row (and the refusal, when refused)
  unsigned status = 0;         // 0: the request goes; 400 (path refused) or 403 (rules deny)
  std::string path_and_query;  // to forward: canonical when rules name the host, else as sent
  std::string path;            // canonical, for the row; empty when no rule names the host
  // The rule that let the request through when it checks bodies (body_rules.hpp): the
  // caller reads the body (up to body_window) and forwards only what check_body allows.
  const RequestRule* body_rule = nullptr;
  bool refused() const { return status != 0; }
};

// Whether the caller checks bodies with check_body (the proxy's HTTP loop does, on every
// door). A caller that does not (`unavailable`) gets a request that a rule with body
// checks would allow refused, 403 (report mode: reported), never let through unchecked.
enum class BodyChecks { unavailable, caller_checks };

RequestDecision decide_request(const Profile& profile, const Admitted& admitted, std::string_view method,
                               std::string_view path_and_query, BodyChecks bodies = BodyChecks::unavailable);

// What a tunnel carries, as far as the door knows when it asks.
enum class Carried {
  opaque,      // bytes netbox relays unread (a CONNECT tunnel, TLS or any other protocol)
  plain_http,  // HTTP/1.x requests, each decided with decide_request on its way
};

// One tunnel to an admitted host (a CONNECT, a SOCKS5 CONNECT, a captured connection).
// An inspected host gets an inspected tunnel whose requests are decided one by one. Any
// other tunnel to a host some rule names is refused, 403, unless it carries plain HTTP:
// a blind tunnel would carry requests no rule could check (report mode: a report). The
// decision is for the tunnel's row.
struct TunnelDecision {
  Decision decision;
  unsigned status = 0;  // 0: the tunnel goes; 403 refused
  bool inspect = false; // netbox terminates the agent's TLS and decides each request
  bool refused() const { return status != 0; }
};

TunnelDecision decide_tunnel(const Profile& profile, const Admitted& admitted, Carried carried);

// What a TLS ClientHello says, as far as the proxy could read it (tls::ClientHello).
struct ServerNameAsked {
  bool readable = false;                // the hello is complete and well formed
  std::string_view server_name;         // empty: the hello names no server
  bool encrypted_client_hello = false;  // it carries an ECH extension (0xfe0d)
  std::string_view problem;             // why it is not readable, when it is not
};

// How the admitted name stands to the agent's TLS.
enum class TlsEnd {
  upstream,  // netbox relays the hello to the upstream unread (a blind tunnel)
  netbox,    // netbox terminates it (an inspected host): it must ask for the admitted name
};

// The one fronting check on a TLS ClientHello in a connection admitted for `host` (`as`
// says what the name is to the agent, e.g. "the host the CONNECT request named"). A hello
// asking for another name would reach a different service behind the same front (domain
// fronting), so it is denied (rule `sni`) in every mode; so is a hello that cannot be
// read, since it may name any host to a server that reads it otherwise. An Encrypted
// Client Hello changes nothing: its outer name must be the admitted one too. A hello
// with no name goes on (decided on `host`), except to netbox's own TLS for a name that
// did not come from an address (`name_from_address`: the DNS view's). A literal host has
// no name to disagree with on a blind tunnel; netbox's own TLS still wants the literal.
// Allow (empty rule) when the connection may go on.
Decision check_server_name(const Host& host, bool name_from_address, const ServerNameAsked& hello, TlsEnd end,
                           std::string_view as);

// The host an HTTP request names inside a connection admitted for `host` (a captured,
// SOCKS5 or inspected one), the plain-HTTP twin of check_server_name. A target in absolute
// form is denied (a server takes its authority over the Host header, RFC 9112 3.2.2, so
// "GET http://evil/" would front through the admitted connection), and so is a Host header
// naming another host (rule `host`, in every mode). `named`: the Host header's one name,
// lowercase, without its port or a trailing dot (the caller answers a missing or doubled
// header itself: that is a malformed request, not a decision). A literal host has no name
// to disagree with. Allow (empty rule) when the request may go on.
Decision check_request_host(const Host& host, bool absolute_form, std::string_view named);

}  // namespace netbox::policy
