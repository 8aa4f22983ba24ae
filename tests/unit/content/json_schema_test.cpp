#include "netbox/content/json_schema.hpp"

#include <gtest/gtest.h>

namespace netbox::content {
namespace {

JsonSchema compile(const char* text) {
  auto r = JsonSchema::compile(nlohmann::json::parse(text));
  if (auto* e = std::get_if<SchemaError>(&r)) ADD_FAILURE() << e->pointer << ": " << e->reason;
  return std::get<JsonSchema>(std::move(r));
}

SchemaError refusal(const char* text) {
  auto r = JsonSchema::compile(nlohmann::json::parse(text));
  EXPECT_TRUE(std::holds_alternative<SchemaError>(r)) << text << " was accepted";
  return std::holds_alternative<SchemaError>(r) ? std::get<SchemaError>(r) : SchemaError{};
}

// A mail API whose recipients must be the team's, the example the policy docs use.
constexpr const char* kMail = R"({
  "type": "object",
  "required": ["to", "subject"],
  "additionalProperties": false,
  "properties": {
    "to": {"type": "array", "maxItems": 5, "items": {"type": "string", "pattern": "^[a-z.]+@example\\.com$"}},
    "subject": {"type": "string", "maxLength": 100},
    "body": {"type": "string"}
  }
})";

TEST(JsonSchemaTest, AConformingBodyPasses) {
  EXPECT_FALSE(compile(kMail).check(nlohmann::json::parse(R"({"to": ["ann@example.com"], "subject": "hi"})")));
}

TEST(JsonSchemaTest, TheFirstFailureIsNamedByItsPointer) {
  const auto schema = compile(kMail);
  auto v = schema.check(nlohmann::json::parse(R"({"to": ["ann@example.com", "eve@evil.test"], "subject": "x"})"));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->pointer, "/to/1");
  EXPECT_NE(v->reason.find("pattern"), std::string::npos) << v->reason;

  v = schema.check(nlohmann::json::parse(R"({"to": [], "subject": "x", "bcc": "eve@evil.test"})"));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->pointer, "/bcc");
  EXPECT_NE(v->reason.find("additionalProperties"), std::string::npos) << v->reason;

  v = schema.check(nlohmann::json::parse(R"({"to": []})"));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->pointer, "");
  EXPECT_NE(v->reason.find("\"subject\""), std::string::npos) << v->reason;
}

TEST(JsonSchemaTest, PointersEscapeTheirSegments) {
  const auto schema = compile(R"({"properties": {"a/b~c": {"type": "string"}}})");
  auto v = schema.check(nlohmann::json::parse(R"({"a/b~c": 1})"));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->pointer, "/a~1b~0c");
}

TEST(JsonSchemaTest, AQueryMustStartWithSelect) {
  const auto schema = compile(R"({"properties": {"sql": {"type": "string", "pattern": "^\\s*(?i:select)\\s"}}})");
  EXPECT_FALSE(schema.check(nlohmann::json::parse(R"({"sql": "SELECT 1"})")));
  EXPECT_TRUE(schema.check(nlohmann::json::parse(R"({"sql": "DROP TABLE users"})")));
  EXPECT_TRUE(schema.check(nlohmann::json::parse(R"({"sql": "delete from t; select 1"})")));
}

TEST(JsonSchemaTest, LengthsCountCharactersNotBytes) {
  const auto schema = compile(R"({"maxLength": 2})");
  EXPECT_FALSE(schema.check(nlohmann::json("\xc3\xa9\xc3\xa9")));  // two characters, four bytes
  EXPECT_TRUE(schema.check(nlohmann::json("abc")));
}

TEST(JsonSchemaTest, APatternRunsInLinearTimeOnHostileText) {
  // (a+)+$ against a long run of a's and one other character is the classic catastrophic
  // backtracking case: std::regex would take exponential time (or exhaust the stack).
  // RE2 answers; this test would hang, not fail, without it.
  const auto schema = compile(R"({"pattern": "^(a+)+$"})");
  EXPECT_TRUE(schema.check(nlohmann::json(std::string(100000, 'a') + "!")));
  EXPECT_FALSE(schema.check(nlohmann::json(std::string(100000, 'a'))));
}

TEST(JsonSchemaTest, UnsupportedKeywordsAreRefusedNeverIgnored) {
  for (const char* s : {R"({"anyOf": [{"type": "string"}]})", R"({"properties": {"a": {"$ref": "#"}}})",
                        R"({"patternProperties": {"x": false}})", R"({"format": "email"})",
                        R"({"items": [{"type": "string"}]})", R"({"if": true})"}) {
    const auto e = refusal(s);
    EXPECT_FALSE(e.pointer.empty()) << s;
  }
  EXPECT_EQ(refusal(R"({"properties": {"a": {"$ref": "#"}}})").pointer, "/properties/a/$ref");
}

TEST(JsonSchemaTest, MalformedKeywordValuesAreRefused) {
  EXPECT_EQ(refusal(R"({"type": "text"})").pointer, "/type");
  EXPECT_EQ(refusal(R"({"maxLength": -1})").pointer, "/maxLength");
  EXPECT_EQ(refusal(R"({"maxItems": 1.5})").pointer, "/maxItems");
  EXPECT_EQ(refusal(R"({"required": ["a", "a"]})").pointer, "/required/1");
  EXPECT_EQ(refusal(R"({"enum": []})").pointer, "/enum");
  EXPECT_EQ(refusal(R"({"minimum": "3"})").pointer, "/minimum");
  // Look-around and back-references are ECMA-262, not RE2: refused with the reason.
  const auto e = refusal(R"x({"pattern": "^(?!admin)"})x");
  EXPECT_EQ(e.pointer, "/pattern");
  EXPECT_NE(e.reason.find("RE2"), std::string::npos) << e.reason;
}

TEST(JsonSchemaTest, DeeplyNestedSchemasAreRefused) {
  std::string s = "true";
  for (int i = 0; i < 40; ++i) s = std::string("{\"items\": ") + s + "}";
  const auto e = refusal(s.c_str());
  EXPECT_NE(e.reason.find("deeper"), std::string::npos) << e.reason;
}

TEST(JsonSchemaTest, AnnotationsChangeNothing) {
  const auto schema = compile(R"({"title": "t", "description": "d", "$comment": "c", "default": 1, "type": "integer"})");
  EXPECT_FALSE(schema.check(nlohmann::json(3)));
  EXPECT_TRUE(schema.check(nlohmann::json("3")));
}

}  // namespace
}  // namespace netbox::content
