// What one agent can learn about, leave behind on, or do to the host, netbox itself
// and other agents (issue 12), each attacked from inside a real launch.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <regex>

namespace netbox::launch_test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

fs::path write_file(const fs::path& p, const std::string& content) {
  std::ofstream(p) << content;
  fs::permissions(p, fs::perms(0644));
  return p;
}

// `netbox launch ARGS` started from the folder `cwd`.
test::RunResult launch_from(const fs::path& cwd, const Subnet& subnet, const std::vector<std::string>& args,
                            std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  std::vector<std::string> argv = {kSh, "-c", "cd \"$0\" && exec \"$@\"", cwd.string(), test::netbox_binary().string(),
                                   "launch", "--subnet", subnet.cidr};
  argv.insert(argv.end(), args.begin(), args.end());
  return test::run(argv, timeout);
}

TEST(LaunchIsolation, AStartFromUnderTmpLeavesTheAgentNoWayIntoTheHostsTmp) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(30);
  test::TempDir project;  // under the host's /tmp
  fs::permissions(project.path(), fs::perms(0755));
  write_file(project.path() / "host-marker", "host-secret\n");
  const fs::path work = project.path() / "work";
  fs::create_directories(work);
  write_file(work / "work-file", "the project\n");
  test::TempDir db_dir;
  // The workdir (the current directory) is bound into the agent's fresh /tmp; the
  // rest of the host's /tmp, even its parent folder, is not there.
  auto r = launch_from(work, subnet,
                       {"--audit-db", (db_dir.path() / "a.db").string(), "--", kSh, "-c",
                        "echo cwd=$(pwd); ls -A; cat ../host-marker; ls -A ..; cat " +
                            (project.path() / "host-marker").string() + "; echo done"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("cwd=" + work.string() + "\n"));
  EXPECT_THAT(r.out, HasSubstr("work-file\n"));
  EXPECT_THAT(r.out, HasSubstr("done"));
  EXPECT_THAT(r.out, Not(HasSubstr("host-secret")));
  EXPECT_THAT(r.out, Not(HasSubstr("host-marker")));

  // A folder the agent sees is kept.
  HostDir host;
  const auto other = host.folder("work");
  auto kept = launch_from(other, subnet, {"--audit-db", (db_dir.path() / "a.db").string(), "--", kSh, "-c", "pwd"});
  EXPECT_EQ(kept.exit_code, 0) << kept.err;
  EXPECT_EQ(kept.out, other.string() + "\n");
  expect_nothing_left(subnet);
}

TEST(LaunchIsolation, TheAuditDatabasePolicyAndControlSocketAreHiddenFromTheAgent) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(31);
  HttpServer upstream;
  HostDir host;
  const auto work = host.folder("work");
  const auto audit = host.folder("audit");
  // World-readable on purpose: the mount namespace must hide them even then. Beside the
  // workdir, so its folder is one the agent needs (inside it, the launch is refused: the
  // agent could replace it).
  auto policy = write_file(host.path() / "policy.json", policy_json(upstream.port()));
  const auto db = audit / "audit.db";
  const std::string probe = R"(
import os, sys
db, policy = sys.argv[1], sys.argv[2]
for p in (db, db + "-wal", db + "-shm"):
    try:
        if os.stat(p).st_size > 0:
            print("DB-VISIBLE", p)
        with open(p, "rb") as f:
            if f.read(16):
                print("DB-READABLE", p)
    except OSError:
        pass
try:
    if os.listdir(os.path.dirname(db)):
        print("DB-FOLDER-VISIBLE")
except OSError:
    pass
try:
    with open(policy) as f:
        if f.read():
            print("POLICY-READABLE")
except OSError:
    pass
