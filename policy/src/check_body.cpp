#include "netbox/policy/body_rules.hpp"

#include "netbox/content/git_push.hpp"
#include "netbox/content/json_rpc.hpp"
#include "netbox/content/strict_json.hpp"
#include "netbox/policy/request_path.hpp"

#include <algorithm>
#include <cctype>

namespace netbox::policy {
namespace {

constexpr std::string_view kGitRequest = "application/x-git-receive-pack-request";
constexpr std::string_view kGitResult = "application/x-git-receive-pack-result";

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The media type without parameters, lower case; `charset` gets the charset parameter.
std::string media_type(std::string_view content_type, std::string* charset) {
  const auto semi = content_type.find(';');
  std::string_view params = semi == std::string_view::npos ? std::string_view() : content_type.substr(semi + 1);
  while (!params.empty()) {
    const auto next = params.find(';');
    const std::string p = lower(trim(params.substr(0, next)));
    if (p.starts_with("charset=")) {
      std::string v = p.substr(8);
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
      *charset = v;
    }
    params = next == std::string_view::npos ? std::string_view() : params.substr(next + 1);
  }
  return lower(trim(content_type.substr(0, semi)));
}

// What JSON a server would parse as such: application/json or a +json type, in UTF-8.
bool json_type(std::string_view content_type) {
  std::string charset;
  const std::string type = media_type(content_type, &charset);
  if (!charset.empty() && charset != "utf-8" && charset != "utf8") return false;
  return type == "application/json" || (type.starts_with("application/") && type.ends_with("+json"));
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string tool_names(const JsonRpcRules& r) {
  std::string out;
  for (const auto& t : r.tools) out += (out.empty() ? "" : ", ") + t.name;
  return out;
}

// One refusal, before the answer's body is chosen.
struct Refusal {
  unsigned status = 403;
  std::string where;
  std::string what;  // the reason without the rule
};

class Checker {
 public:
  Checker(const RequestRule& rule, Mode mode) : rule_(rule), body_(*rule.body), mode_(mode) {}

  // A body the proxy could not hand over as the server will read it (its coding).
  BodyCheck refuse_unread(unsigned status, std::string what) { return refuse({status, "", std::move(what)}, nullptr); }

  BodyCheck check(std::string_view content_type, std::string_view body) {
    if (body.size() > body_.window)
      return refuse({413, "",
                     "the body is " + std::to_string(body.size()) + " bytes, over the body_window of " +
                         std::to_string(body_.window) + " bytes; body checks read the whole body, so a larger one is "
                         "refused rather than passed unchecked"},
                    nullptr);
    if (body_.git) return check_git(content_type, body);
    return check_json(content_type, body);
  }

 private:
  std::string reason(const Refusal& r) const {
    return r.what + (r.where.empty() || body_.git ? "" : " (at " + r.where + ")") + "; " + rule_.cite() +
           " checks the body";
  }

  // A JSON-RPC rule answers in JSON-RPC, a git rule in git's protocol (status 200: git
  // prints the text only from a report it can read), other rules with the status alone.
  BodyCheck refuse(const Refusal& r, const content::JsonRpcBody* calls, std::string git_answer = {}) {
    BodyCheck out;
    out.where = r.where;
    out.decision = Decision{mode_ == Mode::report ? Verdict::report : Verdict::deny, rule_.cite(), reason(r)};
    if (mode_ == Mode::report) return out;
    out.status = r.status;
    if (body_.git) {
      out.status = 200;
      out.content_type = std::string(kGitResult);
      out.answer = git_answer.empty() ? content::git_push_error(reason(r)) : std::move(git_answer);
    } else if (body_.jsonrpc) {
      out.content_type = "application/json";
      out.answer =
          content::json_rpc_error_body(calls, calls ? content::kJsonRpcPolicyRefusal : content::kJsonRpcInvalidRequest,
                                       "netbox: " + out.decision.reason)
              .dump();
    }
    return out;
  }

  BodyCheck check_json(std::string_view content_type, std::string_view body) {
    if (!json_type(content_type))
      return refuse({403, "",
                     "the body's content type is " +
                         (content_type.empty() ? std::string("not given") : "\"" + std::string(content_type) + "\"") +
                         ", not JSON (application/json or a +json type, in UTF-8), which this rule reads"},
                    nullptr);
    auto parsed = content::read_strict_json(body);
    if (auto* e = std::get_if<content::JsonRefusal>(&parsed))
      return refuse({403, "", "the body is not JSON a checker can read one way only: " + e->reason}, nullptr);
    const nlohmann::json& json = std::get<nlohmann::json>(parsed);
    if (body_.jsonrpc) {
      auto rpc = content::read_json_rpc(json);
      if (auto* e = std::get_if<content::JsonRpcRefusal>(&rpc))
        return refuse({403, e->pointer, "the body is not JSON-RPC 2.0: " + e->reason}, nullptr);
      const auto& calls = std::get<content::JsonRpcBody>(rpc);
      for (const auto& call : calls.calls)
        if (auto r = check_call(*body_.jsonrpc, call)) return refuse(*r, &calls);
    }
    if (body_.body_schema)
      if (auto v = body_.body_schema->check(json))
        return refuse({403, v->pointer, "the body does not match body_schema: " + v->reason}, nullptr);
    return BodyCheck{Decision{Verdict::allow, "", ""}, 0, "", "", ""};
  }

  static std::optional<Refusal> check_call(const JsonRpcRules& r, const content::JsonRpcCall& call) {
    // A response (the client answering a request of the server) calls nothing.
    if (call.kind == content::JsonRpcCall::Kind::response) return std::nullopt;
    const std::string at = call.pointer.empty() ? "the call" : "the call at " + call.pointer;
    if (!r.methods.empty() && std::none_of(r.methods.begin(), r.methods.end(), [&](const std::string& m) {
          return path_matches(m, call.method);
        }))
      return Refusal{403, call.pointer + "/method",
                     at + " asks for the method " + call.method + ", which is not in jsonrpc.methods (" +
                         join(r.methods) + ")"};
    if (!call.tool || !r.tools_given) return std::nullopt;
    auto tool = std::find_if(r.tools.begin(), r.tools.end(), [&](const auto& t) { return t.name == *call.tool; });
    if (tool == r.tools.end())
      return Refusal{403, call.pointer + "/params/name",
                     at + " calls the tool " + *call.tool + ", which is not in jsonrpc.tools (" + tool_names(r) + ")"};
    if (!tool->arguments) return std::nullopt;
    // Absent arguments are an empty object to an MCP server.
    const nlohmann::json args = call.arguments.is_null() ? nlohmann::json::object() : call.arguments;
    if (auto v = tool->arguments->check(args))
      return Refusal{403, call.pointer + "/params/arguments" + v->pointer,
                     at + " calls the tool " + *call.tool + " with arguments its schema refuses: " + v->reason};
    return std::nullopt;
  }

  BodyCheck check_git(std::string_view content_type, std::string_view body) {
    std::string charset;
    if (media_type(content_type, &charset) != kGitRequest)
      return refuse({403, "",
                     "the body's content type is " +
                         (content_type.empty() ? std::string("not given") : "\"" + std::string(content_type) + "\"") +
                         ", not " + std::string(kGitRequest) + ", the body of a push"},
                    nullptr);
    // The pack is inflated within a multiple of the window the body itself was held to.
    content::GitPushLimits limits;
    limits.max_inflated_bytes = content::kInflatedPerWindowByte * body_.window;
    auto read = content::read_git_push(body, limits);
    if (auto* e = std::get_if<content::GitPushRefusal>(&read))
      return refuse({403, "", "the push cannot be read: " + e->reason}, nullptr);
    const auto& push = std::get<content::GitPush>(read);
    const GitRules& g = *body_.git;
    std::map<std::string, std::string, std::less<>> reasons;
    std::string first;
    for (const auto& u : push.updates) {
      std::string why;
      if (std::none_of(g.push.begin(), g.push.end(), [&](const std::string& p) { return path_matches(p, u.ref); }))
        why = u.ref + " is not one of the refs this rule lets the agent push (" + join(g.push) + ")";
      else if (u.deletes() && !g.remove)
        why = "deleting " + u.ref + " is not allowed (git.delete is false)";
      else if (!u.deletes() && !g.force && !push.shows_fast_forward(u))
        why = "the push to " + u.ref + " is not shown to be a fast-forward (no pushed commit leads from " +
              u.old_id.substr(0, 12) + " to " + u.new_id.substr(0, 12) + "), and git.force is false";
      if (why.empty()) continue;
      if (first.empty()) first = u.ref;
      reasons.emplace(u.ref, "netbox: " + why);
    }
    if (reasons.empty()) return BodyCheck{Decision{Verdict::allow, "", ""}, 0, "", "", ""};
    // The row's reason is the first refused ref's (without the "netbox: " git shows).
    Refusal r{403, first, reasons.find(first)->second.substr(8)};
    return refuse(r, nullptr, content::git_push_refusal(push, reasons, reason(r)));
  }

  const RequestRule& rule_;
  const BodyRules& body_;
  Mode mode_;
};

}  // namespace

bool checks_body(const RequestRule& rule) { return rule.body != nullptr; }

std::size_t body_window(const RequestRule& rule) { return rule.body ? rule.body->window : 0; }

BodyCheck check_body(const RequestRule& rule, std::string_view content_type, std::string_view body, Mode mode) {
  if (!rule.body) return BodyCheck{Decision{Verdict::allow, "", ""}, 0, "", "", ""};
  return Checker(rule, mode).check(content_type, body);
}

BodyCheck body_refused(const RequestRule& rule, unsigned status, std::string what, Mode mode) {
  if (!rule.body) return BodyCheck{Decision{Verdict::allow, "", ""}, 0, "", "", ""};
  return Checker(rule, mode).refuse_unread(status, std::move(what));
}

}  // namespace netbox::policy
