// `netbox policy check --host H --method M --path P [--body FILE]` and `--explain` (issues
// 27 and 28): the real binary on real files answers what the proxy decides for one request,
// its body included (a JSON-RPC batch, a JSON body against a schema, a push made by real
// git), exits 1 when it would be refused, and lists each host's rules with their body parts.
#include "support/git_repo.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include <cstdio>

using netbox::test::run;
using netbox::test::run_netbox;
using netbox::test::GitRepo;
using netbox::test::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

const char* kPolicy = R"({
  "version": 1,
  "allow": ["tools.example.test", "mail.example.test", "git.example.test", "plain.example.test"],
  "inspect": ["tools.example.test", "mail.example.test", "git.example.test"],
  "rules": [
    {"host": "tools.example.test", "methods": ["POST"], "paths": ["/mcp"], "action": "allow",
     "jsonrpc": {"methods": ["initialize", "notifications/*", "tools/call"],
                 "tools": {"search": {"arguments": {"type": "object", "properties": {"q": {"type": "string"}},
                                                    "additionalProperties": false}}}}},
    {"host": "mail.example.test", "methods": ["POST"], "paths": ["/send"], "action": "allow",
     "body_schema": {"type": "object", "required": ["to"],
                     "properties": {"to": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+@example\\.test$"}}}}},
    {"host": "git.example.test", "methods": ["GET"], "paths": ["/acme/*/info/refs"], "action": "allow"},
    {"host": "git.example.test", "methods": ["POST"], "paths": ["/acme/*/git-receive-pack"], "action": "allow",
     "git": {"push": ["refs/heads/agent/*"]}},
    {"host": "plain.example.test", "methods": ["GET"], "paths": ["/docs/*"], "action": "allow"}
  ]
})";

class PolicyRequest : public ::testing::Test {
 protected:
  void SetUp() override { policy_ = dir_.write("p.json", kPolicy).string(); }

  netbox::test::RunResult check(std::vector<std::string> args) {
    args.insert(args.begin(), {"policy", "check", policy_});
    return run_netbox(args);
  }
  netbox::test::RunResult request(const std::string& host, const std::string& method, const std::string& path,
                                  const std::string& body = {}, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"--host", host, "--method", method, "--path", path};
    if (!body.empty()) args.insert(args.end(), {"--body", dir_.write("body-" + std::to_string(++bodies_), body).string()});
    args.insert(args.end(), extra.begin(), extra.end());
    return check(args);
  }

  TempDir dir_;
  std::string policy_;
  int bodies_ = 0;
};

std::string call(int id, const std::string& tool, const std::string& args) {
  return R"({"jsonrpc": "2.0", "id": )" + std::to_string(id) + R"(, "method": "tools/call", "params": {"name": ")" +
         tool + R"(", "arguments": )" + args + "}}";
}

TEST_F(PolicyRequest, MethodAndPathAreDecidedByTheRulesAndRefusalExitsOne) {
  auto ok = request("plain.example.test", "GET", "/docs/a/../b", {}, {"--port", "80"});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("request GET /docs/b: allow"));
  EXPECT_THAT(ok.out, HasSubstr("rules[4] plain.example.test GET /docs/*"));

  auto denied = request("plain.example.test", "POST", "/docs/a", {}, {"--port", "80"});
  EXPECT_EQ(denied.exit_code, 1) << denied.out;
  EXPECT_THAT(denied.out, HasSubstr("no entry of rules allows POST /docs/a on plain.example.test"));

  auto ambiguous = request("plain.example.test", "GET", "/docs/%2e%2e/secret", {}, {"--port", "80"});
  EXPECT_EQ(ambiguous.exit_code, 1);
  EXPECT_THAT(ambiguous.out, HasSubstr("the path is refused"));

  // Over HTTPS a host rules name must be inspected: the tunnel is refused first.
  auto tunnel = request("plain.example.test", "GET", "/docs/a");
  EXPECT_EQ(tunnel.exit_code, 1);
  EXPECT_THAT(tunnel.out, HasSubstr("https tunnel: deny"));
  EXPECT_THAT(tunnel.out, HasSubstr("add it to inspect"));

  auto expect = request("plain.example.test", "POST", "/docs/a", {}, {"--port", "80", "--expect", "deny"});
  EXPECT_EQ(expect.exit_code, 0) << "--expect decides the status when given";
}