print("checked")
)";
  auto r = launch_from(work, subnet,
                       {"--policy", policy.string(), "--audit-db", db.string(), "--", kSh, "-c",
                        std::string(kCurl) + " -sS -o /dev/null -w 'status=%{http_code}\\n' http://allowed.test:" +
                            std::to_string(upstream.port()) + "/; " + kPython + " -c '" + probe + "' " + db.string() +
                            " " + policy.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("status=200"));
  EXPECT_THAT(r.out, HasSubstr("checked"));
  EXPECT_THAT(r.out, Not(HasSubstr("VISIBLE"))) << r.out;
  EXPECT_THAT(r.out, Not(HasSubstr("READABLE"))) << r.out;
  EXPECT_EQ(query(db, "SELECT host FROM requests").size(), 1u) << "the proxy still writes its rows";

  // A running proxy's control socket: an agent that reached it could register itself
  // under any name if its permissions were ever loosened.
  SharedProxy proxy(host, policy);
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  const auto sock = proxy.socket();
  auto c = launch_from(work, subnet,
                       {"--proxy-control", sock.string(), "--policy", policy.string(), "--", kSh, "-c",
                        "test -e " + sock.string() + " && echo SOCKET-VISIBLE; test -s " + policy.string() +
                            " && echo POLICY-READABLE; echo checked"});
  EXPECT_EQ(c.exit_code, 0) << c.err;
  EXPECT_THAT(c.out, HasSubstr("checked"));
  EXPECT_THAT(c.out, Not(HasSubstr("VISIBLE")));
  EXPECT_THAT(c.out, Not(HasSubstr("READABLE")));
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  expect_nothing_left(subnet);
}

// A running proxy's own policy and store live wherever its operator put them, not where
// the launcher's flags say: the proxy names them ("info" on the control socket) and the
// launch hides them too, even world-readable in a folder the agent could otherwise read.
TEST(LaunchIsolation, ARunningProxysOwnPolicyAndStoreAreHiddenFromItsAgents) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(39);
  HttpServer upstream;
  HostDir host;
  const auto etc = host.folder("etc");
  auto proxy_policy = write_file(etc / "proxy-policy.json", policy_json(upstream.port()));
  fs::permissions(proxy_policy, fs::perms(0644));
  SharedProxy proxy(host, proxy_policy);
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  const auto work = host.folder("work");
  auto r = launch_from(work, subnet,
                       {"--proxy-control", proxy.socket().string(), "--", kSh, "-c",
                        "test -s " + proxy_policy.string() + " && echo PROXY-POLICY-READABLE; ls -a " +
                            proxy.store().parent_path().string() +
                            " | grep -q audit && echo PROXY-STORE-LISTED; echo checked"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("checked"));
  EXPECT_THAT(r.out, Not(HasSubstr("READABLE"))) << r.out;
  EXPECT_THAT(r.out, Not(HasSubstr("LISTED"))) << r.out;
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  expect_nothing_left(subnet);
}

TEST(LaunchIsolation, SharedMemoryDoesNotOutliveTheAgent) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(32);
  test::TempDir dir;
  const std::string tag = "netbox-e2e-" + std::to_string(::getpid());
  const fs::path host_file = "/dev/shm/" + tag + "-host";
  write_file(host_file, "host shared memory\n");
  const fs::path agent_file = "/dev/shm/" + tag + "-agent";
  auto r = launch(subnet, {"--audit-db", (dir.path() / "a.db").string(), "--", kSh, "-c",
                           "ls -A /dev/shm; echo left-behind > " + agent_file.string() + " && echo wrote; ipcmk -M 4096"});
  fs::remove(host_file);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("wrote"));
  EXPECT_THAT(r.out, Not(HasSubstr(tag + "-host"))) << "the host's /dev/shm is visible";
  EXPECT_FALSE(fs::exists(agent_file)) << "a file the agent wrote to /dev/shm is on the host";
  fs::remove(agent_file);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("Shared memory id: ([0-9]+)"))) << r.out << r.err;
  // `ipcs -m` lists "key shmid owner ...": the agent's id must not be among the host's.
  auto ipcs = test::run({"ipcs", "-m"});
  const bool on_host = std::regex_search(ipcs.out, std::regex("\\n0x[0-9a-f]+ +" + m[1].str() + " "));
  if (on_host) test::run({"ipcrm", "-m", m[1].str()});
  EXPECT_FALSE(on_host) << "the agent's System V segment is in the host's IPC namespace:\n" << ipcs.out;
  expect_nothing_left(subnet);
}

