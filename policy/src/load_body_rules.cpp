#include "load_body_rules.hpp"

#include "netbox/policy/request_path.hpp"
#include "netbox/policy/size.hpp"

#include <algorithm>
#include <set>

namespace netbox::policy::detail {
namespace {

content::JsonSchema compile_schema(const LoadContext& ctx, const nlohmann::json& schema, const std::string& pointer) {
  auto compiled = content::JsonSchema::compile(schema);
  if (auto* e = std::get_if<content::SchemaError>(&compiled)) ctx.fail(pointer + e->pointer, e->reason);
  return std::get<content::JsonSchema>(std::move(compiled));
}

bool expect_bool(const LoadContext& ctx, const nlohmann::json& v, const std::string& pointer) {
  if (!v.is_boolean()) ctx.fail(pointer, "must be true or false, not " + json_kind(v));
  return v.get<bool>();
}

// A JSON-RPC method pattern: a method name, or a prefix ending in "/*" ("notifications/*").
void check_method_pattern(const LoadContext& ctx, const std::string& m, const std::string& pointer) {
  if (m.empty()) ctx.fail(pointer, "a method is a non-empty string");
  const auto star = m.find('*');
  if (star != std::string::npos && star + 1 != m.size())
    ctx.fail(pointer, "\"" + m + "\": '*' may only end a method pattern, as in \"notifications/*\"");
  if (std::any_of(m.begin(), m.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; }))
    ctx.fail(pointer, "a method has no control characters");
}

// A ref pattern: what git's check-ref-format accepts, with '*' standing for a run of
// characters within one component, or the rest of the ref as the last character (the
// `*` of path patterns). Anything else could never match a ref git would update.
void check_ref_pattern(const LoadContext& ctx, const std::string& r, const std::string& pointer) {
  auto bad = [&](const std::string& why) { ctx.fail(pointer, "\"" + r + "\" is not a ref pattern: " + why); };
  if (!r.starts_with("refs/")) bad("it must start with refs/, as in refs/heads/agent/*");
  if (r.ends_with("/") || r.ends_with(".lock") || r.ends_with(".")) bad("a ref does not end with '/', '.' or .lock");
  if (r.find("..") != std::string::npos || r.find("//") != std::string::npos || r.find("@{") != std::string::npos ||
      r.find("/.") != std::string::npos)
    bad("a ref has no '..', '//', '@{' or component starting with '.'");
  if (std::any_of(r.begin(), r.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u < 0x20 || u == 0x7f || c == ' ' || c == '~' || c == '^' || c == ':' || c == '?' || c == '[' ||
               c == '\\';
      }))
    bad("a ref has no space, control character, '~', '^', ':', '?', '[' or '\\'");
}

std::vector<std::string> pattern_list(const LoadContext& ctx, const nlohmann::json& v, const std::string& pointer,
                                      void (*check)(const LoadContext&, const std::string&, const std::string&)) {
  ctx.expect_array(v, pointer);
  if (v.empty()) ctx.fail(pointer, "must not be empty");
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < v.size(); ++i)
    ctx.keep_going([&] {
      const std::string& s = ctx.expect_string(v[i], child(pointer, i));
      check(ctx, s, child(pointer, i));
      if (!seen.insert(s).second) ctx.fail(child(pointer, i), "\"" + s + "\" is listed twice");
      out.push_back(s);
    });
  return out;
}

JsonRpcRules read_jsonrpc(const LoadContext& ctx, const nlohmann::json& j, const std::string& pointer) {
  ctx.expect_object(j, pointer);
  ctx.check_keys(j, pointer, {"methods", "tools"});
  if (!j.contains("methods") && !j.contains("tools"))
    ctx.fail(pointer, "name \"methods\", \"tools\" or both (an empty jsonrpc would check nothing)");
  JsonRpcRules out;
  if (auto it = j.find("methods"); it != j.end())
    ctx.keep_going([&] { out.methods = pattern_list(ctx, *it, child(pointer, "methods"), check_method_pattern); });
  auto tools = j.find("tools");
  if (tools == j.end()) return out;
  const std::string tp = child(pointer, "tools");
  ctx.expect_object(*tools, tp);
  if (tools->empty()) ctx.fail(tp, "must name at least one tool (leave the key out to allow any tool)");
  out.tools_given = true;
  if (!out.methods.empty() && std::none_of(out.methods.begin(), out.methods.end(), [](const std::string& m) {
        return path_matches(m, "tools/call");
      }))
    ctx.keep_going([&] {
      ctx.fail(tp, "tools are called with the method tools/call, which \"methods\" does not allow: add it there");
    });
  for (const auto& item : tools->items()) {
    // Named, not a structured binding: clang before 16 cannot capture a binding in a lambda.
    const std::string& name = item.key();
    const nlohmann::json& spec = item.value();
    const std::string at = child(tp, name);
    ctx.keep_going([&] {
      ctx.expect_object(spec, at);
      ctx.check_keys(spec, at, {"arguments"});
      JsonRpcRules::Tool tool;
      tool.name = name;
      if (auto a = spec.find("arguments"); a != spec.end()) {
        tool.arguments = compile_schema(ctx, *a, child(at, "arguments"));
        tool.arguments_written = a->dump();
      }
      out.tools.push_back(std::move(tool));
    });
  }
  return out;
}

