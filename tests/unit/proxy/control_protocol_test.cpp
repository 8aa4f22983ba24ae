// The control socket's messages: what a launcher writes is what the proxy reads, and a
// line from a broken or hostile peer is refused with a reason naming the key, never a
// crash or a half-read message.
#include "netbox/proxy/control_protocol.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace netbox::proxy::control {
namespace {

using json = nlohmann::json;

std::string refusal(std::string_view line) {
  try {
    parse_request(line);
    return "accepted";
  } catch (const ProtocolError& e) {
    return e.what();
  }
}

void expect_refused(std::string_view line, const std::string& why) {
  const auto msg = refusal(line);
  EXPECT_NE(msg.find(why), std::string::npos) << line.substr(0, 200) << " -> " << msg;
}

TEST(ControlProtocol, RegisterRoundTripsWithEveryField) {
  Register r;
  r.addr = "10.213.0.2";
  r.agent = "builder-1";
  r.profile = "builder";
  r.listen = "10.213.0.1:3128";
  r.socks_listen = "10.213.0.1:0";
  r.launch = AgentLaunch{4242, "curl http://x.test/", "10.213.0.2", "abc", R"({"layers":["net"]})"};
  const auto line = to_line(r);
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one message, one line";
  const auto back = std::get<Register>(parse_request(line));
  EXPECT_EQ(back.addr, r.addr);
  EXPECT_EQ(back.agent, r.agent);
  EXPECT_EQ(back.profile, r.profile);
  EXPECT_EQ(back.listen, r.listen);
  EXPECT_EQ(back.socks_listen, r.socks_listen);
  ASSERT_TRUE(back.launch);
  EXPECT_EQ(back.launch->pid, 4242);
  EXPECT_EQ(back.launch->command_line, "curl http://x.test/");
  EXPECT_EQ(back.launch->address, "10.213.0.2");
  EXPECT_EQ(back.launch->policy_digest, "abc");
  EXPECT_EQ(json::parse(back.launch->sandbox), json::parse(R"({"layers":["net"]})"));
}

// The wire form documented in docs/proxy.md, written by hand, is what the types read.
TEST(ControlProtocol, TheDocumentedWireFormIsRead) {
  const auto reg = std::get<Register>(parse_request(
      R"({"op":"register","addr":"10.213.0.2","agent":"a","profile":"p","listen":"10.213.0.1:3128",)"
      R"("launch":{"pid":123,"command_line":"curl","address":"10.213.0.2","policy_digest":"d","sandbox":{"x":1}}})"));
  EXPECT_EQ(reg.listen, "10.213.0.1:3128");
  EXPECT_EQ(reg.launch->pid, 123);
  const auto un = std::get<Unregister>(parse_request(
      R"({"op":"unregister","addr":"10.213.0.2","exit_status":0,"resource_usage":{"user_ms":1,"sys_ms":2}})"));
  EXPECT_EQ(un.exit_status, 0);
  EXPECT_EQ(json::parse(un.resource_usage), json::parse(R"({"user_ms":1,"sys_ms":2})"));
  EXPECT_TRUE(std::holds_alternative<Ping>(parse_request(R"({"op":"ping"})")));
  EXPECT_TRUE(std::holds_alternative<Info>(parse_request("{\"op\":\"info\"}\n")));
  EXPECT_EQ(json::parse(to_line(Ping{})), json::parse(R"({"op":"ping"})"));
}

TEST(ControlProtocol, TheReplyNamesTheSocksListenerOnlyWhenThereIsOne) {
  Reply r;
  r.listen = "10.213.0.1:3128";
  r.socks_listen = "10.213.0.1:41027";
  EXPECT_EQ(parse_reply(to_line(r)).socks_listen, "10.213.0.1:41027");
  r.socks_listen.clear();
  EXPECT_EQ(json::parse(to_line(r)), json::parse(R"({"ok":true,"listen":"10.213.0.1:3128"})"))
      << "an older launcher sees the reply it knows";
}

// A shared proxy's DNS view (issue 15 item 6): the pool goes up, the endpoints come back,
// and neither is written when absent (a proxy-vars launch, an older peer).
TEST(ControlProtocol, TheSyntheticPoolAndTheDnsAndCaptureEndpointsRoundTrip) {
  Register r;
  r.addr = "10.213.0.2";
  r.listen = "10.213.0.1:3128";
  r.dns_pool = "198.18.4.0/22";
  EXPECT_EQ(std::get<Register>(parse_request(to_line(r))).dns_pool, "198.18.4.0/22");
  r.dns_pool.clear();
  EXPECT_FALSE(json::parse(to_line(r)).contains("dns_pool"));
  Reply reply;
  reply.dns = "10.213.0.1:53";
  reply.capture = "10.213.0.1:40123";
  const auto back = parse_reply(to_line(reply));
  EXPECT_EQ(back.dns, "10.213.0.1:53");
  EXPECT_EQ(back.capture, "10.213.0.1:40123");
  EXPECT_EQ(json::parse(to_line(Reply{})), json::parse(R"({"ok":true})"));
  expect_refused(R"({"op":"register","addr":"10.213.0.2","dns_pool":22})", "\"dns_pool\" must be a string");
}

TEST(ControlProtocol, TheIpv6LinkAndItsCaptureListenerRoundTrip) {
  Register r;
  r.addr = "10.213.0.2";
  r.dns_pool = "198.18.4.0/22";
  EXPECT_FALSE(json::parse(to_line(r)).contains("ipv6")) << "absent: IPv4 only";
  EXPECT_FALSE(std::get<Register>(parse_request(to_line(r))).ipv6);
  r.ipv6 = Register::Ipv6{"fd00:6e62:7800::ad5:2", "fd00:6e62:7800::ad5:1", "2001:2:0:2b5:4000::/80"};
  const auto back = std::get<Register>(parse_request(to_line(r)));
  ASSERT_TRUE(back.ipv6);
  EXPECT_EQ(back.ipv6->agent, "fd00:6e62:7800::ad5:2");
  EXPECT_EQ(back.ipv6->host, "fd00:6e62:7800::ad5:1");
  EXPECT_EQ(back.ipv6->pool, "2001:2:0:2b5:4000::/80");
  Reply reply;
  reply.capture6 = "[fd00:6e62:7800::ad5:1]:40123";
  reply.dns_pool = "198.18.8.0/22";
  reply.dns_pool6 = "2001:2:0:2b5:4001::/80";
  const auto got = parse_reply(to_line(reply));
  EXPECT_EQ(got.capture6, "[fd00:6e62:7800::ad5:1]:40123");
  EXPECT_EQ(got.dns_pool, "198.18.8.0/22");
  EXPECT_EQ(got.dns_pool6, "2001:2:0:2b5:4001::/80");
  expect_refused(R"({"op":"register","addr":"10.213.0.2","ipv6":"fd00::2"})", "\"ipv6\" must be an object");
  expect_refused(R"({"op":"register","addr":"10.213.0.2","ipv6":{"agent":"fd00::2","host":"fd00::1"}})",
                 "\"pool\" is missing");
}

TEST(ControlProtocol, UnregisterWithoutAnExitStatusStaysWithout) {
  const auto line = to_line(Unregister{"10.213.0.2", std::nullopt, ""});
  EXPECT_EQ(json::parse(line), json::parse(R"({"op":"unregister","addr":"10.213.0.2"})"));
  const auto back = std::get<Unregister>(parse_request(line));
  EXPECT_FALSE(back.exit_status);
  EXPECT_TRUE(back.resource_usage.empty());
}

TEST(ControlProtocol, RepliesRoundTrip) {
  Reply info;
  info.policy_file = "/etc/netbox/policy.json";
  info.audit_db = "/var/lib/netbox/audit.db";
  const auto back = parse_reply(to_line(info));
  EXPECT_TRUE(back.ok);
  EXPECT_EQ(back.policy_file, info.policy_file);
  EXPECT_EQ(back.audit_db, info.audit_db);
  const auto no = parse_reply(to_line(Reply::refused("the policy has no agents.x profile")));
  EXPECT_FALSE(no.ok);
  EXPECT_EQ(no.error, "the policy has no agents.x profile");
  EXPECT_EQ(json::parse(to_line(Reply{})), json::parse(R"({"ok":true})"));
  EXPECT_EQ(parse_reply(R"({"ok":false})").error, "no reason given");
}

TEST(ControlProtocol, UnknownOpIsRefusedNamingIt) {
  expect_refused(R"({"op":"frobnicate"})", "unknown op \"frobnicate\"");
  expect_refused(R"({"addr":"10.0.0.1"})", "\"op\" is missing");
  expect_refused(R"({"op":null})", "\"op\" is missing");
}

TEST(ControlProtocol, TruncatedAndNonJsonLinesAreRefused) {
  Register reg;
  reg.addr = "10.213.0.2";
  reg.agent = "a";
  reg.listen = "10.213.0.1:3128";
  reg.launch = AgentLaunch{1, "x", "", "", ""};
  const auto full = to_line(reg);
  for (std::size_t n = 0; n + 2 < full.size(); n += 7) expect_refused(full.substr(0, n), "JSON");
  expect_refused("not json at all", "not JSON");
  expect_refused("\xff\xfe{\"op\":\"ping\"}", "not JSON");
  expect_refused(R"("ping")", "expected a JSON object, not string");
  expect_refused(R"([{"op":"ping"}])", "expected a JSON object, not array");
  expect_refused("null", "expected a JSON object, not null");
}

TEST(ControlProtocol, ARegisterCarriesItsCredentialsSecretsAndRefusesMalformedOnes) {
  Register reg;
  reg.addr = "10.213.0.2";
  reg.credentials.push_back({"openai", "nbx-openai-0123456789abcdef", netbox::proxy::Secret("sk-real")});
  const auto back = std::get<Register>(parse_request(to_line(reg)));
  ASSERT_EQ(back.credentials.size(), 1u);
  EXPECT_EQ(back.credentials[0].name, "openai");
  EXPECT_EQ(back.credentials[0].placeholder, "nbx-openai-0123456789abcdef");
  EXPECT_EQ(back.credentials[0].secret.reveal(), "sk-real");
  EXPECT_TRUE(std::get<Register>(parse_request(R"({"op":"register","addr":"10.0.0.1"})")).credentials.empty());
  expect_refused(R"({"op":"register","addr":"10.0.0.1","credentials":{}})", "\"credentials\" must be an array");
  expect_refused(R"({"op":"register","addr":"10.0.0.1","credentials":[{"name":"a","placeholder":"p"}]})",
                 "\"secret\" is missing");
}

TEST(ControlProtocol, WrongTypesAreRefusedNamingTheKey) {
  expect_refused(R"({"op":5})", "\"op\" must be a string, not number");
  expect_refused(R"({"op":"register","addr":5})", "\"addr\" must be a string, not number");
  expect_refused(R"({"op":"register"})", "\"addr\" is missing");
  expect_refused(R"({"op":"register","addr":"10.0.0.1","agent":["a"]})", "\"agent\" must be a string, not array");
  expect_refused(R"({"op":"register","addr":"10.0.0.1","listen":3128})", "\"listen\" must be a string");
  expect_refused(R"({"op":"register","addr":"10.0.0.1","launch":"yes"})", "\"launch\" must be an object");
  expect_refused(R"({"op":"register","addr":"10.0.0.1","launch":{"pid":"1"}})", "\"pid\" must be an integer");
  expect_refused(R"({"op":"register","addr":"10.0.0.1","launch":{"pid":1.5}})", "\"pid\" must be an integer");
  expect_refused(R"({"op":"register","addr":"10.0.0.1","launch":{"sandbox":[1]}})", "\"sandbox\" must be an object");
  expect_refused(R"({"op":"unregister","addr":"10.0.0.1","exit_status":"0"})", "\"exit_status\" must be an integer");
  expect_refused(R"({"op":"unregister","addr":"10.0.0.1","exit_status":4294967296})", "\"exit_status\" is out of range");
  expect_refused(R"({"op":"unregister","addr":"10.0.0.1","exit_status":-4294967296})", "\"exit_status\" is out of range");
  expect_refused(R"({"op":"unregister","addr":"10.0.0.1","exit_status":18446744073709551615})", "out of range");
  expect_refused(R"({"op":"unregister","addr":"10.0.0.1","resource_usage":7})", "\"resource_usage\" must be an object");
  EXPECT_THROW(parse_reply(R"({"ok":"yes"})"), ProtocolError);
  EXPECT_THROW(parse_reply(R"({"ok":true,"listen":3128})"), ProtocolError);
  EXPECT_THROW(parse_reply("[]"), ProtocolError);
}

TEST(ControlProtocol, OversizedLinesAreRefusedBeforeTheyAreParsed) {
  const std::string big = R"({"op":"register","addr":"10.0.0.1","agent":")" + std::string(kMaxLine, 'a') + "\"}";
  expect_refused(big, "longer than");
}

