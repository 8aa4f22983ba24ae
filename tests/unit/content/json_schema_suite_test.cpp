// The official JSON Schema test suite (Debian's json-schema-test-suite, draft 7) for every
// keyword netbox's body schemas support: each case's verdict must match the suite's. A
// group whose schema uses a keyword netbox does not check must be refused when compiled,
// never run with that keyword ignored.
#include "netbox/content/json_schema.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace netbox::content {
namespace {

const std::filesystem::path kSuite = "/usr/share/json-schema-test-suite/tests/draft7";

class JsonSchemaSuite : public ::testing::TestWithParam<const char*> {};

TEST_P(JsonSchemaSuite, EveryCaseGetsTheSuitesVerdict) {
  const auto file = kSuite / (std::string(GetParam()) + ".json");
  std::ifstream in(file);
  ASSERT_TRUE(in) << file << " is missing: scripts/install-deps.sh installs json-schema-test-suite";
  const auto groups = nlohmann::json::parse(in);
  int ran = 0;
  for (const auto& group : groups) {
    const std::string what = group["description"].get<std::string>();
    auto compiled = JsonSchema::compile(group["schema"]);
    if (auto* err = std::get_if<SchemaError>(&compiled)) {
      // Refused, not half-checked: the refusal names the keyword it does not support.
      EXPECT_NE(err->reason.find("netbox does not check"), std::string::npos)
          << what << ": refused for another reason: " << err->pointer << " " << err->reason;
      continue;
    }
    const auto& schema = std::get<JsonSchema>(compiled);
    for (const auto& test : group["tests"]) {
      const bool valid = test["valid"].get<bool>();
      const auto violation = schema.check(test["data"]);
      EXPECT_EQ(!violation.has_value(), valid)
          << GetParam() << ": " << what << " / " << test["description"].get<std::string>()
          << (violation ? " -> " + violation->pointer + ": " + violation->reason : std::string());
      ++ran;
    }
  }
  EXPECT_GT(ran, 0) << "no case of " << GetParam() << " ran";
}

INSTANTIATE_TEST_SUITE_P(Draft7, JsonSchemaSuite,
                         ::testing::Values("type", "properties", "required", "additionalProperties", "items", "enum",
                                           "const", "pattern", "minimum", "maximum", "exclusiveMinimum",
                                           "exclusiveMaximum", "minLength", "maxLength", "minItems", "maxItems",
                                           "boolean_schema"),
                         [](const auto& case_info) { return std::string(case_info.param); });

}  // namespace
}  // namespace netbox::content
