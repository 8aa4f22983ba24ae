// Issue 25: a byte budget holds on a captured connection too. The agent, inside `netbox
// launch` (transparent capture, no proxy variables used), uploads past `limits.bytes_up`
// to an allowed host whose server reads every byte: the body is cut at the budget, the
// row says `budget` with the rule, and the agent's next request is refused 403 with
// netbox's reason, before it reaches the server.
#include "launch_fixture.hpp"
#include "support/raw_upstream.hpp"

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include <sys/socket.h>

namespace netbox::launch_test {
namespace {

using ::testing::HasSubstr;

TEST(LaunchCaptureBudget, AnUploadPastBytesUpOnACapturedConnectionIsCutAndTheNextRequestRefused) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(57);
  // A GET is answered; anything else is read to its end (a sink), so only the proxy's cut
  // can stop an upload.
  test::RawUpstream upstream([](test::RawUpstream& server, int fd, std::size_t) {
    std::string pending;
    const auto head = server.read_head(fd, pending);
    if (head.rfind("GET ", 0) == 0) {
      test::send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n");
      return;
    }
    char buf[65536];
    while (::recv(fd, buf, sizeof buf, 0) > 0) {
    }
  });
  test::TempDir dir;
  auto policy = nlohmann::json::parse(policy_json(upstream.port()));
  policy["limits"] = {{"bytes_up", "256K"}};
  const auto file = dir.write("policy.json", policy.dump());
  const auto db = dir.path() / "audit.db";
  const std::string base = "http://allowed.test:" + std::to_string(upstream.port());
  // 4 MB of upload, then one more request; --noproxy: the connections are captured.
  const std::string script = "head -c 4000000 /dev/zero > /tmp/big; " + std::string(kCurl) +
                             " -s -m 60 --noproxy '*' -o /dev/null -X PUT --data-binary @/tmp/big " + base +
                             "/up; echo; " + kCurl + " -s -m 60 --noproxy '*' -D - -o /dev/null " + base + "/next";
  const auto r = launch(subnet, {"--policy", file.string(), "--audit-db", db.string(), "--", kSh, "-c", script});
  EXPECT_THAT(r.out, HasSubstr("HTTP/1.1 403")) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("X-Netbox-Decision: budget")) << r.out;
  const auto up = query(db, "SELECT decision, rule, bytes_up FROM requests WHERE path = '/up'");
  ASSERT_EQ(up.size(), 1u) << ::testing::PrintToString(up);
  EXPECT_EQ(up[0][0], "budget");
  EXPECT_EQ(up[0][1], "limits.bytes_up");
  EXPECT_LE(std::stoll(up[0][2]), 256 * 1024 + 64 * 1024) << "cut at the budget, within one relay buffer";
  // The upload went through the capture: its parent is the captured connection's row.
  EXPECT_EQ(query(db, "SELECT count(*) FROM requests WHERE path = '/up' AND parent_id IS NOT NULL"),
            (std::vector<std::vector<std::string>>{{"1"}}));
  EXPECT_EQ(upstream.requests(), 1u) << "the refused request never reached the server";
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