TEST(LaunchIsolation, EveryTmpfsHasASizeAndFillingTmpFailsWithEnospc) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(33);
  test::TempDir dir;
  const std::string sizes =
      "import os\nfor p in ('/tmp', '/var/tmp', '/dev/shm', '/run'):\n"
      "    s = os.statvfs(p)\n    print(p, s.f_blocks * s.f_frsize)\n";
  auto r = launch(subnet, {"--audit-db", (dir.path() / "a.db").string(), "--tmp-size", "8M", "--", kSh, "-c",
                           "dd if=/dev/zero of=/tmp/fill bs=1M count=16 2>&1; echo dd=$?; " + std::string(kPython) +
                               " -c \"" + sizes + "\""});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("No space left on device"));
  EXPECT_THAT(r.out, HasSubstr("dd=1"));
  EXPECT_THAT(r.out, HasSubstr("/tmp 8388608\n"));
  EXPECT_THAT(r.out, HasSubstr("/var/tmp 8388608\n"));
  EXPECT_THAT(r.out, HasSubstr("/dev/shm 8388608\n"));
  EXPECT_THAT(r.out, HasSubstr("/run 16777216\n"));

  for (const char* bad : {"lots", "0", "unlimited"}) {
    auto b = launch(subnet, {"--tmp-size", bad, "--", "true"});
    EXPECT_EQ(b.exit_code, 2) << bad;
    EXPECT_THAT(b.err, HasSubstr(std::string("--tmp-size '") + bad + "'"));
  }
  expect_nothing_left(subnet);
}

TEST(LaunchIsolation, TheAgentHasItsOwnHostname) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(34);
  test::TempDir dir;
  char before[256] = {};
  ::gethostname(before, sizeof before - 1);
  auto r = launch(subnet, {"--audit-db", (dir.path() / "a.db").string(), "--name", "probe-host-7", "--", kSh, "-c",
                           "hostname; hostname changed-inside 2>/dev/null; echo rc=$?"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("probe-host-7\n"));
  EXPECT_THAT(r.out, Not(HasSubstr("rc=0")));
  char after[256] = {};
  ::gethostname(after, sizeof after - 1);
  EXPECT_STREQ(before, after);
  expect_nothing_left(subnet);
}

TEST(LaunchIsolation, SysClassNetShowsOnlyTheAgentsOwnInterfaces) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(35);
  test::TempDir dir;
  auto r = launch(subnet, {"--audit-db", (dir.path() / "a.db").string(), "--", kSh, "-c",
                           "ls /sys/class/net; ls /sys/devices/virtual/net | grep -c nbx; echo end"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "lo\n0\nend\n");  // the embedded proxy's link is sockets, no device
  expect_nothing_left(subnet);
}

TEST(LaunchIsolation, TheLaunchersCommandLineIsNotVisibleButPsWorks) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(36);
  HostDir host;
  auto policy = write_file(host.folder("etc") / "secret-policy-name.json", policy_json(80));
  test::TempDir dir;
  auto r = launch(subnet, {"--policy", policy.string(), "--audit-db", (dir.path() / "a.db").string(), "--env",
                           "NETBOX_PROBE=sekrit-env-value", "--", kSh, "-c",
                           "cat /proc/1/cmdline; for f in /proc/[0-9]*/cmdline; do cat $f; echo; done; "
                           "ps -e -o pid=,comm=; grep -c '^Pid:' /proc/self/status"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("sekrit-env-value")));
  EXPECT_THAT(r.out, Not(HasSubstr("secret-policy-name")));
  EXPECT_THAT(r.out, HasSubstr(" ps\n"));
  EXPECT_THAT(r.out, HasSubstr("\n1\n"));

  // An agent run as root sees the init; its command line and environment are not the launcher's.
  auto root = launch(subnet, {"--policy", policy.string(), "--audit-db", (dir.path() / "a.db").string(), "--env",
                              "NETBOX_PROBE=sekrit-env-value", "--user", "root", "--", kSh, "-c",
                              "cat /proc/1/cmdline /proc/1/environ; echo; ps -e -o pid=,args="});
  EXPECT_EQ(root.exit_code, 0) << root.err;
  EXPECT_THAT(root.out, HasSubstr("netbox-init"));
  EXPECT_THAT(root.out, Not(HasSubstr("sekrit-env-value")));
  EXPECT_THAT(root.out, Not(HasSubstr("secret-policy-name")));
  expect_nothing_left(subnet);
}

