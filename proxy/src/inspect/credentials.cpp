#include "inspect/credentials.hpp"

#include "netbox/audit/placeholder_spelling.hpp"

#include "pipeline/policy_answer.hpp"
#include "base/door_services.hpp"
#include "inspect/secret_forms.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/rfc7230.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <map>
#include <stdexcept>

namespace netbox::proxy {

namespace http = boost::beast::http;

namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool contains_folded(std::string_view text, std::string_view needle) {
  if (needle.empty() || text.size() < needle.size()) return false;
  return std::search(text.begin(), text.end(), needle.begin(), needle.end(),
                     [](char a, char b) { return lower(a) == lower(b); }) != text.end();
}


std::string refused(const AgentCredential& c, const std::string& form, const std::string& where) {
  return "the upstream's answer holds credential " + c.name + "'s secret (" + form + ") in " + where +
         "; netbox does not pass it to the agent";
}

std::string formatted(const AgentCredential& c) {
  std::string value = c.format;
  const auto at = value.find("{secret}");
  if (at != std::string::npos) value.replace(at, 8, c.secret.reveal());
  return value;
}

}  // namespace

bool AgentCredential::listed_for(const std::string& host, std::uint16_t port) const {
  return std::any_of(hosts.begin(), hosts.end(),
                     [&](const policy::Rule& r) { return r.covers_name(host) && (!r.port || *r.port == port); });
}

AgentCredentials bind_credentials(const policy::Profile& profile, std::vector<CredentialSecret> secrets) {
  std::map<std::string, CredentialSecret*> by_name;
  for (auto& s : secrets) {
    if (!by_name.emplace(s.name, &s).second)
      throw std::invalid_argument("credential " + s.name + " is given twice");
  }
  AgentCredentials out;
  for (const policy::Credential& c : profile.credentials) {
    auto it = by_name.find(c.name);
    if (it == by_name.end() || it->second->secret.empty())
      throw std::invalid_argument("credential " + c.name + " of the agent's profile has no secret: the launcher " +
                                  "reads it (" + (c.secret_env.empty() ? c.secret_file : "$" + c.secret_env) +
                                  ") and gives it when it attaches the agent");
    CredentialSecret& s = *it->second;
    const std::string prefix = "nbx-" + c.name + "-";
    if (!s.placeholder.starts_with(prefix) || s.placeholder.size() < prefix.size() + 16)
      throw std::invalid_argument("credential " + c.name + ": the placeholder is not " + prefix +
                                  "<random> (at least 16 characters of it)");
    out.push_back(AgentCredential{c.name, c.hosts, c.header, c.format, std::move(s.placeholder),
                                  std::move(s.secret)});
    by_name.erase(it);
  }
  if (!by_name.empty())
    throw std::invalid_argument("credential " + by_name.begin()->first + " is not one of the agent's profile");
  return out;
}

std::string inject_credentials(const AgentCredentials& credentials, const std::string& host, std::uint16_t port,
                               http::fields& fields) {
  std::string used;
  for (const auto& c : credentials) {
    if (!c.listed_for(host, port)) continue;
    fields.set(c.header, formatted(c));
    used += (used.empty() ? "" : ",") + c.name;
  }
  return used;
}

HeldTail::HeldTail(std::string_view form_bytes, std::size_t cap) : cap_(cap) {
  for (unsigned char c : form_bytes) in_form_[c] = true;
}

std::size_t HeldTail::of(std::string_view window) const {
  if (cap_ == 0) return 0;
  const std::size_t most = std::min(window.size(), cap_ - 1);
  std::size_t n = 0;
  while (n < most && in_form_[static_cast<unsigned char>(window[window.size() - 1 - n])]) ++n;
  return n;
}

namespace {

constexpr std::string_view kAlnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

}  // namespace

