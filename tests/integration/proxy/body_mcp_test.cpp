// MCP through inspection (issue 28): a real MCP server over streamable HTTP (a small
// Python one, HTTPS with a certificate of its own) behind an inspected host whose rule
// names the JSON-RPC methods and tools. curl speaks for the agent, trusting only the
// netbox CA. An allowed tool call reaches the server and its SSE answer comes back; a
// call of another tool, a bad argument and a batch hiding a bad call are refused 403 with
// a JSON-RPC error carrying the call's id, and the server's log shows that none of them
// reached it.
#include "proxy_fixture.hpp"

#include "support/background_process.hpp"
#include "support/curl.hpp"
#include "support/process.hpp"

#include "netbox/tls/certificate_authority.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace netbox::test {
namespace {

class McpTest : public ProxyTest {
 protected:
  McpTest() : mcp_port(free_port()) {
    auto ca = tls::CertificateAuthority::create(dir.path() / "ca");
    ca_pem = dir.path() / "netbox-ca.pem";
    std::ofstream(ca_pem) << ca.certificate_pem();
    // The MCP server's own certificate, which the proxy is told to trust.
    cert = dir.path() / "mcp.pem";
    key = dir.path() / "mcp.key";
    auto made = run({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=mcp.test",
                     "-addext", "subjectAltName=DNS:mcp.test", "-keyout", key.string(), "-out", cert.string()});
    EXPECT_EQ(made.exit_code, 0) << made.err;
    calls = dir.path() / "calls.txt";
    std::ofstream(calls).flush();
    server.emplace(std::vector<std::string>{"python3", "-B", (source_dir() / "tests/integration/proxy/mcp_server.py").string(),
                                            std::to_string(mcp_port), calls.string(), cert.string(), key.string()},
                   dir.path() / "mcp.log");
    EXPECT_TRUE(wait_for_port(mcp_port)) << server->log();
    configure = [this](proxy::ProxyOptions& o) {
      o.ca_dir = dir.path() / "ca";
      o.upstream_ca = cert;
    };
    auto j = nlohmann::json::parse(base_policy());
    j["allow"].push_back("mcp.test");
    j["resolve"]["mcp.test"] = {"127.0.0.1"};
    j["ports"] = {mcp_port};
    j["inspect"] = {"mcp.test"};
    j["rules"] = nlohmann::json::parse(R"([
      {"host": "mcp.test", "methods": ["POST"], "paths": ["/mcp"], "action": "allow",
       "jsonrpc": {"methods": ["initialize", "notifications/*", "tools/list", "tools/call"],
                   "tools": {"search": {"arguments": {"type": "object", "required": ["q"],
                                                      "properties": {"q": {"type": "string", "maxLength": 40}},
                                                      "additionalProperties": false}}}}}])");
    policy_json = j.dump();
  }

  // One POST /mcp as an MCP client sends it: its status and body.
  std::pair<int, std::string> call(const std::string& body) {
    auto r = curl_with_status({"-x", "http://127.0.0.1:" + std::to_string(port), "--cacert", ca_pem.string(),
                               "-H", "Content-Type: application/json", "-H", "Accept: application/json, text/event-stream",
                               "--data-binary", body, "https://mcp.test:" + std::to_string(mcp_port) + "/mcp"});
    return {status_of(r), body_of(r)};
  }
  static std::string tool_call(int id, const std::string& tool, const std::string& args) {
    return R"({"jsonrpc": "2.0", "id": )" + std::to_string(id) + R"(, "method": "tools/call", "params": {"name": ")" +
           tool + R"(", "arguments": )" + args + "}}";
  }
  std::string served() const {
    std::ifstream in(calls);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  unsigned short mcp_port;
  std::filesystem::path ca_pem, cert, key, calls;
  std::optional<BackgroundProcess> server;
  std::string policy_json;
};

