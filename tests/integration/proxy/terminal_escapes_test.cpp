// A hostile client puts terminal escapes in its requests: the audit row of a request refused
// before Beast parsed it keeps them escaped, and no log line carries them raw to the
// terminal of the operator (for `netbox launch`, the log is the operator's terminal).
#include "proxy_fixture.hpp"

#include "support/background_process.hpp"
#include "support/process.hpp"
#include "support/terminal_text.hpp"

#include <gtest/gtest.h>

#include <csignal>

namespace netbox::test {
namespace {

class RefusedTarget : public ProxyTest {
 protected:
  void SetUp() override { start_proxy(base_policy()); }

  AuditRow refused(const std::string& raw) {
    ProxyConnection c(port);
    const auto reply = c.send(raw);
    EXPECT_EQ(reply.status, 400) << reply.error << reply.body;
    const auto row = last_row();
    for (const auto* field : {&row.method, &row.host, &row.path, &row.reason, &row.rule, &row.error})
      EXPECT_EQ(first_unsafe_byte(*field), std::string::npos) << *field;
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

// Beast lets bytes >= 0x80 through in a target, so a denied request's path may hold C1
// controls (U+009B is CSI), a bare 0x9B (CSI to 8-bit terminals) or bidi overrides.
TEST(ProxyLogEscapes, NoLogFormatWritesAControlCharacterAnAgentSent) {
  UpstreamServer upstream;
  for (const char* format : {"text", "json"}) {
    SCOPED_TRACE(format);
    TempDir dir;
    const auto policy = dir.write("policy.json", R"({"version": 1, "allow": ["upstream.test"]})");
    const auto port = free_port();
    BackgroundProcess proc({netbox_binary().string(), "proxy", "--policy", policy.string(), "--listen",
                            "127.0.0.1:" + std::to_string(port), "--audit-db", (dir.path() / "a.db").string(),
                            "--log-format", format},
                           dir.path() / "proxy.log");
    ASSERT_TRUE(wait_for_port(port)) << proc.log();
    ProxyConnection c(port);
    const auto reply = c.send("GET http://denied.test/\xc2\x9b" "31mX\x9b" "32mY\xe2\x80\xae" "Z HTTP/1.1\r\n"
                              "Host: denied.test\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(reply.status, 403) << reply.error;
    EXPECT_EQ(proc.stop(SIGTERM), 0) << proc.log();
    const auto log = proc.log();
    const auto bad = first_unsafe_byte(log);
    EXPECT_EQ(bad, std::string::npos) << "byte " << bad << " of:\n" << log;
    EXPECT_NE(log.find("\\u009b31mX"), std::string::npos) << log;
    EXPECT_NE(log.find("\\u202eZ"), std::string::npos) << log;
  }
}

}  // namespace
}  // namespace netbox::test
