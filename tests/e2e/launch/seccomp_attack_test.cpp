// The default seccomp profile attacked from inside a real launch: socket families outside
// the allow-list, and int arguments with upper bits set that the kernel would drop.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>
#include <signal.h>

namespace netbox::launch_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Syscall numbers, passed to the script: Python has no table of them.
#if defined(__x86_64__)
constexpr const char* kSyscalls[] = {"41", "53", "56", "16"};  // socket, socketpair, clone, ioctl
#elif defined(__aarch64__)
constexpr const char* kSyscalls[] = {"198", "199", "220", "29"};
#endif

#if defined(__x86_64__) || defined(__aarch64__)
// Each probe prints "label ok" or "label ERRNONAME". Raw syscalls go through ctypes with
// 64-bit arguments, so the upper bits reach the kernel as an attacker would set them.
constexpr const char* kProbe = R"(
import ctypes, errno, os, socket, subprocess, sys
SOCKET, SOCKETPAIR, CLONE, IOCTL = (int(a) for a in sys.argv[1:5])
HIGH = 1 << 32
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
pair = (ctypes.c_int * 2)()
def raw(label, nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *(ctypes.c_ulong(a) for a in args), ctypes.byref(pair))
    if r == 0 and nr == CLONE:
        os._exit(0)
    print(label, "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?"), flush=True)
def py(label, *args):
    try:
        socket.socket(*args).close()
        print(label, "ok", flush=True)
    except OSError as e:
        print(label, errno.errorcode.get(e.errno, "?"), flush=True)
STREAM = socket.SOCK_STREAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK
print("probes", flush=True)
# Families outside the allow-list, as libraries ask for them.
py("vsock", socket.AF_VSOCK, socket.SOCK_STREAM)
py("packet", socket.AF_PACKET, socket.SOCK_RAW)
py("uevent", socket.AF_NETLINK, socket.SOCK_DGRAM, 15)  # NETLINK_KOBJECT_UEVENT
py("sock_diag", socket.AF_NETLINK, socket.SOCK_DGRAM, 4)
py("bluetooth", 31, socket.SOCK_STREAM)
py("alg", 38, socket.SOCK_SEQPACKET)
py("key", 15, socket.SOCK_RAW, 2)
py("xdp", 44, socket.SOCK_RAW)
# The kernel keeps the low 32 bits of these ints; the filter must not look past them.
raw("packet-high", SOCKET, socket.AF_PACKET | HIGH, socket.SOCK_RAW, 0)
raw("vsock-high", SOCKET, socket.AF_VSOCK | HIGH, socket.SOCK_STREAM, 0)
raw("uevent-high", SOCKET, socket.AF_NETLINK | HIGH, socket.SOCK_DGRAM, 15)
raw("route-proto-high", SOCKET, socket.AF_NETLINK, socket.SOCK_DGRAM, HIGH)
raw("unix-high", SOCKET, socket.AF_UNIX | HIGH, socket.SOCK_STREAM, 0)
raw("pair-high", SOCKETPAIR, socket.AF_UNIX | HIGH, socket.SOCK_STREAM, 0)
raw("clone-newuser-high", CLONE, 0x10000000 | 17 | HIGH, 0, 0)
raw("tiocsti-high", IOCTL, 0, 0x5412 | HIGH, 0)
# What agents need keeps working, type flags included.
py("inet", socket.AF_INET, STREAM)
py("inet6", socket.AF_INET6, STREAM)
py("unix", socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
py("route", socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, 0)
raw("pair", SOCKETPAIR, socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC, 0)
print("interfaces", " ".join(sorted(n for _, n in socket.if_nameindex())), flush=True)
print("addrconfig", len(socket.getaddrinfo("localhost", 80, flags=socket.AI_ADDRCONFIG)) > 0, flush=True)
hosts = subprocess.run(["getent", "ahosts", "localhost"], capture_output=True, text=True)
print("getent", hosts.returncode, "127.0.0.1" in hosts.stdout, flush=True)
)";