TEST_F(McpTest, AnAllowedToolCallReachesTheServerAndItsEventStreamComesBack) {
  start_proxy(policy_json);
  auto init = call(R"({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
                       "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})");
  ASSERT_EQ(init.first, 200) << init.second;
  EXPECT_NE(init.second.find("test-mcp"), std::string::npos) << init.second;
  auto r = call(tool_call(2, "search", R"({"q": "weather"})"));
  ASSERT_EQ(r.first, 200) << r.second;
  EXPECT_NE(r.second.find("data: "), std::string::npos) << "an SSE answer: " << r.second;
  EXPECT_NE(r.second.find("ran search with {\\\"q\\\": \\\"weather\\\"}"), std::string::npos) << r.second;
  EXPECT_EQ(served(), "initialize\ntools/call search\n");
  auto row = last_row();
  EXPECT_EQ(row.decision, "allow");
  EXPECT_NE(row.reason.find("the body's JSON-RPC calls: tools/call search"), std::string::npos) << row.reason;
}

TEST_F(McpTest, AnotherToolIsRefusedWithAJsonRpcErrorCarryingTheCallsId) {
  start_proxy(policy_json);
  auto r = call(tool_call(7, "shell", R"({"cmd": "rm -rf /"})"));
  EXPECT_EQ(r.first, 403) << r.second;
  const auto error = nlohmann::json::parse(r.second);
  EXPECT_EQ(error.at("jsonrpc"), "2.0");
  EXPECT_EQ(error.at("id"), 7);
  EXPECT_EQ(error.at("error").at("code"), -32001);
  const std::string message = error.at("error").at("message");
  EXPECT_NE(message.find("calls the tool shell, which is not in jsonrpc.tools (search)"), std::string::npos) << message;
  EXPECT_EQ(served(), "");
  auto row = last_row();
  EXPECT_EQ(row.decision, "deny");
  EXPECT_EQ(row.status, 403);
  EXPECT_NE(row.reason.find("tool shell"), std::string::npos) << row.reason;
}

// A body rule's refusal counts as a denial for the guardian, as a host's does: an agent
// probing forbidden tools trips `denied >= N` (it was refused without end, unseen).
TEST_F(McpTest, RefusedToolCallsCountAsDenialsForTheGuardian) {
  auto j = nlohmann::json::parse(policy_json);
  j["guardian"] = nlohmann::json::parse(R"({"rules": [{"on": ["denied >= 3 in 60s"], "action": "report"}]})");
  start_proxy(j.dump());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(call(tool_call(i, "shell", R"({"cmd": "id"})")).first, 403) << i;
  std::uint64_t reported = 0;
  for (const auto& a : ProxyTest::server->counters().guardian_actions)  // `server` here is the MCP server
    if (a.action == "report" && a.trigger == "denied") reported += a.count;
  EXPECT_EQ(reported, 1u) << "three refused tool calls did not trip denied >= 3";
  EXPECT_EQ(served(), "");
}

TEST_F(McpTest, ABadArgumentIsRefusedNamingItsPointer) {
  start_proxy(policy_json);
  auto r = call(tool_call(3, "search", R"({"q": "x", "path": "/etc/shadow"})"));
  EXPECT_EQ(r.first, 403) << r.second;
  const std::string message = nlohmann::json::parse(r.second).at("error").at("message");
  EXPECT_NE(message.find("with arguments its schema refuses"), std::string::npos) << message;
  EXPECT_NE(message.find("/params/arguments"), std::string::npos) << message;
  auto wrong_type = call(tool_call(4, "search", R"({"q": 5})"));
  EXPECT_EQ(wrong_type.first, 403) << wrong_type.second;
  EXPECT_EQ(served(), "");
}

TEST_F(McpTest, ABatchHidingABadCallIsRefusedWhole) {
  start_proxy(policy_json);
  auto r = call("[" + tool_call(10, "search", R"({"q": "fine"})") + ", " + tool_call(11, "shell", "{}") + "]");
  EXPECT_EQ(r.first, 403) << r.second;
  const auto errors = nlohmann::json::parse(r.second);
  ASSERT_TRUE(errors.is_array()) << r.second;
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].at("id"), 10);
  EXPECT_EQ(errors[1].at("id"), 11);
  const std::string message = errors[1].at("error").at("message");
  EXPECT_NE(message.find("the call at /1 calls the tool shell"), std::string::npos) << message;
  EXPECT_EQ(served(), "") << "not even the good call of the batch went";
  const auto row = last_row();
  EXPECT_EQ(row.decision, "deny");
  EXPECT_NE(row.reason.find("the body's JSON-RPC calls: tools/call search, tools/call shell"), std::string::npos)
      << row.reason;
}

}  // namespace
}  // namespace netbox::test
