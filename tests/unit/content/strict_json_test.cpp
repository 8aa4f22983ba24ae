#include "netbox/content/strict_json.hpp"

#include <gtest/gtest.h>

namespace netbox::content {
namespace {

std::string refused(std::string_view text) {
  auto r = read_strict_json(text);
  if (auto* j = std::get_if<nlohmann::json>(&r)) {
    ADD_FAILURE() << text << " was read as " << j->dump();
    return {};
  }
  return std::get<JsonRefusal>(r).reason;
}

TEST(StrictJsonTest, ReadsOrdinaryJson) {
  auto r = read_strict_json(R"({"jsonrpc": "2.0", "method": "tools/call", "params": {"a": [1, 2, {"b": null}]}})");
  ASSERT_TRUE(std::holds_alternative<nlohmann::json>(r));
  EXPECT_EQ(std::get<nlohmann::json>(r)["params"]["a"][2]["b"], nullptr);
}

TEST(StrictJsonTest, ADuplicateKeyIsRefusedAtAnyDepth) {
  // A checker reading the first "method" and a server acting on the last is a bypass.
  EXPECT_NE(refused(R"({"method": "tools/list", "method": "tools/call"})").find("\"method\" appears twice"),
            std::string::npos);
  EXPECT_NE(refused(R"({"a": [{"x": 1, "y": 2, "x": 3}]})").find("\"x\""), std::string::npos);
  // The same key in sibling objects is not a duplicate.
  EXPECT_TRUE(std::holds_alternative<nlohmann::json>(read_strict_json(R"([{"x": 1}, {"x": 2}])")));
  EXPECT_TRUE(std::holds_alternative<nlohmann::json>(read_strict_json(R"({"x": {"x": {"x": 1}}})")));
}

// A Go server (encoding/json) reads "Name" for "name", last one winning, and folds the
// long s and the Kelvin sign into s and k: netbox checking "name" while the server calls
// "Name" is a bypass of the tool allow-list (GHSA-wvj2-96wp-fq3f).
TEST(StrictJsonTest, KeysThatDifferOnlyInCaseAreRefused) {
  const auto r = refused(R"({"params": {"name": "search", "arguments": {}, "Name": "delete_repo"}})");
  EXPECT_NE(r.find("\"name\" and \"Name\" differ only in case"), std::string::npos) << r;
  EXPECT_NE(refused("{\"task\": 1, \"TASK\": 2}").find("differ only in case"), std::string::npos);
  EXPECT_NE(refused("{\"kind\": 1, \"\\u212aind\": 2}").find("differ only in case"), std::string::npos);  // Kelvin sign
  EXPECT_NE(refused("{\"search\": 1, \"\\u017fearch\": 2}").find("differ only in case"), std::string::npos);  // long s
  // Different keys, and the same key in sibling objects, still read.
  EXPECT_TRUE(std::holds_alternative<nlohmann::json>(read_strict_json(R"({"name": 1, "names": 2})")));
  EXPECT_TRUE(std::holds_alternative<nlohmann::json>(read_strict_json(R"([{"Name": 1}, {"name": 2}])")));
}

TEST(StrictJsonTest, NestingBeyondTheBoundIsRefused) {
  std::string deep(100000, '[');
  EXPECT_NE(refused(deep).find("nested deeper"), std::string::npos);
  std::string ok = std::string(64, '[') + std::string(64, ']');
  EXPECT_TRUE(std::holds_alternative<nlohmann::json>(read_strict_json(ok)));
  EXPECT_NE(refused(std::string(65, '[') + std::string(65, ']')).find("nested deeper"), std::string::npos);
}

TEST(StrictJsonTest, BrokenTextIsRefused) {
  refused(R"({"a": 1} {"b": 2})");
  refused("{\"a\": \"\xff\"}");
  refused(R"({"a": "\ud800"})");
  refused(R"({"a": 1,})");
  refused("");
  EXPECT_NE(refused(R"({"id": 999999999999e9999999})").find("number too large"), std::string::npos);
}

TEST(StrictJsonTest, ARefusalsReasonIsValidTextWhateverTheBytes) {
  // Found by fuzz_json_rpc: the parser's own message quoted the bytes it read, and a
  // JSON-RPC error answer carrying it could not be serialised.
  for (std::string_view text : {"{\"a\": \xff\xfe'", "[1, \xc3", "\x80"}) {
    const std::string reason = refused(text);
    EXPECT_FALSE(reason.empty());
    EXPECT_NO_THROW((void)nlohmann::json(reason).dump()) << reason;
  }
}

}  // namespace
}  // namespace netbox::content
