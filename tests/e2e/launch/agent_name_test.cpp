// An agent's name is what every audit row of it says: the launcher refuses a name that
// would pass for unregistered clients or carry control characters to an operator's
// terminal, before anything is set up.
#include "launch_fixture.hpp"

namespace netbox::launch_test {
namespace {

TEST(LaunchAgentName, ReservedEmptyOrControlCharacterNamesAreUsageErrors) {
  NETBOX_REQUIRE_ROOT();
  const Subnet subnet = test_subnet(150);
  for (const std::string& bad : {std::string("anonymous"), std::string("evil\x1b[2Jname"), std::string("a\x9b" "b")}) {
    auto r = launch(subnet, {"--name", bad, "--", "/bin/true"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--name"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << "the message repeats the raw escape";
  }
  expect_nothing_left(subnet);
}

TEST(LaunchAgentName, ACommandWithAnOddFileNameGetsAUsableDefaultName) {
  NETBOX_REQUIRE_ROOT();
  const Subnet subnet = test_subnet(151);
  HostDir dir;
  const auto odd = dir.path() / "run\x1bme now";
  std::filesystem::copy_file("/bin/true", odd);
  std::filesystem::permissions(odd, std::filesystem::perms::all);
  test::TempDir store;
  const auto db = store.path() / "audit.db";
  auto r = launch(subnet, {"--audit-db", db.string(), "--", odd.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // The row names it in characters a terminal shows as they are.
  const auto names = test::query_column(db, "SELECT name FROM agents");
  ASSERT_EQ(names.size(), 1U);
  EXPECT_EQ(names[0].rfind("run_me_now-", 0), 0U) << names[0];
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