TEST_F(PolicyRequest, AJsonRpcBatchHidingABadCallIsRefused) {
  const std::string good = "[" + call(1, "search", R"({"q": "a"})") + R"(, {"jsonrpc": "2.0", "method": "notifications/initialized"}])";
  auto ok = request("tools.example.test", "POST", "/mcp", good);
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("body: allow"));

  const std::string bad = "[" + call(1, "search", R"({"q": "a"})") + ", " + call(2, "run_shell", R"({"cmd": "id"})") + "]";
  auto refused = request("tools.example.test", "POST", "/mcp", bad);
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_THAT(refused.out, HasSubstr("body: deny"));
  EXPECT_THAT(refused.out, HasSubstr("calls the tool run_shell, which is not in jsonrpc.tools (search)"));
  EXPECT_THAT(refused.out, HasSubstr("at:     /1/params/name"));

  auto json = request("tools.example.test", "POST", "/mcp", bad, {"--format", "json"});
  EXPECT_EQ(json.exit_code, 1);
  const auto out = nlohmann::json::parse(json.out);
  const auto& body = out["decision"]["steps"].back();
  EXPECT_EQ(body["stage"], "body");
  EXPECT_EQ(body["at"], "/1/params/name");
  ASSERT_TRUE(body["answer"].is_array()) << "the JSON-RPC error body the client would get";
  EXPECT_EQ(body["answer"][1]["error"]["code"], -32001);

  auto argument = request("tools.example.test", "POST", "/mcp", call(3, "search", R"({"q": "a", "extra": 1})"));
  EXPECT_EQ(argument.exit_code, 1);
  EXPECT_THAT(argument.out, HasSubstr("at:     /params/arguments/extra"));

  auto method = request("tools.example.test", "POST", "/mcp", R"({"jsonrpc": "2.0", "id": 1, "method": "resources/read"})");
  EXPECT_EQ(method.exit_code, 1);
  EXPECT_THAT(method.out, HasSubstr("the method resources/read, which is not in jsonrpc.methods"));
}

TEST_F(PolicyRequest, ASchemaRefusalNamesItsPointer) {
  auto ok = request("mail.example.test", "POST", "/send", R"({"to": ["ann@example.test"]})");
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  auto refused = request("mail.example.test", "POST", "/send", R"({"to": ["ann@example.test", "eve@evil.test"]})");
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_THAT(refused.out, HasSubstr("does not match body_schema"));
  EXPECT_THAT(refused.out, HasSubstr("at:     /to/1"));
  auto typed = request("mail.example.test", "POST", "/send", R"({"to": ["ann@example.test"]})",
                       {"--content-type", "application/x-www-form-urlencoded"});
  EXPECT_EQ(typed.exit_code, 1) << "a body the server would not read as JSON is refused";
  EXPECT_THAT(typed.out, HasSubstr("not JSON"));
}

TEST_F(PolicyRequest, WithoutABodyTheRuleThatChecksItIsNamed) {
  auto r = request("tools.example.test", "POST", "/mcp");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("checks the body too: pass --body FILE"));
}

// A push body made by real git: the command pkt-line and the thin pack of what the server
// lacks, as `git push` sends it over smart HTTP.
class PolicyGitPush : public PolicyRequest {
 protected:
  std::string git(std::vector<std::string> args, const std::string& input = {}) { return repo_.git(std::move(args), input); }
  std::string commit(const std::string& message) { return repo_.commit(message); }
  std::string push_body(const std::string& old_id, const std::string& new_id, const std::string& ref) {
    return repo_.push_body(old_id, new_id, ref);
  }
  static inline const std::string& kZero = GitRepo::kZero;
  GitRepo repo_;
};

