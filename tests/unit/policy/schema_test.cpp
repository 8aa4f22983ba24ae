// The shipped JSON Schema describes the same keys and defaults as the loader.
#include "netbox/policy/load.hpp"

#include "support/process.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <set>

using nlohmann::json;
using namespace netbox::policy;

namespace {

json schema() {
  std::ifstream in(netbox::test::source_dir() / "policy/schema/netbox-policy.schema.json");
  EXPECT_TRUE(in) << "schema file missing";
  return json::parse(in);
}

std::set<std::string> keys(const json& properties) {
  std::set<std::string> out;
  for (const auto& [k, v] : properties.items()) out.insert(k);
  return out;
}

}  // namespace

TEST(Schema, TopLevelKeysAreTheLoadersKeys) {
  auto s = schema();
  EXPECT_EQ(keys(s["properties"]), (std::set<std::string>{"$schema", "version", "mode", "allow", "include", "deny", "ports",
                                                           "internal", "resolve", "resolve_unlisted_names", "limits",
                                                           "sandbox", "inspect", "rules", "credentials", "guardian",
                                                           "agents"}));
  EXPECT_EQ(s["additionalProperties"], false);
  // Every key the schema names is one the loader takes.
  for (const auto& k : keys(s["properties"])) {
    if (k == "version" || k == "$schema") continue;
    json doc = {{"version", 1}};
    doc[k] = s["$defs"].contains(k) && s["$defs"][k].contains("default") ? s["$defs"][k]["default"] : json::object();
    if (k == "allow" || k == "include" || k == "deny" || k == "ports" || k == "inspect" || k == "rules" || k == "credentials")
      doc[k] = json::array();
    if (k == "mode") doc[k] = "enforce";
    if (k == "resolve_unlisted_names") doc[k] = s["properties"][k]["default"];
    EXPECT_NO_THROW(parse_policy(doc.dump(), "schema")) << k;
  }
}

TEST(Schema, AgentKeysAndLimitKeysMatch) {
  auto s = schema();
  EXPECT_EQ(keys(s["properties"]["agents"]["additionalProperties"]["properties"]),
            (std::set<std::string>{"mode", "allow", "include", "deny", "ports", "internal", "limits", "sandbox", "inspect",
                                   "rules", "credentials", "guardian"}));
  EXPECT_EQ(keys(s["$defs"]["limits"]["properties"]),
            (std::set<std::string>{"max_connections", "max_connections_per_agent", "max_connections_per_host",
                                   "connect_timeout_ms", "dial_budget_ms", "idle_timeout_ms", "header_timeout_ms",
                                   "connect_timeout", "dial_budget", "idle_timeout", "header_timeout", "bytes_up",
                                   "bytes_down", "requests_per_minute", "burst", "new_hosts_per_minute", "bandwidth_up",
                                   "bandwidth_down", "destinations"}));
}

// The budget, rate and guardian keys the schema describes are the loader's, each loads
// with a value of the kind the schema gives, and the schema's trigger pattern and the
// loader agree on the examples.
TEST(Schema, BudgetAndGuardianKeysMatch) {
  auto s = schema();
  const auto& limits = s["$defs"]["limits"]["properties"];
  EXPECT_EQ(keys(limits["destinations"]["items"]["properties"]),
            (std::set<std::string>{"host", "bytes_up", "bytes_down", "requests_per_minute", "burst"}));
  const auto& g = s["$defs"]["guardian"]["properties"];
  EXPECT_EQ(keys(g), (std::set<std::string>{"rules", "webhook", "webhook_ca", "content"}));
  EXPECT_EQ(keys(g["rules"]["items"]["properties"]), (std::set<std::string>{"on", "action"}));
  EXPECT_EQ(g["rules"]["items"]["properties"]["action"]["enum"], json({"kill", "freeze", "report"}));
  EXPECT_EQ(keys(g["content"]["properties"]), (std::set<std::string>{"secrets", "body_window", "encoded_labels"}));
  EXPECT_EQ(s["$defs"]["contentMode"]["enum"], json({"enforce", "report", "off"}));
  // Every event the loader knows is in the schema's pattern, and only those.
  const std::string pattern = g["rules"]["items"]["properties"]["on"]["items"]["pattern"];
  std::string events;
  for (auto e : guardian_event_names()) events += (events.empty() ? "" : "|") + std::string(e);
  EXPECT_NE(pattern.find("^(" + events + ")"), std::string::npos) << pattern;
  // Defaults: the schema's are the loader's.
  const auto p = default_policy();
  EXPECT_EQ(s["$defs"]["contentMode"]["default"], std::string(to_string(p.base.guardian.content.secrets)));
  EXPECT_EQ(s["$defs"]["contentMode"]["default"], std::string(to_string(p.base.guardian.content.encoded_labels)));
  EXPECT_EQ(g["content"]["properties"]["body_window"]["default"], "64K");
  EXPECT_EQ(p.base.guardian.content.body_window, 64U * 1024);
  json doc = {{"version", 1},
              {"limits",
               {{"bytes_up", "64M"}, {"bytes_down", 1048576}, {"requests_per_minute", 60}, {"burst", 10},
                {"new_hosts_per_minute", 30}, {"bandwidth_up", "1M"}, {"bandwidth_down", "unlimited"},
                {"destinations", {{{"host", "*.github.com"}, {"bytes_up", "64M"}, {"requests_per_minute", 60},
                                   {"burst", 10}}}}}},
              {"guardian",
               {{"rules", {{{"on", {"denied >= 20 in 60s", "budget_exhausted"}}, {"action", "kill"}}}},
                {"webhook", "http://127.0.0.1:9000/hook"},
                {"content", {{"secrets", "report"}, {"body_window", "64K"}, {"encoded_labels", "off"}}}}}};
  EXPECT_NO_THROW(parse_policy(doc.dump(), "schema"));
  for (const auto& k : keys(limits)) {
    if (k.ends_with("timeout") || k.ends_with("_ms") || k.starts_with("max_") || k == "dial_budget") continue;
    EXPECT_TRUE(doc["limits"].contains(k)) << k;
  }
}

