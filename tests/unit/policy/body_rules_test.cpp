// The body keys of a `rules` entry (issue 28): jsonrpc, body_schema, git and body_window,
// loaded (each mistake named with its line and column) and applied by check_body to the
// bodies an agent sends: JSON-RPC batches, JSON bodies against a schema, and pushes made
// by real git.
#include "netbox/policy/body_rules.hpp"
#include "netbox/policy/decide_request.hpp"
#include "netbox/policy/load.hpp"

#include "support/git_repo.hpp"
#include "support/hand_pack.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>

#include <cstdio>

namespace netbox::policy {
namespace {

using ::testing::HasSubstr;

const char* kPolicy = R"({
  "version": 1,
  "allow": ["tools.example.test", "mail.example.test", "git.example.test"],
  "inspect": ["tools.example.test", "mail.example.test", "git.example.test"],
  "rules": [
    {"host": "tools.example.test", "methods": ["POST"], "paths": ["/mcp"], "action": "allow",
     "jsonrpc": {"methods": ["initialize", "notifications/*", "tools/list", "tools/call"],
                 "tools": {"search": {"arguments": {"type": "object", "required": ["q"],
                                                    "properties": {"q": {"type": "string", "maxLength": 100}},
                                                    "additionalProperties": false}},
                           "read_file": {}}}},
    {"host": "mail.example.test", "methods": ["POST"], "paths": ["/send"], "action": "allow", "body_window": "1k",
     "body_schema": {"type": "object", "required": ["to", "body"],
                     "properties": {"to": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+@example\\.test$"}},
                                    "body": {"type": "string"}}}},
    {"host": "git.example.test", "methods": ["GET"], "paths": ["/acme/*/info/refs"], "action": "allow"},
    {"host": "git.example.test", "methods": ["POST"], "paths": ["/acme/*/git-receive-pack"], "action": "allow",
     "git": {"push": ["refs/heads/agent/*"]}}
  ]
})";

const Policy& policy() {
  static const Policy p = parse_policy(kPolicy, "p.json");
  return p;
}
const RequestRule& rule(std::size_t i) { return policy().base.rules.at(i); }

std::vector<std::string> problems(const std::string& json) {
  try {
    parse_policy(json, "p.json");
  } catch (const PolicyError& e) {
    std::vector<std::string> out;
    for (const auto& p : e.problems())
      out.push_back(std::to_string(p.line) + ":" + std::to_string(p.column) + ": " + p.json_path + ": " + p.message);
    return out;
  }
  ADD_FAILURE() << "accepted: " << json;
  return {};
}

// A one-rule policy for mistakes: `rule_text` is the rest of the rules entry, with its "}".
std::string with_rule(const std::string& rule_text) {
  return "{\"version\": 1, \"allow\": [\"h.test\"], \"inspect\": [\"h.test\"],\n \"rules\": [{\"host\": \"h.test\", " +
         rule_text + "]}";
}

BodyCheck mcp(const std::string& body) { return check_body(rule(0), "application/json", body); }

std::string call(int id, const std::string& tool, const std::string& args) {
  return R"({"jsonrpc": "2.0", "id": )" + std::to_string(id) + R"(, "method": "tools/call", "params": {"name": ")" +
         tool + R"(", "arguments": )" + args + "}}";
}

TEST(BodyRules, LoadIntoTheRuleEntry) {
  const RequestRule& r = rule(0);
  ASSERT_TRUE(r.body);
  ASSERT_TRUE(r.body->jsonrpc);
  EXPECT_EQ(r.body->jsonrpc->methods.size(), 4u);
  ASSERT_EQ(r.body->jsonrpc->tools.size(), 2u);
  EXPECT_TRUE(r.body->jsonrpc->tools[1].arguments.has_value() || r.body->jsonrpc->tools[0].arguments.has_value());
  EXPECT_EQ(body_window(r), kDefaultBodyWindow);
  EXPECT_EQ(body_window(rule(1)), 1024u);
  EXPECT_EQ(body_window(rule(3)), kDefaultGitBodyWindow);
  EXPECT_FALSE(rule(2).body);
  EXPECT_EQ(body_window(rule(2)), 0u);
  ASSERT_TRUE(rule(3).body->git);
  EXPECT_FALSE(rule(3).body->git->force);
  EXPECT_FALSE(rule(3).body->git->remove);
}

