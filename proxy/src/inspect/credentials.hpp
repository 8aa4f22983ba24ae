#pragma once
// Credentials the agent never holds (issue 16, `credentials`). An attached agent's
// credentials are values built once, when it is attached, from its profile and the
// secrets its launcher read on the host (CredentialSecret). Two uses:
// - injection: an inspected request to a host listed for a credential gets the
//   credential's header set to its format with the secret (inject_credentials);
// - the tripwire: the placeholder the agent holds, seen on its way to any other host (a
//   request's head or its body, scanned as it streams, a CONNECT or SOCKS target, a DNS
//   name), is an exfiltration attempt: refused 403 and recorded as an event.
// The guarantee is that the secret never enters the agent's namespace; the tripwire only
// notices the placeholders it can see (not other encodings, nor what goes through a
// blind tunnel).
#include "netbox/policy/decision.hpp"
#include "netbox/policy/policy.hpp"
#include "netbox/proxy/credential_secret.hpp"

#include "pipeline/denial.hpp"

#include <boost/beast/http/fields.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netbox::proxy {

struct DoorServices;

// One credential of an attached agent. Printing it prints no secret: there is no
// operator<<, and the secret is a Secret.
struct AgentCredential {
  std::string name;
  std::vector<policy::Rule> hosts;
  std::string header;
  std::string format;  // holds {secret} once
  std::string placeholder;
  Secret secret;

  bool listed_for(const std::string& host, std::uint16_t port) const;
};

using AgentCredentials = std::vector<AgentCredential>;

// The profile's credentials joined with the launcher's secrets, by name. Throws
// std::invalid_argument naming the credential when one has no secret, a secret names no
// credential of the profile, or a placeholder is not nbx-NAME-... of its credential.
AgentCredentials bind_credentials(const policy::Profile& profile, std::vector<CredentialSecret> secrets);

// Sets the header of every credential listed for host:port to its format with the
// secret (replacing what the agent sent there, the placeholder or anything else). Returns
// the names used ("openai,github"), for the audit row; empty: none.
std::string inject_credentials(const AgentCredentials& credentials, const std::string& host, std::uint16_t port,
                               boost::beast::http::fields& fields);

// The answer to a request a secret went into may reflect it (an echo endpoint, an error
// quoting the request's headers), which would put it in the agent's hands. Every byte of
// it is searched, after the transfer coding is taken off (the caller refuses a coding
// other than chunked): the status line's reason, each header and trailer (names and
// values), the body. The secret as sent in the body is replaced by the credential's
// placeholder; anywhere else, or in an escaped form (secret_forms.hpp), the answer is
// refused. A body with a Content-Encoding other than identity is refused unread (netbox
// removed Accept-Encoding from the request). Returns why the answer cannot be passed on,
// else empty.
std::string redact_answer(const AgentCredentials& credentials, const std::string& host, std::uint16_t port,
                          std::string_view reason, const boost::beast::http::fields& fields, std::string& body);

// A body scanned as it streams, piece by piece: the end of what arrived that the next
// piece could complete into a form being looked for (a placeholder, a secret) is held back
// until that piece comes, so a form split across two pieces is found before any of it
// goes on. Held back: what follows the last byte no form contains (a newline ends every
// server-sent event, so an event is not held), and never more than a form's longest
// spelling (`cap`) less one byte.
class HeldTail {
 public:
  HeldTail() = default;
  // `form_bytes`: every byte a form may contain.
  HeldTail(std::string_view form_bytes, std::size_t cap);
  std::size_t of(std::string_view window) const;  // the bytes of the window's end to hold
  bool empty() const { return cap_ == 0; }

 private:
  std::array<bool, 256> in_form_{};
  std::size_t cap_ = 0;
};

// The answer to a request a secret went into, searched as redact_answer does, as it
// streams: the head first (before any of it goes), then each window of the body (the
// held tail of the last piece and the new one).
class AnswerRedaction {
 public:
  AnswerRedaction(const AgentCredentials& credentials, const std::string& host, std::uint16_t port);
  // Why the answer cannot be passed on (its encoding, a secret in the status line or a
  // header), else empty.
  std::string check_head(std::string_view reason, const boost::beast::http::fields& fields) const;
  // Replaces the secret as sent with the placeholder; a form that cannot be replaced in
  // place gives the reason to stop.
  std::string redact(std::string& window) const;
  const HeldTail& tail() const { return tail_; }

 private:
  std::vector<const AgentCredential*> credentials_;  // those listed for the host
  HeldTail tail_;
};

// The scanner. `text` holds `placeholder`, ASCII case ignored, as sent or after up to
// three rounds of percent-decoding (%6e%62%78, %256e...).
bool holds_placeholder(std::string_view text, std::string_view placeholder);

// What the tripwire found: whose placeholder, and where ("the header X-Trace", "the
// path", "the query", "the body", "the host name").
struct Exfiltration {
  const AgentCredential* credential = nullptr;
  std::string where;
};

// The first credential not listed for host:port whose placeholder the request shows.
std::optional<Exfiltration> scan_request(const AgentCredentials& credentials, const std::string& host,
                                         std::uint16_t port, const boost::beast::http::fields& fields,
                                         std::string_view target);
std::optional<Exfiltration> scan_body(const AgentCredentials& credentials, const std::string& host,
                                      std::uint16_t port, std::string_view body);
// A host name (a CONNECT, SOCKS or captured target, a DNS question): any placeholder,
// its dots ignored (a placeholder is longer than one DNS label may be).
std::optional<Exfiltration> scan_host_name(const AgentCredentials& credentials, std::string_view name);

// An attached agent's credentials and what to do when its placeholder goes astray:
// record the `exfiltration_attempt` event (and a log line) and answer 403. A session
// holds it through its AgentIdentity; an agent without credentials has none, so none of
// this costs anything then.
class Tripwire {
 public:
  // At most this much is scanned at once: a body streams in windows of one piece
  // (64 KiB, the held tail of the last piece included).
  static constexpr std::size_t kBodyScan = 64 * 1024;

  Tripwire(DoorServices& rt, std::string agent, AgentCredentials credentials);

  const AgentCredentials& credentials() const { return credentials_; }

  // Each returns the refusal for the agent (after recording the attempt), or nullopt.
  std::optional<Refusal> check_request(const std::string& host, std::uint16_t port,
                                       const boost::beast::http::fields& fields, std::string_view target) const;
  std::optional<Refusal> check_body(const std::string& host, std::uint16_t port, std::string_view body) const;
  std::optional<Refusal> check_host_name(const std::string& host) const;
  // What of a body piece going to host:port check_body must see again with the next
  // piece (held back; the request relay scans each window, held tail and new piece).
  HeldTail body_tail(const std::string& host, std::uint16_t port) const;

 private:
  Refusal trip(const Exfiltration& e, const std::string& host) const;

  DoorServices& rt_;
  std::string agent_;
  AgentCredentials credentials_;
};

}  // namespace netbox::proxy