// As a job of an interactive shell: the launch in a foreground process group of its
// own on a real terminal, its parent in the same session (so a SIGTTOU would stop it).
const char* kShellLikeDriver = R"(
import os, pty, select, signal, sys, time
pid, fd = pty.fork()
if pid == 0:
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    job = os.fork()
    if job == 0:
        os.setpgid(0, 0)
        os.tcsetpgrp(0, os.getpgrp())
        signal.signal(signal.SIGTTOU, signal.SIG_DFL)
        os.execv(sys.argv[1], sys.argv[1:])
    try:
        os.setpgid(job, job)
    except OSError:
        pass
    _, st = os.waitpid(job, os.WUNTRACED)
    if os.WIFSTOPPED(st):
        print("LAUNCHER-STOPPED by signal", os.WSTOPSIG(st), flush=True)
        os.kill(job, signal.SIGKILL)
        os.waitpid(job, 0)
        os._exit(99)
    print("launch-exit", os.waitstatus_to_exitcode(st), flush=True)
    import termios
    print("terminal-restored", bool(termios.tcgetattr(0)[3] & termios.ICANON), flush=True)
    os._exit(0)
out, end = b"", time.time() + 60
while time.time() < end:
    r, _, _ = select.select([fd], [], [], 0.2)
    if r:
        try:
            d = os.read(fd, 4096)
        except OSError:
            break
        if not d:
            break
        out += d
else:
    print("HUNG")
    os.kill(pid, signal.SIGKILL)
os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
)";

TEST(LaunchIsolation, TheTimeoutHoldsWhenTheAgentTakesOverTheTerminal) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(37);
  test::TempDir dir;
  // The attack: a process group of its own as the terminal's foreground, TOSTOP set,
  // SIGTERM ignored; the launcher writing "--timeout reached" used to be stopped.
  const std::string agent = R"(
import os, signal, sys, termios, time
signal.signal(signal.SIGTTOU, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
for step in ("setpgid", "tcsetpgrp", "tostop"):
    try:
        if step == "setpgid":
            os.setpgid(0, 0)
        elif step == "tcsetpgrp":
            os.tcsetpgrp(0, os.getpgrp())
        else:
            a = termios.tcgetattr(0)
            a[3] |= termios.TOSTOP
            termios.tcsetattr(0, termios.TCSANOW, a)
        print(step, "done", flush=True)
    except OSError as e:
        print(step, "failed", e, flush=True)
while True:
    time.sleep(0.1)
)";
  auto r = test::run({kPython, "-c", kShellLikeDriver, test::netbox_binary().string(), "launch", "--subnet",
                      subnet.cidr, "--audit-db", (dir.path() / "a.db").string(), "--timeout", "2", "--kill-grace", "1",
                      "--", kPython, "-c", agent},
                     std::chrono::seconds(90));
  EXPECT_THAT(r.out, HasSubstr("tostop done")) << r.out << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("LAUNCHER-STOPPED")));
  EXPECT_THAT(r.out, Not(HasSubstr("HUNG")));
  EXPECT_THAT(r.out, HasSubstr("launch-exit 124")) << r.out;
  EXPECT_THAT(r.out, HasSubstr("terminal-restored True")) << "the launcher's terminal is left in raw mode";
  expect_nothing_left(subnet);
}

TEST(LaunchIsolation, TheAgentsTerminalFollowsTheLaunchersWindowSize) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(40);
  test::TempDir dir;
  const std::string agent = R"(
import os, signal, sys, time
got = []
signal.signal(signal.SIGWINCH, lambda s, f: got.append(os.get_terminal_size(0)))
print("start", os.get_terminal_size(0).lines, os.get_terminal_size(0).columns, flush=True)
print("ready", flush=True)
end = time.time() + 30
while not got and time.time() < end:
    time.sleep(0.05)
print("winch", got[0].lines if got else 0, got[0].columns if got else 0, flush=True)
)";
  const std::string driver = R"(
import fcntl, os, pty, select, struct, sys, termios, time
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 21, 77, 0, 0))
    os.execv(sys.argv[1], sys.argv[1:])
buf, resized, end = b"", False, time.time() + 60
while time.time() < end:
    r, _, _ = select.select([fd], [], [], 0.1)
    if r:
        try:
            d = os.read(fd, 4096)
        except OSError:
            break
        if not d:
            break
        buf += d
    if b"ready" in buf and not resized:
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 101, 0, 0))
        resized = True
