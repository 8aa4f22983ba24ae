#include "netbox/content/json_rpc.hpp"

#include <gtest/gtest.h>

namespace netbox::content {
namespace {

JsonRpcBody read(std::string_view text) {
  auto r = read_json_rpc(text);
  if (auto* e = std::get_if<JsonRpcRefusal>(&r)) {
    ADD_FAILURE() << text << ": " << e->pointer << " " << e->reason;
    return {};
  }
  return std::get<JsonRpcBody>(std::move(r));
}

JsonRpcRefusal refused(std::string_view text) {
  auto r = read_json_rpc(text);
  EXPECT_TRUE(std::holds_alternative<JsonRpcRefusal>(r)) << text << " was read";
  return std::holds_alternative<JsonRpcRefusal>(r) ? std::get<JsonRpcRefusal>(r) : JsonRpcRefusal{};
}

TEST(JsonRpcTest, AnMcpToolCallNamesItsToolAndArguments) {
  const auto body = read(R"({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                             "params": {"name": "send_mail", "arguments": {"to": "ann@example.com"}}})");
  ASSERT_EQ(body.calls.size(), 1u);
  EXPECT_FALSE(body.batch);
  const auto& c = body.calls[0];
  EXPECT_EQ(c.kind, JsonRpcCall::Kind::request);
  EXPECT_EQ(c.method, "tools/call");
  EXPECT_EQ(c.tool, "send_mail");
  EXPECT_EQ(c.arguments["to"], "ann@example.com");
  EXPECT_EQ(c.id, 7);
}

TEST(JsonRpcTest, ABatchIsReadElementByElement) {
  const auto body = read(R"([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                             {"jsonrpc": "2.0", "method": "notifications/initialized"},
                             {"jsonrpc": "2.0", "id": "x", "result": {}},
                             {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "rm"}}])");
  ASSERT_EQ(body.calls.size(), 4u);
  EXPECT_TRUE(body.batch);
  EXPECT_EQ(body.calls[1].kind, JsonRpcCall::Kind::notification);
  EXPECT_EQ(body.calls[2].kind, JsonRpcCall::Kind::response);
  EXPECT_EQ(body.calls[3].tool, "rm");
  EXPECT_EQ(body.calls[3].pointer, "/3");
}

TEST(JsonRpcTest, WhatAServerCouldReadOtherwiseIsRefused) {
  // Two methods: a checker and a server could each take another one.
  EXPECT_NE(refused(R"({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "method": "tools/call"})")
                .reason.find("twice"),
            std::string::npos);
  EXPECT_NE(refused(R"({"jsonrpc": "2.0", "id": 1, "method": "a", "Method": "b"})").reason.find("differ only in case"),
            std::string::npos);
  EXPECT_EQ(refused(R"({"jsonrpc": "2.0", "id": 1, "method": "a", "Methods": "b"})").pointer, "/Methods");
  EXPECT_EQ(refused(R"({"jsonrpc": "1.0", "id": 1, "method": "a"})").pointer, "/jsonrpc");
  EXPECT_EQ(refused(R"({"id": 1, "method": "a"})").pointer, "/jsonrpc");
  EXPECT_EQ(refused(R"({"jsonrpc": "2.0", "id": 1, "method": 5})").pointer, "/method");
  EXPECT_EQ(refused(R"({"jsonrpc": "2.0", "id": {}, "method": "a"})").pointer, "/id");
  EXPECT_EQ(refused(R"({"jsonrpc": "2.0", "id": 1, "method": "a", "result": 1})").pointer, "");
  EXPECT_EQ(refused(R"({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"arguments": {}}})").pointer,
            "/params/name");
  EXPECT_EQ(refused(R"({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "a", "arguments": []}})")
                .pointer,
            "/params/arguments");
  EXPECT_EQ(refused(R"([{"jsonrpc": "2.0", "id": 1, "method": "a"}, 3])").pointer, "/1");
  refused("[]");
  refused("not json");
  std::string big = "[";
  for (std::size_t i = 0; i <= kMaxJsonRpcBatch; ++i) big += std::string(i ? "," : "") + R"({"jsonrpc":"2.0","method":"a"})";
  EXPECT_NE(refused(big + "]").reason.find("batch of more than"), std::string::npos);
}

TEST(JsonRpcTest, ARefusalAnswersEveryRequestOfTheBody) {
  const auto body = read(R"([{"jsonrpc": "2.0", "id": 1, "method": "a"}, {"jsonrpc": "2.0", "method": "n"},
                             {"jsonrpc": "2.0", "id": "b", "method": "c"}])");
  const auto answer = json_rpc_error_body(&body, kJsonRpcPolicyRefusal, "tool rm is not allowed");
  ASSERT_TRUE(answer.is_array());
  ASSERT_EQ(answer.size(), 2u);
  EXPECT_EQ(answer[1]["id"], "b");
  EXPECT_EQ(answer[1]["error"]["code"], kJsonRpcPolicyRefusal);
  EXPECT_EQ(answer[1]["error"]["message"], "tool rm is not allowed");
  const auto unreadable = json_rpc_error_body(nullptr, kJsonRpcInvalidRequest, "not JSON");
  EXPECT_TRUE(unreadable["id"].is_null());
  EXPECT_EQ(unreadable["jsonrpc"], "2.0");
}

}  // namespace
}  // namespace netbox::content
