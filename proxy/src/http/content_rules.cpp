#include "http/content_rules.hpp"

#include "pipeline/exchange.hpp"
#include "agents/guardians.hpp"
#include "base/log_keys.hpp"
#include "pipeline/policy_answer.hpp"
#include "pipeline/target.hpp"

#include "netbox/policy/content_mode.hpp"

#include <nlohmann/json.hpp>

namespace netbox::proxy {

namespace http = boost::beast::http;

std::optional<SecretSighting> secret_in_head(const http::fields& fields, std::string_view target) {
  if (auto f = content::find_secret(target)) return SecretSighting{std::move(*f), "the URL"};
  for (const auto& field : fields)
    if (auto f = content::find_secret(field.value()))
      return SecretSighting{std::move(*f), "the header " + std::string(field.name_string())};
  return std::nullopt;
}

std::optional<SecretSighting> secret_in_body(std::string_view body, std::size_t window) {
  if (auto f = content::find_secret(body.substr(0, window))) return SecretSighting{std::move(*f), "the body"};
  return std::nullopt;
}

std::optional<content::EncodedLabel> encoded_label_under_wildcard(const policy::Profile& profile,
                                                                  const std::string& host, std::uint16_t port,
                                                                  std::string& rule) {
  const auto covers = [&](const policy::Rule& r) { return r.covers_name(host) && (!r.port || *r.port == port); };
  const policy::Rule* wildcard = nullptr;
  for (const auto& r : profile.allow) {
    if (!covers(r)) continue;
    if (r.kind == policy::Rule::Kind::exact_host) return std::nullopt;  // the name itself is listed
    // The shortest suffix leaves the most labels to read.
    if (r.kind == policy::Rule::Kind::wildcard_host && (!wildcard || r.host.size() < wildcard->host.size()))
      wildcard = &r;
  }
  if (!wildcard || host.size() <= wildcard->host.size() + 1) return std::nullopt;
  // Only the labels the wildcard stands for: the allowed suffix is the policy's own.
  auto found = content::encoded_label(std::string_view(host).substr(0, host.size() - wildcard->host.size() - 1));
  if (found) rule = wildcard->cite();
  return found;
}

std::optional<Refusal> secrets_in_head(Guardians& guardians, Exchange& row, const policy::Profile& profile,
                                       const std::string& agent, const std::string& host, const Target& target,
                                       const http::fields& fields) {
  const auto mode = policy::content_mode(profile, profile.guardian.content.secrets);
  if (mode == policy::ContentMode::off) return std::nullopt;
  auto seen = secret_in_head(fields, target.path_and_query);
  if (!seen) return std::nullopt;
  // The row keeps the path (never the query): one holding the secret is withheld.
  if (content::find_secret(target.path)) row.target(host, target.port, "(withheld: it holds a secret)");
  return guardians.secret_seen(agent, host, mode, *seen);
}

BodySecretScan body_secret_scan(Guardians& guardians, const policy::Profile& profile, const std::string& agent,
                                const std::string& host) {
  const auto mode = policy::content_mode(profile, profile.guardian.content.secrets);
  if (mode == policy::ContentMode::off) return {};
  return {&guardians, agent, host, mode, static_cast<std::size_t>(profile.guardian.content.body_window)};
}

std::optional<Refusal> BodySecretScan::check(std::string_view first) const {
  if (!active()) return std::nullopt;
  auto seen = secret_in_body(first, window);
  if (!seen) return std::nullopt;
  return guardians->secret_seen(agent, host, mode, *seen);
}

}  // namespace netbox::proxy

namespace netbox::proxy {

std::optional<Refusal> Guardians::secret_seen(const std::string& agent, const std::string& host,
                                              policy::ContentMode mode, const SecretSighting& seen) {
  const std::string kind(seen.found.kind);
  const std::string encoding(content::encoding_name(seen.found.encoding));
  const std::string version = std::to_string(content::kSecretFormatsVersion);
  const bool enforced = mode == policy::ContentMode::enforce;
  const nlohmann::json detail{{"agent", agent},    {"host", host},         {"kind", kind},
                              {"where", seen.where}, {"encoding", encoding}, {"digest", seen.found.digest},
                              {"formats_version", content::kSecretFormatsVersion},
                              {"action", enforced ? "refused" : "reported"}};
  // Folded per (agent, kind, host, where, value's digest) a minute, like the tripwire's.
  sighted(agent, policy::GuardianEvent::secret_in_request,
          kind + '\0' + host + '\0' + seen.where + '\0' + seen.found.digest,
          "agent " + agent + " sent " + kind + " (digest " + seen.found.digest + ") to " + host + " in " + seen.where +
              (enforced ? "; refused" : "; reported only"),
          detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
          {{log_key::agent, agent},
           {log_key::host, host},
           {log_key::kind, kind},
           {log_key::where, seen.where},
           {log_key::encoding, encoding},
           {log_key::digest, seen.found.digest}});
  if (!enforced) return std::nullopt;
  return refusal_of(policy::Decision::refused(
                        "guardian.content.secrets",
                        "the request holds " + kind + " (" + encoding + ", digest " + seen.found.digest + ") in " +
                            seen.where + ": a known secret format (netbox's list, version " + version +
                            "); netbox does not let a secret leave. Use a credential (the proxy adds it) instead"),
                    403);
}

std::optional<Refusal> Guardians::check_labels(const std::string& agent, const policy::Profile& profile,
                                               const std::string& host, std::uint16_t port) {
  const auto mode = policy::content_mode(profile, profile.guardian.content.encoded_labels);
  if (mode == policy::ContentMode::off) return std::nullopt;
  std::string wildcard;
  const auto label = encoded_label_under_wildcard(profile, host, port, wildcard);
  if (!label) return std::nullopt;
  const bool enforced = mode == policy::ContentMode::enforce;
  const nlohmann::json detail{{"agent", agent}, {"host", host}, {"label", label->label}, {"why", label->why},
                              {"allowed_by", wildcard}, {"action", enforced ? "refused" : "reported"}};
  sighted(agent, policy::GuardianEvent::encoded_label, host,
          "agent " + agent + " asked for " + host + ", whose label " + label->label + " looks encoded (" + label->why +
              ")" + (enforced ? "; refused" : "; reported only"),
          detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
          {{log_key::agent, agent}, {log_key::host, host}, {log_key::label, label->label}, {log_key::why, label->why}});
  if (!enforced) return std::nullopt;
  return refusal_of(policy::Decision::refused(
                        "guardian.content.encoded_labels",
                        "the label '" + label->label + "' of " + host + " looks like encoded data (" + label->why +
                            "), under the wildcard allow " + wildcard +
                            ": a name that carries data is how DNS and subdomain exfiltration spell their payload"),
                    403);
}

}  // namespace netbox::proxy
