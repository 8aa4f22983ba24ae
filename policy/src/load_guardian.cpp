#include "load_guardian.hpp"

#include "load_limits.hpp"

#include "netbox/policy/near_miss.hpp"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <array>
#include <cctype>
#include <utility>

namespace netbox::policy::detail {
namespace {

// One of `names` (the enum's values in order) or a mistake naming them all.
template <class Enum, std::size_t N>
Enum one_of(const LoadContext& ctx, const nlohmann::json& v, const std::string& pointer, std::string_view what,
            const std::array<std::string_view, N>& names) {
  const std::string& s = ctx.expect_string(v, pointer);
  for (std::size_t i = 0; i < N; ++i)
    if (s == names[i]) return static_cast<Enum>(i);
  std::string list;
  for (std::size_t i = 0; i < N; ++i) list += (i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(names[i]);
  const std::string best = closest_name(s, std::vector<std::string_view>(names.begin(), names.end()));
  ctx.fail(pointer, "unknown " + std::string(what) + " \"" + s + "\"" + (best.empty() ? "" : "; did you mean '" + best + "'?") +
                        " (" + list + ")");
}

constexpr std::array<std::string_view, 3> kActions = {"kill", "freeze", "report"};
constexpr std::array<std::string_view, 3> kModes = {"enforce", "report", "off"};

GuardianRule read_rule(const LoadContext& ctx, const nlohmann::json& j, const std::string& pointer,
                       const std::string& cite) {
  ctx.expect_object(j, pointer);
  ctx.check_keys(j, pointer, {"on", "action"});
  GuardianRule rule;
  auto on = j.find("on");
  auto action = j.find("action");
  if (on == j.end()) ctx.fail(pointer, cite + " needs \"on\": the triggers, e.g. [\"denied >= 20 in 60s\"]");
  if (action == j.end()) ctx.fail(pointer, cite + " needs \"action\": kill, freeze or report");
  ctx.keep_going([&] { rule.action = one_of<GuardianAction>(ctx, *action, child(pointer, "action"), "action", kActions); });
  const std::string op = child(pointer, "on");
  ctx.expect_array(*on, op);
  if (on->empty()) ctx.fail(op, cite + " has no trigger; list at least one, e.g. \"budget_exhausted\"");
  for (std::size_t i = 0; i < on->size(); ++i) ctx.keep_going([&] {
    const std::string p = child(op, i);
    const std::string& text = ctx.expect_string((*on)[i], p);
    auto t = parse_guardian_trigger(text);
    if (auto* e = std::get_if<TriggerError>(&t))
      ctx.fail(p, cite + " trigger \"" + text + "\", column " + std::to_string(e->column) + ": " + e->message);
    rule.on.push_back(std::get<GuardianTrigger>(std::move(t)));
  });
  return rule;
}

std::vector<GuardianRule> read_rules(const LoadContext& ctx, const nlohmann::json& j, const std::string& pointer,
                                     const std::string& list_name) {
  ctx.expect_array(j, pointer);
  std::vector<GuardianRule> out;
  for (std::size_t i = 0; i < j.size(); ++i) ctx.keep_going([&] {
    GuardianRule r = read_rule(ctx, j[i], child(pointer, i), list_name + "[" + std::to_string(i) + "]");
    r.list = list_name;
    r.index = i;
    out.push_back(std::move(r));
  });
  return out;
}

// An http:// or https:// URL with a host: the proxy POSTs each event there, outside the
// agent's policy, so nothing else (file:, a bare host, credentials in the URL) is taken.
std::string read_webhook(const LoadContext& ctx, const nlohmann::json& v, const std::string& pointer) {
  const std::string& s = ctx.expect_string(v, pointer);
  std::string scheme;
  for (char c : s.substr(0, s.find(':'))) scheme += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto sep = s.find("://");
  if (sep == std::string::npos || (scheme != "http" && scheme != "https"))
    ctx.fail(pointer, "must be an http:// or https:// URL such as http://127.0.0.1:9000/hook, not \"" + s + "\"");
  for (unsigned char c : s)
    if (c <= 0x20 || c == 0x7f) ctx.fail(pointer, "must not contain spaces or control characters: \"" + s + "\"");
  const std::string authority = s.substr(sep + 3, s.find_first_of("/?#", sep + 3) - (sep + 3));
  if (authority.empty() || authority.front() == ':')
    ctx.fail(pointer, "names no host: \"" + s + "\" (e.g. http://127.0.0.1:9000/hook)");
  if (authority.find('@') != std::string::npos)
    ctx.fail(pointer, "must not carry a user or password (they would be written to logs): \"" + s + "\"");
  return s;
}

// The CAs an https:// webhook must chain to: an absolute path to a readable PEM file holding
// at least one certificate, read now so a typo is a load error, not a webhook that fails.
std::string read_webhook_ca(const LoadContext& ctx, const nlohmann::json& v, const std::string& pointer) {
  const std::string& path = ctx.expect_string(v, pointer);
  if (path.empty() || path.front() != '/') ctx.fail(pointer, "must be an absolute path to a PEM file, not \"" + path + "\"");
  BIO* bio = BIO_new_file(path.c_str(), "r");
  X509* first = bio ? PEM_read_bio_X509(bio, nullptr, nullptr, nullptr) : nullptr;
  const bool ok = first != nullptr;
  X509_free(first);
  BIO_free(bio);
  ERR_clear_error();
  if (!ok) ctx.fail(pointer, path + ": not a readable PEM certificate file");
  return path;
}

void read_content(const LoadContext& ctx, const nlohmann::json& j, const std::string& pointer, ContentRules& c) {
  ctx.expect_object(j, pointer);
  ctx.check_keys(j, pointer, {"secrets", "body_window", "encoded_labels"});
  for (const auto& [key, v] : j.items()) ctx.keep_going([&, &key = key, &v = v] {
    const std::string p = child(pointer, key);
    if (key == "secrets") c.secrets = one_of<ContentMode>(ctx, v, p, "mode", kModes);
    else if (key == "encoded_labels") c.encoded_labels = one_of<ContentMode>(ctx, v, p, "mode", kModes);
    else if (key == "body_window") {
      const auto n = byte_size(ctx, v, p, false);
      if (*n > kMaxContentWindow) ctx.fail(p, "must be at most 1M (what one search looks at), not " + v.dump());
      c.body_window = *n;
    }
  });
}

}  // namespace

void read_guardian(const LoadContext& ctx, const nlohmann::json& object, const std::string& pointer,
                   const std::string& list_prefix, GuardianSettings& settings) {
  ctx.expect_object(object, pointer);
  ctx.check_keys(object, pointer, {"rules", "webhook", "webhook_ca", "content"});
  if (auto it = object.find("rules"); it != object.end())
    ctx.keep_going([&] { settings.rules = read_rules(ctx, *it, child(pointer, "rules"), list_prefix + "guardian.rules"); });
  if (auto it = object.find("webhook"); it != object.end()) {
    ctx.keep_going([&] { settings.webhook = read_webhook(ctx, *it, child(pointer, "webhook")); });
    settings.webhook_ca.reset();  // a webhook named here takes only the trust named with it
  }
  if (auto it = object.find("webhook_ca"); it != object.end()) {
    ctx.keep_going([&] { settings.webhook_ca = read_webhook_ca(ctx, *it, child(pointer, "webhook_ca")); });
    if (!settings.webhook || !settings.webhook->starts_with("https://"))
      ctx.keep_going([&] { ctx.fail(child(pointer, "webhook_ca"), "needs an https:// webhook beside it"); });
  }
  if (auto it = object.find("content"); it != object.end())
    ctx.keep_going([&] { read_content(ctx, *it, child(pointer, "content"), settings.content); });
}

}  // namespace netbox::policy::detail