TEST(BodyRules, AnAllowedToolCallPasses) {
  const BodyCheck c = mcp(call(1, "search", R"({"q": "netbox"})"));
  EXPECT_FALSE(c.refused()) << c.decision.reason;
  EXPECT_EQ(c.decision.verdict, Verdict::allow);
  EXPECT_FALSE(mcp(R"({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})").refused());
  EXPECT_FALSE(mcp(R"({"jsonrpc": "2.0", "method": "notifications/initialized"})").refused());
  EXPECT_FALSE(mcp(call(2, "read_file", R"({"path": "/anything"})")).refused()) << "a tool without a schema";
}

TEST(BodyRules, AnotherToolIsRefusedWithAJsonRpcError) {
  const BodyCheck c = mcp(call(7, "delete_repo", "{}"));
  ASSERT_TRUE(c.refused());
  EXPECT_EQ(c.status, 403u);
  EXPECT_EQ(c.where, "/params/name");
  EXPECT_THAT(c.decision.reason, HasSubstr("calls the tool delete_repo, which is not in jsonrpc.tools (read_file, search)"));
  EXPECT_EQ(c.decision.rule, rule(0).cite());
  EXPECT_EQ(c.content_type, "application/json");
  const auto answer = nlohmann::json::parse(c.answer);
  EXPECT_EQ(answer["jsonrpc"], "2.0");
  EXPECT_EQ(answer["id"], 7);
  EXPECT_EQ(answer["error"]["code"], -32001);
  EXPECT_THAT(answer["error"]["message"].get<std::string>(), HasSubstr("delete_repo"));
}

TEST(BodyRules, AMethodOutsideTheListIsRefused) {
  const BodyCheck c = mcp(R"({"jsonrpc": "2.0", "id": "a", "method": "resources/read", "params": {"uri": "file:///etc/passwd"}})");
  ASSERT_TRUE(c.refused());
  EXPECT_EQ(c.where, "/method");
  EXPECT_THAT(c.decision.reason, HasSubstr("the method resources/read, which is not in jsonrpc.methods"));
}

TEST(BodyRules, ABadArgumentNamesItsPointer) {
  const BodyCheck c = mcp(call(3, "search", R"({"q": "x", "exfil": "secret"})"));
  ASSERT_TRUE(c.refused());
  EXPECT_EQ(c.where, "/params/arguments/exfil");
  EXPECT_THAT(c.decision.reason, HasSubstr("(at /params/arguments/exfil)"));
  const BodyCheck missing = mcp(R"({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "search"}})");
  ASSERT_TRUE(missing.refused()) << "absent arguments are {} to the server, which lacks the required q";
  EXPECT_THAT(missing.decision.reason, HasSubstr("required"));
}

TEST(BodyRules, ABatchHidingABadCallIsRefusedWhole) {
  const std::string batch = "[" + call(1, "search", R"({"q": "a"})") + ", " +
                            R"({"jsonrpc": "2.0", "method": "notifications/progress"})" + ", " +
                            call(3, "shell", R"({"cmd": "curl evil"})") + "]";
  const BodyCheck c = mcp(batch);
  ASSERT_TRUE(c.refused());
  EXPECT_EQ(c.where, "/2/params/name");
  EXPECT_THAT(c.decision.reason, HasSubstr("the call at /2 calls the tool shell"));
  const auto answer = nlohmann::json::parse(c.answer);
  ASSERT_TRUE(answer.is_array()) << "a batch gets an error per request";
  EXPECT_EQ(answer.size(), 2u);
  EXPECT_FALSE(mcp("[" + call(1, "search", R"({"q": "a"})") + ", " + call(2, "read_file", "{}") + "]").refused());
}

TEST(BodyRules, AnUnreadableOrAmbiguousBodyIsRefused) {
  EXPECT_TRUE(mcp(R"({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "method": "initialize"})").refused())
      << "duplicate keys: servers disagree on which wins";
  EXPECT_TRUE(mcp("not json").refused());
  EXPECT_TRUE(mcp("").refused());
  EXPECT_TRUE(check_body(rule(0), "text/plain", call(1, "search", R"({"q": "a"})")).refused());
  EXPECT_TRUE(check_body(rule(0), "application/json; charset=latin1", call(1, "search", R"({"q": "a"})")).refused());
  EXPECT_FALSE(check_body(rule(0), "Application/JSON; charset=UTF-8", call(1, "search", R"({"q": "a"})")).refused());
  const BodyCheck bad = mcp(R"({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search"}, "x": 1})");
  ASSERT_TRUE(bad.refused());
  EXPECT_EQ(nlohmann::json::parse(bad.answer)["error"]["code"], -32600);
}