AnswerRedaction::AnswerRedaction(const AgentCredentials& credentials, const std::string& host, std::uint16_t port) {
  // The forms SecretForms finds: as sent, JSON escapes (\/, \uXXXX), up to three rounds of
  // percent-encoding, base64 (standard or URL-safe), and these in turn escaped; none is
  // longer than 24 bytes a byte of the secret.
  std::string bytes = std::string(kAlnum) + "%\\/+=_-";
  std::size_t cap = 0;
  for (const auto& c : credentials) {
    if (!c.listed_for(host, port)) continue;
    credentials_.push_back(&c);
    bytes += c.secret.reveal();
    cap = std::max(cap, 24 * c.secret.reveal().size() + 16);
  }
  tail_ = HeldTail(bytes, cap);
}

std::string AnswerRedaction::check_head(std::string_view reason, const http::fields& fields) const {
  // A body coded so that a search cannot read it is refused, whatever it holds: netbox
  // asked for none (Accept-Encoding is removed from such requests).
  for (auto [it, end] = fields.equal_range(http::field::content_encoding); it != end; ++it)
    for (auto token : http::token_list(it->value()))
      if (!boost::beast::iequals(token, "identity"))
        return "the upstream's answer to a request carrying a credential is encoded (" + std::string(it->value()) +
               "), so netbox cannot check that it does not hold the secret";
  for (const AgentCredential* c : credentials_) {
    const SecretForms forms(c->secret.reveal());
    if (auto form = forms.found_in(reason); !form.empty()) return refused(*c, form, "its status line");
    for (const auto& f : fields) {
      if (auto form = forms.found_in(f.name_string()); !form.empty()) return refused(*c, form, "a header's name");
      if (auto form = forms.found_in(f.value()); !form.empty())
        return refused(*c, form, "its header (or trailer) " + std::string(f.name_string()));
    }
  }
  return {};
}

std::string AnswerRedaction::redact(std::string& window) const {
  for (const AgentCredential* c : credentials_) {
    // As sent, the secret is replaced by the placeholder; a form that cannot be replaced
    // in place refuses the answer.
    const std::string_view secret = c->secret.reveal();
    for (auto at = window.find(secret); at != std::string::npos; at = window.find(secret, at + c->placeholder.size()))
      window.replace(at, secret.size(), c->placeholder);
    if (auto form = SecretForms(secret).found_in(window); !form.empty()) return refused(*c, form, "its body");
  }
  return {};
}

std::string redact_answer(const AgentCredentials& credentials, const std::string& host, std::uint16_t port,
                          std::string_view reason, const http::fields& fields, std::string& body) {
  const AnswerRedaction r(credentials, host, port);
  if (auto why = r.check_head(reason, fields); !why.empty()) return why;
  return r.redact(body);
}

bool holds_placeholder(std::string_view text, std::string_view placeholder) {
  if (contains_folded(text, placeholder)) return true;
  if (text.find('%') == std::string_view::npos) return false;
  std::string decoded(text);
  for (int round = 0; round < audit::kPlaceholderPercentRounds && percent_decode(decoded); ++round)
    if (contains_folded(decoded, placeholder)) return true;
  return false;
}

std::optional<Exfiltration> scan_request(const AgentCredentials& credentials, const std::string& host,
                                         std::uint16_t port, const http::fields& fields, std::string_view target) {
  const auto query_at = target.find('?');
  const std::string_view path = target.substr(0, query_at);
  const std::string_view query = query_at == std::string_view::npos ? std::string_view{} : target.substr(query_at);
  for (const auto& c : credentials) {
    if (c.listed_for(host, port)) continue;
    if (holds_placeholder(path, c.placeholder)) return Exfiltration{&c, "the path"};
    if (holds_placeholder(query, c.placeholder)) return Exfiltration{&c, "the query"};
    for (const auto& f : fields)
      if (holds_placeholder(f.value(), c.placeholder) || holds_placeholder(f.name_string(), c.placeholder))
        return Exfiltration{&c, "the header " + std::string(f.name_string())};
  }
  return std::nullopt;
}

