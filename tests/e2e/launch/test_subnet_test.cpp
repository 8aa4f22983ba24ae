// test_subnet hands each test process a /24 no other one holds (issue 23 item 6): tests
// that ctest runs in parallel used to pick the same hand-chosen index (70 and 71 were each
// used by two tests). Another process (flock(1), as a second test process would) cannot
// claim a subnet this one holds, and a second hint in this process never gets the same.
#include "launch_fixture.hpp"

#include "support/process.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

namespace netbox::launch_test {
namespace {

std::string lock_of(const Subnet& s) {
  for (const char* dir : {"/run/netbox-test-subnets", "/tmp/netbox-test-subnets"}) {
    const auto path = std::string(dir) + "/" + std::to_string(s.index) + ".lock";
    if (std::filesystem::exists(path)) return path;
  }
  return {};
}

TEST(TestSubnet, AnotherProcessCannotClaimASubnetThisOneHolds) {
  const auto held = test_subnet(155);
  const auto path = lock_of(held);
  ASSERT_FALSE(path.empty()) << "no claim was made for " << held.cidr;
  // flock -n fails (exit 1) while the lock is held elsewhere: exactly what a second test
  // process asking for the same index meets, so it goes on to another.
  const auto other = test::run({"flock", "-n", path, "true"}, std::chrono::seconds(10));
  EXPECT_NE(other.exit_code, 0) << held.cidr << " could be claimed by another process";
}

TEST(TestSubnet, DistinctHintsGetDistinctSubnetsAndAHintKeepsItsOwn) {
  const auto a = test_subnet(154);
  const auto b = test_subnet(153);
  const auto c = test_subnet();
  EXPECT_EQ(std::set<std::string>({a.cidr, b.cidr, c.cidr}).size(), 3u);
  EXPECT_EQ(test_subnet(154).cidr, a.cidr);  // the same test's second call: the same subnet
  for (const auto& s : {a, b, c}) {
    EXPECT_TRUE(s.cidr.starts_with("10.213.")) << s.cidr;
    EXPECT_GE(s.index, 0);
    EXPECT_LE(s.index, 155);
  }
}

}  // namespace
}  // namespace netbox::launch_test
