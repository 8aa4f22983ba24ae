// Reading Docker/OCI seccomp profiles: what is accepted, and how mistakes are named.
#include "netbox/launcher/launch.hpp"
#include "netbox/launcher/seccomp_profile.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>

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

constexpr std::uint64_t kHigh = std::uint64_t{1} << 32;

// Makes one raw syscall in a child process, under `program` when it is not empty, and
// returns the errno it failed with, or 0 when it succeeded. The compiled filter is what is
// tested, as the kernel runs it; the arguments go in as full 64-bit registers.
int errno_of(const std::vector<sock_filter>& program, long nr, std::uint64_t a0, std::uint64_t a1, std::uint64_t a2) {
  int fds[2] = {-1, -1};
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || install_seccomp_program(program) != 0) _exit(255);
    long r = syscall(nr, a0, a1, a2, fds);
    _exit(r < 0 ? errno : 0);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

TEST(SeccompProfile, DefaultProfileAllowsOnlyListedSocketFamilies) {
  const auto program = default_seccomp_filter().compile();
  const std::uint64_t stream = SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK;
  const std::uint64_t dgram = SOCK_DGRAM | SOCK_CLOEXEC;
  for (long nr : {long{SYS_socket}, long{SYS_socketpair}}) {
    SCOPED_TRACE(nr == SYS_socket ? "socket" : "socketpair");
    // The filter's own answer, whatever the kernel would have said.
    for (std::uint64_t family : {std::uint64_t{AF_UNSPEC}, std::uint64_t{AF_PACKET}, std::uint64_t{AF_VSOCK},
                                 std::uint64_t{AF_BLUETOOTH}, std::uint64_t{AF_ALG}, std::uint64_t{AF_KEY},
                                 std::uint64_t{AF_APPLETALK}, std::uint64_t{AF_CAN}, std::uint64_t{AF_XDP},
                                 std::uint64_t{AF_MAX}, std::uint64_t{1000}, std::uint64_t{0xffffffff},
                                 AF_PACKET | kHigh, AF_VSOCK | kHigh, AF_UNIX | kHigh, AF_INET | kHigh,
                                 AF_NETLINK | kHigh, ~std::uint64_t{0}})
      EXPECT_EQ(errno_of(program, nr, family, stream, 0), EAFNOSUPPORT) << "family " << std::hex << family;
    for (std::uint64_t protocol : {std::uint64_t{NETLINK_KOBJECT_UEVENT}, std::uint64_t{NETLINK_SOCK_DIAG},
                                   std::uint64_t{NETLINK_AUDIT}, std::uint64_t{NETLINK_ROUTE} | kHigh})
      EXPECT_EQ(errno_of(program, nr, AF_NETLINK, dgram, protocol), EAFNOSUPPORT) << "protocol " << std::hex << protocol;
  }
  // Type flags are not the filter's business.
  EXPECT_EQ(errno_of(program, SYS_socket, AF_INET, stream, 0), 0);
  EXPECT_EQ(errno_of(program, SYS_socket, AF_UNIX, dgram, 0), 0);
  EXPECT_EQ(errno_of(program, SYS_socket, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE), 0);
  EXPECT_EQ(errno_of(program, SYS_socketpair, AF_UNIX, stream, 0), 0);
  // AF_INET6 may be missing from the kernel; then the kernel, not the filter, refuses it.
  const int inet6_unfiltered = errno_of({}, SYS_socket, AF_INET6, stream, 0);
  EXPECT_EQ(errno_of(program, SYS_socket, AF_INET6, stream, 0), inet6_unfiltered);
  // Without the filter the kernel reads only the low 32 bits and opens these: the refusals
  // above are the filter's.
  EXPECT_EQ(errno_of({}, SYS_socket, AF_UNIX | kHigh, stream, 0), 0);
  EXPECT_EQ(errno_of({}, SYS_socket, AF_NETLINK, dgram, NETLINK_KOBJECT_UEVENT), 0);
  EXPECT_EQ(errno_of({}, SYS_socketpair, AF_UNIX | kHigh, stream, 0), 0);
}

TEST(SeccompProfile, DefaultProfileComparesIntArgumentsOnTheirLow32Bits) {
  const auto program = default_seccomp_filter().compile();
  // clone's flags and ioctl's request: an upper bit set does not hide the low ones.
  EXPECT_EQ(errno_of(program, SYS_clone, CLONE_NEWUSER | SIGCHLD | kHigh, 0, 0), EPERM);
  EXPECT_EQ(errno_of(program, SYS_ioctl, 0, TIOCSTI | kHigh, 0), EPERM);
  EXPECT_EQ(errno_of(program, SYS_ioctl, 0, TIOCLINUX | kHigh, 0), EPERM);
}

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