TEST(Schema, DefaultsMatchTheDefaultPolicy) {
  auto s = schema();
  auto p = default_policy();
  const auto& l = s["$defs"]["limits"]["properties"];
  EXPECT_EQ(l["max_connections"]["default"].get<std::size_t>(), p.base.limits.max_connections);
  EXPECT_EQ(l["max_connections_per_agent"]["default"].get<std::size_t>(), p.base.limits.max_connections_per_agent);
  EXPECT_EQ(l["max_connections_per_host"]["default"].get<std::size_t>(), p.base.limits.max_connections_per_host);
  EXPECT_EQ(l["connect_timeout_ms"]["default"].get<long>(), p.base.limits.connect_timeout.count());
  EXPECT_EQ(l["idle_timeout_ms"]["default"].get<long>(), p.base.limits.idle_timeout.count());
  EXPECT_EQ(l["header_timeout_ms"]["default"].get<long>(), p.base.limits.header_timeout.count());
  EXPECT_EQ(s["$defs"]["ports"]["default"].get<std::vector<uint16_t>>(), p.base.ports);
  EXPECT_EQ(s["$defs"]["mode"]["default"], "enforce");
}

// The sandbox keys the schema names are the loader's, and a value of each kind the schema
// describes loads.
TEST(Schema, SandboxKeysMatch) {
  auto s = schema();
  EXPECT_EQ(keys(s["$defs"]["sandbox"]["properties"]),
            (std::set<std::string>{"workdir", "ro", "rw", "hide", "tmp_size", "workdir_quota", "memory", "cpus", "pids",
                                   "user", "allow_degraded", "network"}));
  json doc = {{"version", 1},
              {"sandbox",
               {{"workdir", "/srv/work"}, {"ro", {"/opt/a"}}, {"rw", json::array()}, {"hide", {"/srv/work/.env"}},
                {"tmp_size", "256M"}, {"workdir_quota", 1048576}, {"memory", "unlimited"}, {"cpus", 0.5},
                {"pids", 64}, {"user", "nobody"}, {"allow_degraded", {"cgroup"}}, {"network", "proxy-vars"}}}};
  EXPECT_NO_THROW(parse_policy(doc.dump(), "schema"));
  for (const auto& k : keys(s["$defs"]["sandbox"]["properties"])) EXPECT_TRUE(doc["sandbox"].contains(k)) << k;
}

// The inspection keys the schema describes are the loader's, and an example of each loads.
TEST(Schema, InspectionKeysMatch) {
  auto s = schema();
  EXPECT_EQ(keys(s["$defs"]["rules"]["items"]["properties"]),
            (std::set<std::string>{"host", "methods", "paths", "action", "jsonrpc", "body_schema", "git", "body_window"}));
  const json& rule = s["$defs"]["rules"]["items"]["properties"];
  EXPECT_EQ(keys(rule["jsonrpc"]["properties"]), (std::set<std::string>{"methods", "tools"}));
  EXPECT_EQ(keys(rule["git"]["properties"]), (std::set<std::string>{"push", "force", "delete"}));
  EXPECT_EQ(keys(s["$defs"]["credentials"]["items"]["properties"]),
            (std::set<std::string>{"name", "hosts", "header", "format", "secret_env", "secret_file", "env"}));
  json doc = json::parse(R"({"version": 1, "allow": ["api.github.com", "api.openai.com"],
    "inspect": ["api.github.com", "api.openai.com"],
    "rules": [{"host": "api.github.com", "methods": ["GET"], "paths": ["/repos/acme/*"], "action": "allow"},
              {"host": "api.github.com", "methods": ["POST"], "paths": ["/mcp"], "action": "allow", "body_window": "64k",
               "jsonrpc": {"methods": ["tools/call"], "tools": {"search": {"arguments": {"type": "object"}}}},
               "body_schema": {"type": "array"}},
              {"host": "api.github.com", "methods": ["POST"], "paths": ["/acme/*/git-receive-pack"], "action": "allow",
               "git": {"push": ["refs/heads/agent/*"], "force": false, "delete": false}}],
    "credentials": [{"name": "openai", "hosts": ["api.openai.com"], "header": "Authorization",
                     "format": "Bearer {secret}", "secret_file": "/etc/netbox/secrets/openai", "env": "OPENAI_API_KEY"}]})");
  EXPECT_NO_THROW(parse_policy(doc.dump(), "schema"));
}