// As deep as a line allows: read (the unknown key is ignored), without exhausting the stack.
TEST(ControlProtocol, DeepNestingWithinALineIsNotACrash) {
  const std::size_t depth = (kMaxLine - 64) / 2;
  const std::string deep = R"({"op":"ping","x":)" + std::string(depth, '[') + std::string(depth, ']') + "}";
  ASSERT_LE(deep.size(), kMaxLine);
  EXPECT_TRUE(std::holds_alternative<Ping>(parse_request(deep)));
}

TEST(ControlProtocol, TextThatIsNotUtf8IsWrittenReplacedNeverThrown) {
  Reply r = Reply::refused(std::string("bad \xff\xfe name"));
  std::string line;
  ASSERT_NO_THROW(line = to_line(r));
  EXPECT_FALSE(parse_reply(line).ok);
  Register reg;
  reg.addr = "10.213.0.2";
  reg.agent = "\xc3";
  ASSERT_NO_THROW(line = to_line(reg));
  EXPECT_NO_THROW(parse_request(line));
}

TEST(ControlProtocol, ObjectsGivenAsTextMustBeObjects) {
  Unregister u{"10.213.0.2", 0, "not json"};
  EXPECT_THROW(to_line(u), ProtocolError);
}

// The sock_diag socket (who made each request, issue 27) comes last, counted with the rest.
TEST(ControlProtocol, RegisterBySocketsCarriesTheDiagSocket) {
  Register r;
  r.agent = "a1";
  r.sockets = Register::Sockets{2, 2, 2, true, true};
  const auto back = std::get<Register>(parse_request(to_line(r)));
  ASSERT_TRUE(back.sockets);
  EXPECT_TRUE(back.sockets->diag);
  EXPECT_EQ(back.sockets->count(), 9u);
  r.sockets->diag = false;
  EXPECT_FALSE(std::get<Register>(parse_request(to_line(r))).sockets->diag);
  // A launcher that names no diag socket sends none: the agent's rows name no process.
  EXPECT_FALSE(std::get<Register>(parse_request(R"({"op":"register","agent":"a1","sockets":{"http":1}})")).sockets->diag);
  expect_refused(R"({"op":"register","agent":"a1","sockets":{"http":1,"diag":1}})",
                 "\"sockets\" \"diag\" must be true or false");
}

}  // namespace
TEST(ControlProtocol, TheInfoReplyCarriesTheCaCertificateOnlyWhenTheProxyInspects) {
  Reply r;
  r.audit_db = "/var/lib/netbox/audit.db";
  r.ca_pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  EXPECT_EQ(parse_reply(to_line(r)).ca_pem, r.ca_pem);
  r.ca_pem.clear();
  EXPECT_EQ(json::parse(to_line(r)), json::parse(R"({"ok":true,"audit_db":"/var/lib/netbox/audit.db"})"));
  EXPECT_THROW(parse_reply(R"({"ok":true,"ca_pem":7})"), ProtocolError);
}

}  // namespace netbox::proxy::control

