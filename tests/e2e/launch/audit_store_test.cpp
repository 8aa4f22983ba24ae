// The agent cannot reach the audit store (issue 12, item 1). Before, the database was
// created 0644 in the launcher's working directory, which is the agent's: the agent read
// every row and, with a read lock on the -shm, stopped the writer. Now a launch without
// --audit-db keeps it in /var/lib/netbox, made 0700, files 0600, and the agent can open
// none of them (the folder is covered by an empty one inside, so not even the names show).
// The host's /var/lib is left alone: the launch runs in a private mount
// namespace of the test's own, with a tmpfs on /var/lib.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>

namespace netbox::launch_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(LaunchAuditStore, TheDefaultStoreIsPrivateAndTheAgentCannotOpenItsFiles) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(61);
  test::TempDir dir;
  const auto copy = dir.path() / "copy";
  // Inside: try every file of the store as the agent (nobody), and leave one refused row.
  const std::string agent =
      "for f in /var/lib/netbox/audit.db /var/lib/netbox/audit.db-wal /var/lib/netbox/audit.db-shm; do "
      "if cat \"$f\" >/dev/null 2>&1; then echo \"AGENT READ $f\"; else echo \"agent refused $f\"; fi; done; "
      "ls -a /var/lib/netbox 2>/dev/null | grep -q audit && echo \"AGENT LISTED the store\"; " +
      std::string(kCurl) + " -s -o /dev/null http://denied.test/; true";
  const std::string script =
      "mount -t tmpfs -o mode=0755 tmpfs /var/lib && '" + test::netbox_binary().string() + "' launch --subnet " +
      subnet.cidr + " -- " + kSh + " -c '" + agent + "'; echo \"launch exit $?\"; " +
      "stat -c '%a %U %n' /var/lib/netbox /var/lib/netbox/audit.db /var/lib/netbox/audit.db-wal "
      "/var/lib/netbox/audit.db-shm; mkdir '" + copy.string() + "' && cp /var/lib/netbox/audit.db* '" +
      copy.string() + "/'";
  const auto r = test::run({"unshare", "--mount", "--propagation", "private", kSh, "-c", script});
  EXPECT_THAT(r.out, HasSubstr("launch exit 0")) << r.out << r.err;
  for (const char* f : {"audit.db", "audit.db-wal", "audit.db-shm"})
    EXPECT_THAT(r.out, HasSubstr(std::string("agent refused /var/lib/netbox/") + f)) << r.out;
  EXPECT_THAT(r.out, Not(HasSubstr("AGENT"))) << r.out;
  EXPECT_THAT(r.out, HasSubstr("700 root /var/lib/netbox\n"));
  EXPECT_THAT(r.out, HasSubstr("600 root /var/lib/netbox/audit.db\n"));
  EXPECT_THAT(r.out, HasSubstr("600 root /var/lib/netbox/audit.db-wal\n"));
  EXPECT_THAT(r.out, HasSubstr("600 root /var/lib/netbox/audit.db-shm\n"));
  EXPECT_EQ(query(copy / "audit.db", "SELECT host FROM requests"),
            (std::vector<std::vector<std::string>>{{"denied.test"}}));
  EXPECT_EQ(query(copy / "audit.db", "SELECT COUNT(*) FROM agents WHERE ended IS NOT NULL"),
            (std::vector<std::vector<std::string>>{{"1"}}));
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