std::optional<Exfiltration> scan_body(const AgentCredentials& credentials, const std::string& host,
                                      std::uint16_t port, std::string_view body) {
  body = body.substr(0, Tripwire::kBodyScan);
  for (const auto& c : credentials)
    if (!c.listed_for(host, port) && holds_placeholder(body, c.placeholder)) return Exfiltration{&c, "the body"};
  return std::nullopt;
}

std::optional<Exfiltration> scan_host_name(const AgentCredentials& credentials, std::string_view name) {
  std::string undotted;
  undotted.reserve(name.size());
  for (char ch : name)
    if (ch != '.') undotted += ch;
  for (const auto& c : credentials)
    if (holds_placeholder(undotted, c.placeholder)) return Exfiltration{&c, "the host name"};
  return std::nullopt;
}

Tripwire::Tripwire(DoorServices& rt, std::string agent, AgentCredentials credentials)
    : rt_(rt), agent_(std::move(agent)), credentials_(std::move(credentials)) {}

std::optional<Refusal> Tripwire::check_request(const std::string& host, std::uint16_t port,
                                               const http::fields& fields, std::string_view target) const {
  if (auto e = scan_request(credentials_, host, port, fields, target)) return trip(*e, host);
  return std::nullopt;
}

std::optional<Refusal> Tripwire::check_body(const std::string& host, std::uint16_t port,
                                            std::string_view body) const {
  if (auto e = scan_body(credentials_, host, port, body)) return trip(*e, host);
  return std::nullopt;
}

HeldTail Tripwire::body_tail(const std::string& host, std::uint16_t port) const {
  // holds_placeholder reads the placeholder in any ASCII case and through
  // kPlaceholderPercentRounds rounds of percent-encoding ("%25256e" for "n" in three): each
  // round adds two bytes, so a byte is at most 1 + 2 * rounds bytes.
  std::string bytes = "%0123456789ABCDEFabcdef";
  std::size_t cap = 0;
  for (const auto& c : credentials_) {
    if (c.listed_for(host, port)) continue;
    for (char ch : c.placeholder) bytes += {lower(ch), static_cast<char>(std::toupper(static_cast<unsigned char>(ch)))};
    cap = std::max(cap, (1 + 2 * std::size_t{audit::kPlaceholderPercentRounds}) * c.placeholder.size());
  }
  return HeldTail(bytes, cap);
}

std::optional<Refusal> Tripwire::check_host_name(const std::string& host) const {
  if (auto e = scan_host_name(credentials_, host)) return trip(*e, host);
  return std::nullopt;
}

// The event names the credential, never its secret nor its placeholder: both would
// make the store (which many read) one more place to copy a key from.
Refusal Tripwire::trip(const Exfiltration& e, const std::string& host) const {
  const std::string& name = e.credential->name;
  const std::string reason = "exfiltration attempt: the placeholder of credential '" + name + "' was sent to " +
                             host + " (in " + e.where + "), which is not one of its hosts; netbox put the " +
                             "credential only into requests to its hosts";
  nlohmann::json detail{{"host", host}, {"credential", name}, {"agent", agent_}, {"where", e.where}};
  // Folded per (agent, credential, host, where) a minute, its log line limited: a flood of
  // attempts costs bounded rows and lines, each one still counted.
  rt_.agent_event(
      std::string(log_event::exfiltration_attempt), agent_, name + '\0' + host + '\0' + e.where,
      "agent " + agent_ + " sent the placeholder of credential " + name + " to " + host + " (in " + e.where + ")",
      detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
      {{log_key::agent, agent_}, {log_key::host, host}, {log_key::credential, name}, {log_key::where, e.where}});
  return refusal_of(policy::Decision::refused("credentials." + name, reason), 403);
}

}  // namespace netbox::proxy
