// Reading Docker/OCI seccomp profiles: what is accepted, and how mistakes are named.
#include "netbox/launcher/launch.hpp"
#include "netbox/launcher/seccomp_profile.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace netbox::launcher {
namespace {

using ::testing::HasSubstr;

std::string error_of(const std::string& json) {
  try {
    seccomp_filter_from_json(json, "p.json");
  } catch (const LaunchError& e) {
    EXPECT_EQ(e.exit_code(), kExitUsage);
    return e.what();
  }
  return "";
}

TEST(SeccompProfile, DockerStyleProfileCompiles) {
  auto f = seccomp_filter_from_json(R"({
    "defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 1,
    "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86"],
    "syscalls": [
      {"names": ["read", "write", "exit_group", "no_such_syscall_anywhere"], "action": "SCMP_ACT_ALLOW"},
      {"names": ["personality"], "action": "SCMP_ACT_ALLOW", "args": [{"index": 0, "value": 0, "op": "SCMP_CMP_EQ"}]},
      {"names": ["mount"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}}
    ]})", "p.json");
  EXPECT_FALSE(f.empty());
  EXPECT_FALSE(f.compile().empty());
}

TEST(SeccompProfile, DefaultProfileCompiles) { EXPECT_FALSE(default_seccomp_filter().compile().empty()); }

TEST(SeccompProfile, OffMeansNoFilter) { EXPECT_TRUE(seccomp_filter_for("off").empty()); }

TEST(SeccompProfile, MistakesNameTheFileAndKey) {
  EXPECT_THAT(error_of("{"), HasSubstr("p.json:1:"));
  EXPECT_THAT(error_of("[]"), HasSubstr("expected a JSON object"));
  EXPECT_THAT(error_of("{}"), HasSubstr("defaultAction: missing"));
  EXPECT_THAT(error_of(R"({"defaultAction": "SCMP_ACT_MAYBE"})"), HasSubstr("defaultAction: unknown action 'SCMP_ACT_MAYBE'"));
  EXPECT_THAT(error_of(R"({"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_VAX"]})"),
              HasSubstr("architectures[0]: unknown architecture 'SCMP_ARCH_VAX'"));
  EXPECT_THAT(error_of(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": {}})"), HasSubstr("syscalls: expected an array"));
  EXPECT_THAT(error_of(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["read"]}]})"),
              HasSubstr("syscalls[0].action: missing"));
  EXPECT_THAT(error_of(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["read"], "action": "SCMP_ACT_ERRNO",
                 "args": [{"index": 9, "value": 1, "op": "SCMP_CMP_EQ"}]}]})"),
              HasSubstr("syscalls[0].args[0].index"));
  EXPECT_THAT(error_of(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["read"], "action": "SCMP_ACT_ERRNO",
                 "args": [{"index": 0, "value": 1, "op": "SCMP_CMP_ROUGHLY"}]}]})"),
              HasSubstr("syscalls[0].args[0].op"));
  // Found by fuzz_seccomp_profile: a number too large for a double escaped as a crash-like 125.
  EXPECT_THAT(error_of(R"({"defaultAction": "SCMP_ACT_ALLOW", "defaultErrnoRet": 1e400})"), HasSubstr("p.json"));
}

TEST(SeccompProfile, MissingFileIsNamed) {
  try {
    seccomp_filter_for("/nonexistent/profile.json");
    FAIL();
  } catch (const LaunchError& e) {
    EXPECT_EQ(e.exit_code(), kExitUsage);
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/profile.json"));
  }
}

}  // namespace
}  // namespace netbox::launcher
