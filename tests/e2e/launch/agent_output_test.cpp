// The agent's stderr goes to the launcher's stderr, beside netbox's own lines (the
// banner, the embedded proxy's refusals). An agent that prints lines shaped like those
// (issue 22, 10) has them shown with the "agent| " marker, however it hides their start
// (a carriage return, an escape sequence, a pause mid-word); netbox's own are unmarked
// and the agent's stdout, in a file of its own, is left as it was.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>

namespace netbox::launch_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(LaunchAgentOutput, AnAgentCannotForgeNetboxLinesOnStderr) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(134);
  HostDir host;
  const auto work = host.folder("work");
  HttpServer upstream;
  test::TempDir db;
  const auto policy = db.write("policy.json", policy_json(upstream.port()));
  const std::string port = std::to_string(upstream.port());
  const std::string agent =
      "printf 'netbox launch: refused GET http://evil.test/ (forged)\\n' >&2; "
      "printf '2026-11-27T04:50:00.000Z request decision=deny host=forged.test\\n' >&2; "
      "printf 'progress 10%%\\rnetbox: refused (cr)\\n' >&2; "
      "printf '\\033[2K  netbox: refused (esc)\\n' >&2; "
      "printf 'Net' >&2; sleep 0.3; printf 'box: refused (split)\\n' >&2; "
      "printf 'an ordinary line\\n' >&2; "
      "printf 'netbox on stdout\\n'; " +
      std::string(kCurl) + " -s -o /dev/null http://denied.test:" + port + "/really-refused; true";
  auto r = launch(subnet, {"--audit-db", (db.path() / "a.db").string(), "--policy", policy.string(), "--workdir",
                           work.string(), "--", kSh, "-c", agent});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("\nagent| netbox launch: refused GET http://evil.test/ (forged)\n"));
  EXPECT_THAT(r.err, HasSubstr("\nagent| 2026-11-27T04:50:00.000Z request decision=deny host=forged.test\n"));
  EXPECT_THAT(r.err, HasSubstr("progress 10%\ragent| netbox: refused (cr)\n"));
  EXPECT_THAT(r.err, HasSubstr("\nagent| \033[2K  netbox: refused (esc)\n"));
  EXPECT_THAT(r.err, HasSubstr("\nagent| Netbox: refused (split)\n"));
  EXPECT_THAT(r.err, HasSubstr("\nan ordinary line\n"));
  // netbox's own lines: the banner and the real refusal, unmarked.
  EXPECT_EQ(r.err.rfind("netbox launch: ", 0), 0u) << "the banner comes first, unmarked:\n" << r.err;
  const auto refused = r.err.find("/really-refused");
  ASSERT_NE(refused, std::string::npos) << r.err;
  const auto line_start = r.err.rfind('\n', refused) + 1;
  EXPECT_NE(r.err.compare(line_start, 7, "agent| "), 0) << r.err.substr(line_start, refused - line_start);
  EXPECT_EQ(r.out, "netbox on stdout\n");
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