GitRules read_git(const LoadContext& ctx, const nlohmann::json& j, const std::string& pointer) {
  ctx.expect_object(j, pointer);
  ctx.check_keys(j, pointer, {"push", "force", "delete"});
  GitRules out;
  auto push = j.find("push");
  if (push == j.end()) ctx.fail(pointer, "a git rule needs \"push\": the refs it may update, as [\"refs/heads/agent/*\"]");
  ctx.keep_going([&] { out.push = pattern_list(ctx, *push, child(pointer, "push"), check_ref_pattern); });
  if (auto it = j.find("force"); it != j.end())
    ctx.keep_going([&] { out.force = expect_bool(ctx, *it, child(pointer, "force")); });
  if (auto it = j.find("delete"); it != j.end())
    ctx.keep_going([&] { out.remove = expect_bool(ctx, *it, child(pointer, "delete")); });
  return out;
}

std::size_t read_window(const LoadContext& ctx, const nlohmann::json& v, const std::string& pointer) {
  const std::string expected = "must be a size from 1 to 16M, such as \"1M\" or 65536, not ";
  std::string text;
  if (v.is_number_unsigned() || v.is_number_integer()) text = v.dump();
  else if (v.is_string()) text = v.get<std::string>();
  else ctx.fail(pointer, expected + json_kind(v));
  const auto n = parse_size(text);
  if (!n || *n == 0 || *n > kMaxBodyWindow) ctx.fail(pointer, expected + v.dump());
  return static_cast<std::size_t>(*n);
}

// Methods whose requests carry no body a server reads: a body rule on them would refuse
// every request (or check what nobody reads).
bool bodyless(const std::string& m) {
  return m == "GET" || m == "HEAD" || m == "OPTIONS" || m == "TRACE" || m == "CONNECT";
}

// Where the rule may match, against what the body keys need.
void check_fit(const LoadContext& ctx, const nlohmann::json& j, const std::string& pointer, const RequestRule& rule) {
  if (!rule.allow)
    ctx.keep_going([&] {
      ctx.fail(pointer, "a rule with \"action\": \"deny\" refuses whatever the body says; body checks belong on an "
                        "allow rule");
    });
  if (j.contains("git")) {
    const std::string gp = child(pointer, "git");
    if (j.contains("jsonrpc") || j.contains("body_schema"))
      ctx.keep_going([&] { ctx.fail(gp, "a push's body is git's, not JSON: put jsonrpc or body_schema on another rule"); });
    if (rule.methods.size() != 1 || rule.methods[0] != "POST")
      ctx.keep_going([&] {
        ctx.fail(gp, "a git rule checks receive-pack POSTs: its rule needs \"methods\": [\"POST\"] (the push's "
                     "GET .../info/refs needs a rule of its own)");
      });
    if (!j.contains("paths"))
      ctx.keep_going([&] {
        ctx.fail(gp, "a git rule needs \"paths\" ending in /git-receive-pack, as in \"/acme/*/git-receive-pack\"");
      });
    for (std::size_t i = 0; i < rule.paths.size(); ++i)
      if (!rule.paths[i].ends_with("/git-receive-pack"))
        ctx.keep_going([&] {
          ctx.fail(child(child(pointer, "paths"), i),
                   "\"" + rule.paths[i] + "\" could match other requests than a push: a git rule's paths end in "
                   "/git-receive-pack");
        });
  } else {
    const std::string key = j.contains("jsonrpc") ? "jsonrpc" : "body_schema";
    if (!j.contains("methods"))
      ctx.keep_going([&] {
        ctx.fail(child(pointer, key), "a rule that checks JSON bodies needs \"methods\" (such as [\"POST\"]): without "
                                      "them it would refuse every GET, which has no body");
      });
    for (std::size_t i = 0; i < rule.methods.size(); ++i)
      if (bodyless(rule.methods[i]))
        ctx.keep_going([&] {
          ctx.fail(child(child(pointer, "methods"), i),
                   rule.methods[i] + " carries no body to check; give it a rule of its own without " + key);
        });
  }
}

}  // namespace

std::shared_ptr<const BodyRules> read_body_rules(const LoadContext& ctx, const nlohmann::json& j,
                                                 const std::string& pointer, const RequestRule& rule) {
  const bool any = j.contains("jsonrpc") || j.contains("body_schema") || j.contains("git");
  if (!any) {
    if (j.contains("body_window"))
      ctx.fail(child(pointer, "body_window"), "body_window bounds the body checks jsonrpc, body_schema and git, and "
                                              "this rule has none", true);
    return nullptr;
  }
  auto body = std::make_shared<BodyRules>();
  if (auto it = j.find("jsonrpc"); it != j.end())
    ctx.keep_going([&] { body->jsonrpc = read_jsonrpc(ctx, *it, child(pointer, "jsonrpc")); });
  if (auto it = j.find("body_schema"); it != j.end())
    ctx.keep_going([&] {
      body->body_schema = compile_schema(ctx, *it, child(pointer, "body_schema"));
      body->body_schema_written = it->dump();
    });
  if (auto it = j.find("git"); it != j.end())
    ctx.keep_going([&] {
      body->git = read_git(ctx, *it, child(pointer, "git"));
      body->window = kDefaultGitBodyWindow;
    });
  if (auto it = j.find("body_window"); it != j.end())
    ctx.keep_going([&] { body->window = read_window(ctx, *it, child(pointer, "body_window")); });
  check_fit(ctx, j, pointer, rule);
  return body;
}

}  // namespace netbox::policy::detail
