// A hostile client puts terminal escapes in a request the proxy refuses before Beast
// parses it: the audit row keeps them escaped, so no export can replay them raw.
#include "proxy_fixture.hpp"

#include <gtest/gtest.h>

namespace netbox::test {
namespace {

// The first byte of `s` that a terminal would act on (C0 but LF, DEL, C1 as UTF-8 or a
// bare byte), or npos.
std::size_t first_control(const std::string& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f)) return i;
    if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9f) return i;
  }
  return std::string::npos;
}

class RefusedTarget : public ProxyTest {
 protected:
  void SetUp() override { start_proxy(base_policy()); }

  AuditRow refused(const std::string& raw) {
    ProxyConnection c(port);
    const auto reply = c.send(raw);
    EXPECT_EQ(reply.status, 400) << reply.error << reply.body;
    const auto row = last_row();
    for (const auto* field : {&row.method, &row.host, &row.path, &row.reason, &row.rule, &row.error})
      EXPECT_EQ(first_control(*field), std::string::npos) << *field;
    return row;
  }
};

TEST_F(RefusedTarget, EscapesInTheTargetAreStoredEscaped) {
  // The request line is read; the bare LF after it gets the request refused by netbox's own
  // head check, with the raw target in hand.
  auto row = refused("GET http://upstream.test/\x1b]0;owned\x07\x1b[2J\xc2\x9b" "31m\x7f\x9b HTTP/1.1\r\nHost: x\nA: b\r\n\r\n");
  EXPECT_EQ(row.path, "/\\x1b]0;owned\\x07\\x1b[2J\\u009b31m\\x7f\\x9b");
  EXPECT_EQ(row.host, "upstream.test");

  row = refused("CONNECT up\x1b[31mstream.test:443 HTTP/1.1\r\nHost: x\nA: b\r\n\r\n");
  EXPECT_EQ(row.host.find("\\x1b[31m"), 2u) << row.host;
}

TEST_F(RefusedTarget, EscapesInTheMethodAndInEchoedHeaderValuesAreStoredEscaped) {
  auto row = refused("G\x1b[2JET http://upstream.test/ HTTP/1.1\r\nHost: x\nA: b\r\n\r\n");
  EXPECT_EQ(row.method, "G\\x1b[2JET");

  row = refused("GET http://upstream.test/ HTTP/1.1\r\nHost: x\r\nContent-Length: 1\x1b[8m\r\n\r\n");
  EXPECT_NE(row.reason.find("'1\\x1b[8m'"), std::string::npos) << row.reason;
}

}  // namespace
}  // namespace netbox::test