os.waitpid(pid, 0)
sys.stdout.write(buf.decode(errors="replace"))
)";
  auto r = test::run({kPython, "-c", driver, test::netbox_binary().string(), "launch", "--subnet", subnet.cidr,
                      "--audit-db", (dir.path() / "a.db").string(), "--", kPython, "-c", agent},
                     std::chrono::seconds(90));
  EXPECT_THAT(r.out, HasSubstr("start 21 77")) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("winch 33 101")) << r.out << r.err;
  expect_nothing_left(subnet);
}

TEST(LaunchIsolation, KillZeroInOneAgentReachesNoOtherLaunch) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(38);
  test::TempDir dir;
  // Both started in the background by one process, so in its process group.
  Background victim({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--audit-db",
                     (dir.path() / "a.db").string(), "--", kSh, "-c",
                     "trap 'exit 42' USR1; echo ready; while :; do sleep 0.1; done"},
                    dir.path(), "victim");
  ASSERT_TRUE(eventually([&] { return victim.out().find("ready") != std::string::npos; })) << victim.err();
  Background attacker({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--audit-db",
                       (dir.path() / "b.db").string(), "--", kPython, "-c",
                       "import os, signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                       "os.kill(0, signal.SIGTERM)\nos.kill(0, signal.SIGKILL)\nprint('never')\n"},
                      dir.path(), "attacker");
  // kill(0, SIGKILL) takes the attacker's own group: itself.
  EXPECT_EQ(attacker.wait(), 137) << attacker.err();
  EXPECT_EQ(::kill(victim.pid(), 0), 0) << "the victim's launcher is gone";
  ::kill(victim.pid(), SIGUSR1);
  EXPECT_EQ(victim.wait(), 42) << "the victim's agent died before it was told to exit\n" << victim.err();
  expect_nothing_left(subnet);
}

TEST(LaunchIsolation, TheAgentCannotReadOrTruncateTheLaunchersOutputFiles) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(41);
  HttpServer upstream;
  test::TempDir dir;
  auto policy = dir.write("policy.json", policy_json(upstream.port()));
  const auto out = write_file(dir.path() / "launcher.out", "EARLIER-OUT\n");
  const auto err = write_file(dir.path() / "launcher.err", "EARLIER-ERR\n");
  const std::string agent = R"(
import os, subprocess, sys
subprocess.run([sys.argv[1], "-sS", "-o", "/dev/null", "http://denied.test:" + sys.argv[2] + "/agent-was-here"])
for fd in (1, 2):
    try:
        r = os.open("/proc/self/fd/%d" % fd, os.O_RDONLY | os.O_NONBLOCK)
        if b"EARLIER" in os.read(r, 65536):
            print("READ-EARLIER", fd, flush=True)
    except OSError:
        pass
    for how in ("fd", "path"):
        try:
            os.truncate(fd if how == "fd" else "/proc/self/fd/%d" % fd, 0)
            print("TRUNCATED", fd, how, flush=True)
        except OSError:
            pass
print("tried", flush=True)
)";
  auto r = test::run({kSh, "-c", "o=$1; e=$2; shift 2; exec \"$@\" >>\"$o\" 2>>\"$e\"", "sh", out.string(),
                      err.string(), test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--policy",
                      policy.string(), "--audit-db", (dir.path() / "a.db").string(), "--", kPython, "-c", agent, kCurl,
                      std::to_string(upstream.port())});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::ifstream o(out), e(err);
  const std::string out_text((std::istreambuf_iterator<char>(o)), {});
  const std::string err_text((std::istreambuf_iterator<char>(e)), {});
  EXPECT_THAT(out_text, HasSubstr("tried"));
  EXPECT_THAT(out_text, Not(HasSubstr("READ-EARLIER")));
  EXPECT_THAT(out_text, Not(HasSubstr("TRUNCATED")));
  EXPECT_EQ(out_text.rfind("EARLIER-OUT\n", 0), 0u) << out_text;
  EXPECT_EQ(err_text.rfind("EARLIER-ERR\n", 0), 0u) << err_text;
  EXPECT_THAT(err_text, HasSubstr("/agent-was-here")) << "the proxy's log line of the agent's own request";
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