TEST(SeccompAttack, OnlyListedSocketFamiliesOpenAndUpperBitsHideNothing) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(121);
  test::TempDir dir;
  std::vector<std::string> args = {"--audit-db", (dir.path() / "a.db").string(), "--", kPython, "-c", kProbe};
  args.insert(args.end(), std::begin(kSyscalls), std::end(kSyscalls));
  const auto r = launch(subnet, args);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* label : {"vsock", "packet", "uevent", "sock_diag", "bluetooth", "alg", "key", "xdp", "packet-high",
                            "vsock-high", "uevent-high", "route-proto-high", "unix-high", "pair-high"})
    EXPECT_THAT(r.out, HasSubstr(std::string("\n") + label + " EAFNOSUPPORT\n")) << label << "\n" << r.out;
  EXPECT_THAT(r.out, HasSubstr("\nclone-newuser-high EPERM\n")) << r.out;
  EXPECT_THAT(r.out, HasSubstr("\ntiocsti-high EPERM\n")) << r.out;
  for (const char* label : {"inet", "inet6", "unix", "route", "pair"})
    EXPECT_THAT(r.out, HasSubstr(std::string("\n") + label + " ok\n")) << label << "\n" << r.out;
  // glibc reads interfaces and address families over NETLINK_ROUTE: its own namespace only.
  EXPECT_THAT(r.out, HasSubstr("\ninterfaces "));
  EXPECT_THAT(r.out, HasSubstr(" lo"));
  EXPECT_THAT(r.out, HasSubstr("\naddrconfig True\n"));
  EXPECT_THAT(r.out, HasSubstr("\ngetent 0 True\n"));
  EXPECT_THAT(r.out, Not(HasSubstr("clone-newuser-high ok")));
  expect_nothing_left(subnet);
}

#if defined(__x86_64__)
// The x32 ABI (syscall number | 0x40000000) is another architecture to the filter: were it
// let through, none of the rules above would apply to it. The process is killed instead.
TEST(SeccompAttack, X32SyscallsKillTheProcess) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(123);
  test::TempDir dir;
  const std::string script = R"(
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
print("before", flush=True)
r = libc.syscall(ctypes.c_long(0x40000000 | 41), ctypes.c_ulong(40), ctypes.c_ulong(1), ctypes.c_ulong(0))
print("after", r, ctypes.get_errno(), flush=True)
)";
  const auto r = launch(subnet, {"--audit-db", (dir.path() / "a.db").string(), "--", kPython, "-c", script});
  EXPECT_EQ(r.exit_code, 128 + SIGSYS) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("before"));
  EXPECT_THAT(r.out, Not(HasSubstr("after")));
  expect_nothing_left(subnet);
}
#endif

// A Docker/OCI profile is applied as written: the default's allow-list is not added to it.
TEST(SeccompAttack, ProfileFileDecidesSocketFamiliesItself) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(122);
  test::TempDir dir;
  const auto profile = dir.write("profile.json", R"({
  "defaultAction": "SCMP_ACT_ALLOW",
  "syscalls": [{"names": ["socket"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13,
                "args": [{"index": 0, "value": 1, "op": "SCMP_CMP_EQ"}]}]
})");
  std::vector<std::string> args = {"--audit-db", (dir.path() / "a.db").string(), "--seccomp", profile.string(), "--",
                                   kPython, "-c", kProbe};
  args.insert(args.end(), std::begin(kSyscalls), std::end(kSyscalls));
  const auto r = launch(subnet, args);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("\nuevent ok\n")) << r.out;
  EXPECT_THAT(r.out, HasSubstr("\nunix EACCES\n")) << r.out;
  EXPECT_THAT(r.out, HasSubstr("\ninet ok\n")) << r.out;
  expect_nothing_left(subnet);
}
#endif

}  // namespace
}  // namespace netbox::launch_test