namespace netbox::proxy::control {
namespace {

// The operator ops (`netbox agent`) and the proxy's Acts on a launcher's connection.
TEST(ControlProtocol, OperatorOpsRoundTripAndNeedTheirAgent) {
  const auto kill = std::get<Operator>(parse_request(to_line(Operator{"kill", "builder", ""})));
  EXPECT_EQ(kill.op, "kill");
  EXPECT_EQ(kill.agent, "builder");
  EXPECT_EQ(std::get<Operator>(parse_request(R"({"op":"list"})")).agent, "");
  expect_refused(R"({"op":"kill"})", "\"agent\" is missing");
  expect_refused(R"({"op":"freeze","agent":7})", "\"agent\" must be a string, not number");
  for (auto op : operator_ops()) EXPECT_EQ(refusal(R"({"op":")" + std::string(op) + R"(","agent":"a"})"), "accepted") << op;
  Reply listed;
  listed.agents = R"([{"name":"a","state":"frozen"}])";
  listed.result = "done";
  const auto back = parse_reply(to_line(listed));
  EXPECT_EQ(json::parse(back.agents), json::parse(listed.agents));
  EXPECT_EQ(back.result, "done");
  EXPECT_THROW(parse_reply(R"({"ok":true,"agents":{"a":1}})"), ProtocolError);
}

TEST(ControlProtocol, ActsAndTheirAnswersRoundTripAndBadOnesAreRefused) {
  const auto act = std::get<Act>(parse_from_proxy(to_line(Act{3, "kill", "guardian.rules[0]"})));
  EXPECT_EQ(act.id, 3u);
  EXPECT_EQ(act.action, "kill");
  EXPECT_EQ(act.why, "guardian.rules[0]");
  EXPECT_TRUE(std::holds_alternative<Reply>(parse_from_proxy(R"({"ok":true})")));
  EXPECT_THROW(parse_from_proxy(R"({"act":"reboot","id":1})"), ProtocolError);
  EXPECT_THROW(parse_from_proxy(R"({"act":"kill","id":-1})"), ProtocolError);
  EXPECT_THROW(parse_from_proxy(R"({"act":["kill"]})"), ProtocolError);
  EXPECT_THROW(parse_from_proxy("[1,2]"), ProtocolError);
  const auto acted = std::get<Acted>(parse_request(to_line(Request{Acted{3, true, "killed"}})));
  EXPECT_EQ(acted.id, 3u);
  EXPECT_TRUE(acted.ok);
  EXPECT_EQ(acted.result, "killed");
  expect_refused(R"({"op":"acted","id":1})", "\"ok\" is missing");
  expect_refused(R"({"op":"acted","id":"1","ok":true})", "\"id\" must be an integer");
}

// A launch's terminal asking through a shared proxy: the question and its end pushed to the
// launcher, its answer back, and the registration's "terminal".
TEST(ControlProtocol, TerminalQuestionsAnswersAndTheirEndsRoundTripAndBadOnesAreRefused) {
  PendingAsk q;
  q.id = 7;
  q.agent = "a1";
  q.host = "api.example.com";
  q.port = 443;
  q.door = "http";
  q.expires = std::chrono::system_clock::time_point(std::chrono::milliseconds(1796000000123));
  q.policy_offered = true;
  const auto asked = std::get<Asked>(parse_from_proxy(to_line(Asked{q}))).question;
  EXPECT_EQ(asked.id, 7u);
  EXPECT_EQ(asked.agent, "a1");
  EXPECT_EQ(asked.host, "api.example.com");
  EXPECT_EQ(asked.port, 443);
  EXPECT_EQ(asked.door, "http");
  EXPECT_EQ(asked.expires, q.expires);
  EXPECT_TRUE(asked.policy_offered);
  const auto settled = std::get<Settled>(parse_from_proxy(to_line(Settled{7, true, "denied by x"})));
  EXPECT_EQ(settled.id, 7u);
  EXPECT_TRUE(settled.answered);
  EXPECT_EQ(settled.how, "denied by x");
  EXPECT_THROW(parse_from_proxy(R"({"asked":[1]})"), ProtocolError);
  const auto answer = std::get<Answer>(parse_request(to_line(Request{Answer{7, true, AskScope::launch, "alice"}})));
  EXPECT_EQ(answer.id, 7u);
  EXPECT_TRUE(answer.approve);
  EXPECT_EQ(answer.scope, AskScope::launch);
  EXPECT_EQ(answer.user, "alice");
  expect_refused(R"({"op":"answer","approve":true})", "\"id\" is missing");
  expect_refused(R"({"op":"answer","id":7})", "\"approve\" is missing");
  expect_refused(R"({"op":"answer","id":7,"approve":true,"scope":"forever"})", "\"scope\" must be");
  Register r;
  r.addr = "10.0.0.2";
  r.ask = AskSettings{std::chrono::milliseconds(5000), true};
  const auto back = std::get<Register>(parse_request(to_line(Request{r})));
  ASSERT_TRUE(back.ask);
  EXPECT_TRUE(back.ask->terminal);
  EXPECT_EQ(back.ask->timeout, std::chrono::milliseconds(5000));
  expect_refused(R"({"op":"register","addr":"10.0.0.2","ask":{"terminal":"yes"}})", "\"terminal\" must be true or false");
}

}  // namespace
}  // namespace netbox::proxy::control