TEST(BodyRules, BodySchemaRefusalsNameTheFirstFailingPointer) {
  const RequestRule& mail = rule(1);
  EXPECT_FALSE(check_body(mail, "application/json", R"({"to": ["ann@example.test"], "body": "hi"})").refused());
  const BodyCheck c = check_body(mail, "application/json", R"({"to": ["ann@example.test", "eve@evil.test"], "body": "hi"})");
  ASSERT_TRUE(c.refused());
  EXPECT_EQ(c.status, 403u);
  EXPECT_EQ(c.where, "/to/1");
  EXPECT_THAT(c.decision.reason, HasSubstr("body_schema"));
  EXPECT_THAT(c.decision.reason, HasSubstr("(at /to/1)"));
  EXPECT_TRUE(c.answer.empty()) << "not a JSON-RPC rule: the proxy's own refusal";
  EXPECT_EQ(check_body(mail, "application/json", R"({"to": []})").where, "");
}

TEST(BodyRules, ABodyOverTheWindowIsRefusedNotPassed) {
  const std::string big = R"({"to": ["ann@example.test"], "body": ")" + std::string(2000, 'a') + "\"}";
  const BodyCheck c = check_body(rule(1), "application/json", big);
  ASSERT_TRUE(c.refused());
  EXPECT_EQ(c.status, 413u);
  EXPECT_THAT(c.decision.reason, HasSubstr("over the body_window of 1024 bytes"));
}

TEST(BodyRules, ReportModeReportsWhatWouldBeRefused) {
  const BodyCheck c = check_body(rule(0), "application/json", call(1, "shell", "{}"), Mode::report);
  EXPECT_FALSE(c.refused());
  EXPECT_EQ(c.decision.verdict, Verdict::report);
  EXPECT_THAT(c.decision.reason, HasSubstr("shell"));
}

TEST(BodyRules, ARuleWithoutBodyChecksAllowsAnyBody) {
  EXPECT_FALSE(check_body(rule(2), "", "anything").refused());
}

// A caller that cannot read bodies gets a request a body rule would allow refused, not
// let through unchecked; a caller that checks bodies (the proxy) gets the rule to check them with.
TEST(BodyRules, DecideRequestNeverLetsABodyRuleGoUnchecked) {
  const Decision host{Verdict::allow, "allow[0] tools.example.test", ""};
  const std::string name = "tools.example.test";
  const Admitted admitted{name, 443, host};
  const RequestDecision unchecked = decide_request(policy().base, admitted, "POST", "/mcp");
  EXPECT_EQ(unchecked.status, 403u);
  EXPECT_THAT(unchecked.decision.reason, HasSubstr("does not check request bodies, so it is refused rather than forwarded unchecked"));
  const RequestDecision checked = decide_request(policy().base, admitted, "POST", "/mcp", BodyChecks::caller_checks);
  EXPECT_FALSE(checked.refused());
  EXPECT_EQ(checked.body_rule, &rule(0));
  const std::string git = "git.example.test";
  const RequestDecision refs = decide_request(policy().base, Admitted{git, 443, host}, "GET", "/acme/x/info/refs");
  EXPECT_FALSE(refs.refused()) << "a rule without body checks is not affected";
  EXPECT_EQ(refs.body_rule, nullptr);
}

