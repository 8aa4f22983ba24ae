// Escaping agent-chosen text before an operator reads it.
#include "netbox/audit/printable.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

namespace netbox::audit {
namespace {

TEST(Printable, ControlCharactersBecomeVisibleEscapes) {
  EXPECT_EQ(escape_controls("a\x1b[31mb\x07\r\n\t\x01\x7f"), "a\\x1b[31mb\\x07\\x0d\\x0a\\x09\\x01\\x7f");
  EXPECT_EQ(escape_controls(std::string("nul\0end", 7)), "nul\\x00end");
  // C1 controls as UTF-8 (U+009B is CSI to many terminals), and bidi overrides.
  EXPECT_EQ(escape_controls("\xc2\x80\xc2\x9b" "1m\xc2\x9f"), "\\u0080\\u009b1m\\u009f");
  EXPECT_EQ(escape_controls("x\xe2\x80\xae" "y\xe2\x81\xa6z\xe2\x80\xa8"), "x\\u202ey\\u2066z\\u2028");
}

TEST(Printable, BytesThatAreNotUtf8BecomeHexEscapes) {
  EXPECT_EQ(escape_controls("\x9b" "31m"), "\\x9b31m");  // CSI as a bare byte (8-bit terminals)
  EXPECT_EQ(escape_controls("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(escape_controls("\xc0\xaf"), "\\xc0\\xaf");          // overlong '/'
  EXPECT_EQ(escape_controls("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(escape_controls("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
  EXPECT_EQ(escape_controls("end\xe2\x82"), "end\\xe2\\x82");   // cut short
}

TEST(Printable, PrintableTextIsKept) {
  for (const char* s : {"", "/v1/items?q=a%20b", "b\xc3\xbc" "cher.example", "\xe6\x97\xa5\xe6\x9c\xac",
                        "\xf0\x9f\x98\x80", "back\\slash", "\xc2\xa0nbsp"})
    EXPECT_EQ(escape_controls(s), s);
}

TEST(Printable, NeedsEscapingSaysWhetherEscapingChangesTheText) {
  for (const char* s : {"", "/plain?q=1", "b\xc3\xbc" "cher", "\xf0\x9f\x98\x80", "back\\slash"}) {
    EXPECT_FALSE(needs_escaping(s)) << s;
    EXPECT_EQ(escape_controls(s), s);
  }
  for (const char* s : {"a\x1b", "\x7f", "\xc2\x9b", "\x9b", "x\xe2\x80\xae", "\xff", "tab\there", "cut\xe2\x82"}) {
    EXPECT_TRUE(needs_escaping(s)) << s;
    EXPECT_NE(escape_controls(s), s);
  }
}

TEST(Printable, JsonTextGetsEscapesForWhatTheSerializerLeftRawAndParsesToTheSameValues) {
  const std::string value = "a\x7f" "b\xc2\x9b" "c\xe2\x80\xae" "d\xc3\xbc\x1b";
  const std::string dumped = nlohmann::json{{"k", value}}.dump(2);
  const std::string safe = escape_controls_in_json(dumped);
  EXPECT_EQ(safe.find('\x7f'), std::string::npos) << safe;
  EXPECT_EQ(safe.find("\xc2\x9b"), std::string::npos) << safe;
  EXPECT_EQ(safe.find("\xe2\x80\xae"), std::string::npos) << safe;
  EXPECT_NE(safe.find("a\\u007fb\\u009bc\\u202ed\xc3\xbc\\u001b"), std::string::npos) << safe;
  EXPECT_EQ(nlohmann::json::parse(safe)["k"], value);
}

}  // namespace
}  // namespace netbox::audit
