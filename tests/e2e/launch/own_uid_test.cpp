// Issue 22 item 3: no launch can reduce another launch's per-user budgets. Run as root
// without sudo, each agent used to be `nobody`, so one agent holding the user's inotify
// instances (128 by default) or a thousand processes (inside its own --pids 1024) left
// the next launch unable to make one or to fork. Each launch now gets a uid of its own,
// leased with its /30 and freed by teardown or `netbox gc`.
#include "launch_fixture.hpp"

#include "support/temp_dir.hpp"

#include <signal.h>

#include <fstream>
#include <regex>
#include <sstream>

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

namespace netbox::launch_test {
namespace {

using ::testing::HasSubstr;

// Holds every inotify instance its uid may have and 1,000 processes, then waits.
const char* kHog = R"PY(
import ctypes, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
fds = []
while len(fds) < 4000:
    fd = libc.inotify_init1(0)
    if fd < 0:
        break
    fds.append(fd)
kids = 0
for _ in range(1000):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        signal.pause()
        os._exit(0)
    kids += 1
print("hog uid=%d inotify=%d procs=%d" % (os.getuid(), len(fds), kids), flush=True)
print("ready", flush=True)
time.sleep(600)
)PY";

// Makes 10 inotify instances and holds 50 processes at once while the hog holds its share.
const char* kOther = R"PY(
import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
made = sum(1 for _ in range(10) if libc.inotify_init1(0) >= 0)
kids = []
for _ in range(50):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        signal.pause()
        os._exit(0)
    kids.append(pid)
for pid in kids:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
print("other uid=%d inotify=%d forks=%d" % (os.getuid(), made, len(kids)), flush=True)
)PY";

long field(const std::string& text, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(name + "=(\\d+)"))) return -1;
  return std::stol(m[1]);
}

bool in_agent_range(long uid) { return uid >= 2'000'000'000L && uid < 2'000'000'000L + 65'536; }

TEST(LaunchOwnUid, OneLaunchHoldingItsUsersBudgetsLeavesAnotherItsOwn) {
  NETBOX_REQUIRE_ROOT();
  const auto hog_subnet = test_subnet(124), other_subnet = test_subnet(125);
  test::TempDir dir;
  Background hog({test::netbox_binary().string(), "launch", "--subnet", hog_subnet.cidr, "--audit-db",
                  (dir.path() / "hog.db").string(), "--", kPython, "-c", kHog},
                 dir.path(), "hog");
  ASSERT_TRUE(eventually([&] { return hog.out().find("ready") != std::string::npos; }, std::chrono::seconds(120)))
      << hog.out() << hog.err();
  const long hog_uid = field(hog.out(), "hog uid");
  EXPECT_TRUE(in_agent_range(hog_uid)) << hog.out();
  EXPECT_GE(field(hog.out(), "inotify"), 1) << hog.out();
  EXPECT_EQ(field(hog.out(), "procs"), 1000) << hog.out();
  EXPECT_THAT(hog.err(), HasSubstr("uid " + std::to_string(hog_uid))) << "the banner names the uid leased";

  auto other = launch(other_subnet, {"--audit-db", (dir.path() / "other.db").string(), "--", kPython, "-c", kOther});
  EXPECT_EQ(other.exit_code, 0) << other.err;
  const long other_uid = field(other.out, "other uid");
  EXPECT_TRUE(in_agent_range(other_uid)) << other.out;
  EXPECT_NE(other_uid, hog_uid) << "two running launches share a uid";
  EXPECT_EQ(field(other.out, "inotify"), 10) << other.out;
  EXPECT_EQ(field(other.out, "forks"), 50) << other.out;

  ::kill(hog.pid(), SIGTERM);
  hog.wait();
  expect_nothing_left(hog_subnet);
  expect_nothing_left(other_subnet);
}

TEST(LaunchOwnUid, GcFreesTheUidOfAKilledLauncher) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(126);
  test::TempDir dir;
  Background launcher({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--audit-db",
                       (dir.path() / "a.db").string(), "--", kSh, "-c", "echo uid=$(id -u); echo ready; exec sleep 60"},
                      dir.path(), "victim");
  ASSERT_TRUE(eventually([&] { return launcher.out().find("ready") != std::string::npos; })) << launcher.err();
  const long uid = field(launcher.out(), "uid");
  ASSERT_TRUE(in_agent_range(uid)) << launcher.out();
  const std::string lease_file = "/run/netbox/leases/" + subnet.addr_prefix + "0";
  {
    std::ifstream in(lease_file);
    const auto lease = nlohmann::json::parse(in, nullptr, false);
    ASSERT_TRUE(lease.is_object()) << lease_file;
    EXPECT_EQ(lease.value("uid", 0L), uid) << lease.dump();
  }
  ::kill(launcher.pid(), SIGKILL);
  EXPECT_EQ(launcher.wait(), 137);
  auto gc = test::run_netbox({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  // Another test's gc may have been first; when this one freed the lease, it says so.
  if (gc.out.find(subnet.addr_prefix + "0 ") != std::string::npos) {
    EXPECT_THAT(gc.out, HasSubstr("agent uid " + std::to_string(uid) + " is free again")) << gc.out;
  }
  EXPECT_FALSE(std::filesystem::exists(lease_file));
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