TEST(BodyRules, MistakesAreRefusedNamingTheKeyWithLineAndColumn) {
  using ::testing::ElementsAre;
  using ::testing::StartsWith;
  EXPECT_THAT(problems(with_rule(R"("methods": ["POST"], "action": "allow",
   "body_schema": {"type": "object", "oneOf": [{}]}})")),
              ElementsAre(AllOf(StartsWith("3:47: /rules/0/body_schema/oneOf: "), HasSubstr("oneOf"))));
  EXPECT_THAT(problems(with_rule(R"("methods": ["POST"], "action": "allow", "body_schema": {"pattern": "(a"}})")),
              ElementsAre(StartsWith("2:98: /rules/0/body_schema/pattern: ")));
  EXPECT_THAT(problems(with_rule(R"("methods": ["POST"], "action": "allow",
   "jsonrpc": {"tools": {"x": {"arguments": {"type": "objekt"}}}}})")),
              ElementsAre(StartsWith("3:54: /rules/0/jsonrpc/tools/x/arguments/type: ")));
  EXPECT_THAT(problems(with_rule(R"("methods": ["POST"], "action": "allow", "jsonrpc": {"methods": ["initialize"], "tools": {"x": {}}}})")),
              ElementsAre(HasSubstr("/rules/0/jsonrpc/tools: tools are called with the method tools/call")));
  EXPECT_THAT(problems(with_rule(R"("methods": ["POST"], "action": "allow", "jsonrpc": {}})")),
              ElementsAre(HasSubstr("/rules/0/jsonrpc: name \"methods\", \"tools\" or both")));
  EXPECT_THAT(problems(with_rule(R"("methods": ["POST"], "action": "allow", "jsonrpc": {"method": ["a"]}})")),
              ElementsAre(HasSubstr("name \"methods\""), HasSubstr("unknown key 'method'; did you mean 'methods'?")));
  EXPECT_THAT(problems(with_rule(R"("action": "allow", "body_schema": {}})")),
              ElementsAre(HasSubstr("/rules/0/body_schema: a rule that checks JSON bodies needs \"methods\"")));
  EXPECT_THAT(problems(with_rule(R"("methods": ["GET", "POST"], "action": "allow", "body_schema": {}})")),
              ElementsAre(HasSubstr("/rules/0/methods/0: GET carries no body")));
  EXPECT_THAT(problems(with_rule(R"("methods": ["POST"], "action": "deny", "body_schema": {}})")),
              ElementsAre(HasSubstr("body checks belong on an allow rule")));
  EXPECT_THAT(problems(with_rule(R"("methods": ["POST"], "action": "allow", "body_window": "1M"})")),
              ElementsAre(HasSubstr("/rules/0/body_window: body_window bounds the body checks")));
  EXPECT_THAT(problems(with_rule(R"("methods": ["POST"], "action": "allow", "body_schema": {}, "body_window": "17M"})")),
              ElementsAre(HasSubstr("/rules/0/body_window: must be a size from 1 to 16M")));
  // git: the ref patterns, and a rule that could match anything but a receive-pack POST.
  EXPECT_THAT(problems(with_rule(R"("methods": ["POST"], "paths": ["/a/git-receive-pack"], "action": "allow",
   "git": {"push": ["heads/agent/*", "refs/heads/a..b", "refs/heads/x y"]}})")),
              ElementsAre(StartsWith("3:21: /rules/0/git/push/0: \"heads/agent/*\" is not a ref pattern"),
                          HasSubstr("/rules/0/git/push/1: "), HasSubstr("/rules/0/git/push/2: ")));
  EXPECT_THAT(problems(with_rule(R"("paths": ["/a/*"], "action": "allow", "git": {"push": ["refs/heads/x"]}})")),
              ElementsAre(HasSubstr("/rules/0/paths/0: \"/a/*\" could match other requests than a push"),
                          HasSubstr("/rules/0/git: a git rule checks receive-pack POSTs")));
  EXPECT_THAT(problems(with_rule(R"("methods": ["POST"], "action": "allow", "git": {"push": ["refs/heads/x"], "force": "no"}})")),
              ElementsAre(HasSubstr("/rules/0/git: a git rule needs \"paths\""),
                          HasSubstr("/rules/0/git/force: must be true or false")));
  EXPECT_THAT(problems(with_rule(R"("methods": ["POST"], "paths": ["/a/git-receive-pack"], "action": "allow",
   "git": {"push": ["refs/heads/x"]}, "body_schema": {}})")),
              ElementsAre(HasSubstr("a push's body is git's, not JSON")));
}

// Pushes made by real git: the commands `git push` sends and the pack of what the server
// lacks, as send-pack makes it (thin).
class GitRule : public ::testing::Test {
 protected:
  std::string git(std::vector<std::string> args, const std::string& input = {}) { return repo_.git(std::move(args), input); }
  std::string commit(const std::string& message) { return repo_.commit(message); }
  static std::string pkt(const std::string& payload) { return test::GitRepo::pkt(payload); }
  std::string body(const std::string& old_id, const std::string& new_id, const std::string& ref) {
    return repo_.push_body(old_id, new_id, ref);
  }
  BodyCheck push(const std::string& text) { return check_body(rule(3), "application/x-git-receive-pack-request", text); }

  static inline const std::string& kZero = test::GitRepo::kZero;
  test::GitRepo repo_;
};

TEST_F(GitRule, APushToTheAgentsBranchPasses) {
  const std::string a = commit("a");
  const std::string b = commit("b");
  EXPECT_FALSE(push(body(a, b, "refs/heads/agent/x")).refused()) << push(body(a, b, "refs/heads/agent/x")).decision.reason;
  EXPECT_FALSE(push(body(kZero, b, "refs/heads/agent/new/deep")).refused()) << "a creation";
}

TEST_F(GitRule, APushToAnotherRefIsRefusedWithGitsOwnText) {
  const std::string a = commit("a");
  const std::string b = commit("b");
  const BodyCheck c = push(body(a, b, "refs/heads/main"));
  ASSERT_TRUE(c.refused());
  EXPECT_EQ(c.status, 200u) << "git prints the report only from a 200";
  EXPECT_EQ(c.content_type, "application/x-git-receive-pack-result");
  EXPECT_EQ(c.where, "refs/heads/main");
  EXPECT_THAT(c.answer, HasSubstr("ng refs/heads/main netbox: refs/heads/main is not one of the refs"));
  EXPECT_THAT(c.decision.reason, HasSubstr("refs/heads/agent/*"));
}

TEST_F(GitRule, ADeletionIsRefused) {
  const std::string a = commit("a");
  const BodyCheck c = push(body(a, kZero, "refs/heads/agent/x"));
  ASSERT_TRUE(c.refused());
  EXPECT_THAT(c.answer, HasSubstr("ng refs/heads/agent/x netbox: deleting refs/heads/agent/x is not allowed"));
}

TEST_F(GitRule, AForcePushIsRefused) {
  const std::string a = commit("a");
  const std::string b = commit("b");
  git({"reset", "-q", "--hard", a});
  const std::string rewritten = commit("b, rewritten");
  const BodyCheck c = push(body(b, rewritten, "refs/heads/agent/x"));
  ASSERT_TRUE(c.refused());
  EXPECT_THAT(c.answer, HasSubstr("is not shown to be a fast-forward"));
  // Fail closed: the commands alone (no pack) cannot show a fast-forward either.
  const std::string no_pack = pkt(a + " " + b + " refs/heads/agent/x" + std::string(1, '\0') + "report-status\n") + "0000";
  EXPECT_TRUE(push(no_pack).refused());
}

// A push is inflated within 8 times its rule's window: a blob of 1 MiB of zeros (a few
// KiB in the pack) passes the default window of a git rule (16M) and is refused under a
// window of 64K, the reason naming the bound.
TEST_F(GitRule, ThePackIsInflatedWithinAMultipleOfTheWindow) {
  test::HandPack pack;
  const std::string tip = pack.add(1, test::HandPack::commit_text({}));
  pack.add(3, std::string(std::size_t{1} << 20, '\0'));
  const std::string text =
      pkt(kZero + " " + tip + " refs/heads/agent/x" + std::string(1, '\0') + "report-status\n") + "0000" + pack.bytes();
  EXPECT_FALSE(push(text).refused()) << push(text).decision.reason;
  RequestRule small = rule(3);
  auto body = std::make_shared<BodyRules>(*small.body);
  body->window = 64 << 10;
  small.body = body;
  const BodyCheck c = check_body(small, "application/x-git-receive-pack-request", text);
  ASSERT_TRUE(c.refused());
  EXPECT_THAT(c.decision.reason, HasSubstr("inflate to more than 524288 bytes"));
}

TEST_F(GitRule, AnUnreadablePushGetsAnErrLine) {
  const BodyCheck c = push("this is not a push");
  ASSERT_TRUE(c.refused());
  EXPECT_EQ(c.status, 200u);
  EXPECT_THAT(c.answer, HasSubstr("ERR netbox: the push cannot be read"));
  EXPECT_TRUE(check_body(rule(3), "application/json", "{}").refused()) << "not a push's content type";
}

}  // namespace
}  // namespace netbox::policy