TEST_F(PolicyGitPush, OnlyTheAgentsBranchMayBePushed) {
  const std::string a = commit("a");
  const std::string b = commit("b");
  auto ok = request("git.example.test", "POST", "/acme/app.git/git-receive-pack", push_body(a, b, "refs/heads/agent/x"));
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("body: allow"));

  auto main = request("git.example.test", "POST", "/acme/app.git/git-receive-pack", push_body(a, b, "refs/heads/main"));
  EXPECT_EQ(main.exit_code, 1) << main.out;
  EXPECT_THAT(main.out, HasSubstr("refs/heads/main is not one of the refs this rule lets the agent push"));
  EXPECT_THAT(main.out, HasSubstr("at:     refs/heads/main"));

  auto deletion = request("git.example.test", "POST", "/acme/app.git/git-receive-pack", push_body(b, kZero, "refs/heads/agent/x"));
  EXPECT_EQ(deletion.exit_code, 1);
  EXPECT_THAT(deletion.out, HasSubstr("deleting refs/heads/agent/x is not allowed"));

  git({"reset", "-q", "--hard", a});
  const std::string rewritten = commit("b, rewritten");
  auto force = request("git.example.test", "POST", "/acme/app.git/git-receive-pack",
                       push_body(b, rewritten, "refs/heads/agent/x"));
  EXPECT_EQ(force.exit_code, 1);
  EXPECT_THAT(force.out, HasSubstr("is not shown to be a fast-forward"));
}

TEST_F(PolicyRequest, ExplainListsEachHostsRulesWithTheirBodyParts) {
  auto r = check({"--explain"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("host tools.example.test (inspected)"));
  EXPECT_THAT(r.out, HasSubstr("jsonrpc methods: initialize, notifications/*, tools/call"));
  EXPECT_THAT(r.out, HasSubstr("jsonrpc tool search: arguments {"));
  EXPECT_THAT(r.out, HasSubstr("body_schema: {"));
  EXPECT_THAT(r.out, HasSubstr("git push: refs/heads/agent/*; force pushes refused; deletions refused"));
  EXPECT_THAT(r.out, HasSubstr("host plain.example.test (not inspected"));
  auto json = check({"--explain", "--format", "json"});
  const auto out = nlohmann::json::parse(json.out);
  EXPECT_EQ(out["rules"][0]["hosts"][2]["rules"][1]["body"]["git"]["push"][0], "refs/heads/agent/*");
}

// The proxy checks bodies (issue 28): a policy with body rules is no longer warned about.
TEST_F(PolicyRequest, APolicyWithBodyRulesIsNotWarnedAbout) {
  auto r = check({});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "");
  TempDir other;
  auto plain = run_netbox({"policy", "check", other.write("q.json", R"({"version": 1, "allow": ["a.test"]})").string()});
  EXPECT_EQ(plain.err, "");
}

TEST_F(PolicyRequest, UnsupportedSchemaKeywordsAndBadRefsAreRefusedWithLineAndColumn) {
  auto file = dir_.write("bad.json", R"({"version": 1, "allow": ["h.test"],
"rules": [{"host": "h.test", "methods": ["POST"], "action": "allow",
           "body_schema": {"anyOf": [{"type": "string"}]}},
          {"host": "h.test", "methods": ["POST"], "paths": ["/r/git-receive-pack"], "action": "allow",
           "git": {"push": ["main"]}}]})");
  auto r = run_netbox({"policy", "check", file.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(file.string() + ":3:37: /rules/0/body_schema/anyOf: \"anyOf\" is a keyword netbox does not check"));
  EXPECT_THAT(r.err, HasSubstr(file.string() + ":5:29: /rules/1/git/push/0: \"main\" is not a ref pattern"));
  EXPECT_EQ(r.out, "");
}

TEST_F(PolicyRequest, BadFlagsAreUsageErrors) {
  auto no_path = check({"--host", "tools.example.test", "--method", "POST"});
  EXPECT_EQ(no_path.exit_code, 2);
  auto no_host = check({"--method", "POST", "--path", "/mcp"});
  EXPECT_EQ(no_host.exit_code, 2);
  auto missing = check({"--host", "tools.example.test", "--method", "POST", "--path", "/mcp", "--body",
                        (dir_.path() / "absent").string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("cannot be read"));
  auto agent = check({"--agent", "x"});
  EXPECT_EQ(agent.exit_code, 2);
}

}  // namespace
