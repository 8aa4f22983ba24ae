// The approval ops (pending, approve, deny) as a control client or the admin API sends
// them: a peer that may not answer is told so and nothing is answered; a malformed or
// ambiguous request is refused naming the key; `ask` in a registration round-trips.
#include "netbox/proxy/approval_ops.hpp"
#include "netbox/proxy/control_protocol.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <vector>

namespace netbox::proxy {
namespace {

using json = nlohmann::json;

struct Desk {
  std::vector<std::pair<AskTarget, AskAnswer>> answers;
  ApprovalDesk desk() {
    return {[] {
              PendingAsk p;
              p.id = 7;
              p.agent = "a1";
              p.host = "api.example.com";
              p.port = 443;
              p.door = "http";
              p.waiters = 2;
              p.policy_offered = true;
              return std::vector<PendingAsk>{p};
            },
            [this](const AskTarget& t, const AskAnswer& a) {
              answers.emplace_back(t, a);
              return std::string();
            }};
  }
};

TEST(ApprovalOps, APeerThatMayNotAnswerIsToldSoAndNothingIsAnswered) {
  Desk d;
  for (const char* line : {R"({"op":"pending"})", R"({"op":"approve","agent":"a1","host":"api.example.com"})",
                           R"({"op":"deny","id":7})"}) {
    const auto reply = json::parse(approval_op(d.desk(), line, ""));
    EXPECT_FALSE(reply.value("ok", true)) << line;
    EXPECT_NE(reply.value("error", std::string()).find("only the owner of this socket"), std::string::npos);
  }
  EXPECT_TRUE(d.answers.empty());
}

TEST(ApprovalOps, PendingListsTheQuestionsWithTheirScopes) {
  Desk d;
  const auto reply = json::parse(approval_op(d.desk(), R"({"op":"pending"})", "uid 0 (control socket)"));
  ASSERT_TRUE(reply.value("ok", false));
  ASSERT_EQ(reply["pending"].size(), 1u);
  EXPECT_EQ(reply["pending"][0]["host"], "api.example.com");
  EXPECT_EQ(reply["pending"][0]["scopes"], json({"once", "launch", "policy"}));
}

TEST(ApprovalOps, AnAnswerNamesItsQuestionAndScopeAndCarriesTheGrantor) {
  Desk d;
  auto ok = json::parse(approval_op(d.desk(), R"({"op":"approve","agent":"a1","host":"API.example.com.:443","scope":"launch"})",
                                    "uid 1000 (control socket)"));
  EXPECT_TRUE(ok.value("ok", false)) << ok;
  ok = json::parse(approval_op(d.desk(), R"({"op":"deny","id":7})", "the admin API (token holder)"));
  EXPECT_TRUE(ok.value("ok", false)) << ok;
  ASSERT_EQ(d.answers.size(), 2u);
  EXPECT_EQ(d.answers[0].first.host, "api.example.com");
  EXPECT_EQ(d.answers[0].first.port, 443);
  EXPECT_TRUE(d.answers[0].second.approve);
  EXPECT_EQ(d.answers[0].second.scope, AskScope::launch);
  EXPECT_EQ(d.answers[0].second.grantor, "uid 1000 (control socket)");
  EXPECT_EQ(d.answers[1].first.id, 7u);
  EXPECT_FALSE(d.answers[1].second.approve);
}

TEST(ApprovalOps, MalformedRequestsAreRefusedNamingTheKey) {
  Desk d;
  const std::vector<std::pair<const char*, const char*>> cases = {
      {R"({"op":"approve","host":"x.test"})", "\"agent\" is missing"},
      {R"({"op":"approve","agent":"a1"})", "\"host\" is missing"},
      {R"({"op":"approve","agent":"a1","host":"x.test:99999"})", "is not a port number"},
      {R"({"op":"approve","agent":"a1","host":"x.test","scope":"forever"})", "\"scope\" must be"},
      {R"({"op":"approve","id":-1})", "\"id\" must be a positive integer"},
  };
  for (const auto& [line, why] : cases) {
    const auto reply = json::parse(approval_op(d.desk(), line, "uid 0 (control socket)"));
    EXPECT_FALSE(reply.value("ok", true)) << line;
    EXPECT_NE(reply.value("error", std::string()).find(why), std::string::npos) << line << " -> " << reply;
  }
  EXPECT_TRUE(d.answers.empty());
  EXPECT_FALSE(is_approval_op(R"({"op":"register"})"));
  EXPECT_TRUE(is_approval_op(R"({"op":"deny"})"));
}

TEST(ApprovalOps, AskInARegistrationRoundTripsAndIsBounded) {
  control::Register r;
  r.addr = "10.213.0.2";
  r.agent = "a1";
  r.ask = AskSettings{std::chrono::milliseconds(2500)};
  const auto back = std::get<control::Register>(control::parse_request(control::to_line(r)));
  ASSERT_TRUE(back.ask);
  EXPECT_EQ(back.ask->timeout.count(), 2500);
  EXPECT_THROW(control::parse_request(R"({"op":"register","addr":"10.213.0.2","ask":{"timeout_ms":0}})"),
               control::ProtocolError);
  EXPECT_THROW(control::parse_request(R"({"op":"register","addr":"10.213.0.2","ask":true})"), control::ProtocolError);
}

}  // namespace
}  // namespace netbox::proxy
