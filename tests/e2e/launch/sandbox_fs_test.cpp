// The agent's filesystem view (issue 13): a read-only host root, a writable workdir,
// --ro/--rw/--hide, an empty HOME, credentials hidden, a minimal /dev, a masked /proc,
// the sudo caller as the agent's user, fail-closed layers and --explain; each checked
// from inside a real launch.
#include "launch_fixture.hpp"
#include "temp_user.hpp"

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

namespace netbox::launch_test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// A folder outside /tmp (the agent's /tmp is fresh, so a host folder there would be
// invisible anyway and prove nothing): the fixture's HostDir.
using SandboxDir = HostDir;

fs::path write_file(const fs::path& p, const std::string& content, fs::perms mode = fs::perms(0644)) {
  std::ofstream(p) << content;
  fs::permissions(p, mode);
  return p;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::set<std::string> mount_lines() {
  std::ifstream in("/proc/self/mountinfo");
  std::set<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.insert(line);
  return lines;
}

// Mounts added since `before` that a launch could have leaked: at one of `paths`, or
// one of the view's own (overlay, the assembly root). Other tests and programs on the
// machine may mount things meanwhile; those are not counted.
std::string leaked_mounts(const std::set<std::string>& before, const std::vector<fs::path>& paths) {
  std::string leaked;
  for (const auto& line : mount_lines()) {
    if (before.contains(line)) continue;
    bool ours = line.find(" overlay ") != std::string::npos || line.find("/newroot") != std::string::npos ||
                line.find("/oldroot") != std::string::npos;
    for (const auto& p : paths) ours = ours || line.find(p.string()) != std::string::npos;
    if (ours) leaked += line + "\n";
  }
  return leaked;
}

// `netbox launch --subnet ... ARGS` as if run through sudo by `user`.
test::RunResult launch_as_sudo_caller(const TempUser& user, const Subnet& subnet, const std::vector<std::string>& args) {
  std::vector<std::string> all = {"--subnet", subnet.cidr};
  all.insert(all.end(), args.begin(), args.end());
  return launch_as_sudo_caller(user, all);
}

// Tries to create each path; prints "WROTE path" or "FAIL path ERRNO".
const std::string kWriteProbe = R"(
import errno, os, sys
for p in sys.argv[1:]:
    try:
        with open(p, "w") as f:
            f.write("written by the agent\n")
        print("WROTE", p)
    except OSError as e:
        print("FAIL", p, errno.errorcode.get(e.errno, str(e.errno)))
print("cwd", os.getcwd())
)";

TEST(LaunchSandboxFs, TheSudoCallersCredentialsAreHiddenEvenUnderRwHome) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(140);
  SandboxDir host;
  // World-searchable, as Debian makes homes: only the hiding keeps others out of .netrc.
  const auto home = host.folder("home");
  fs::create_directories(home / ".ssh");
  fs::create_directories(home / ".aws");
  fs::create_directories(home / "project");
  write_file(home / ".ssh" / "id_ed25519", "PRIVATE-KEY-sekrit\n", fs::perms(0600));
  write_file(home / ".aws" / "credentials", "aws-sekrit\n", fs::perms(0600));
  write_file(home / ".netrc", "machine example.com password netrc-sekrit\n", fs::perms(0644));
  write_file(home / "notes.txt", "home note\n");
  write_file(home / "project" / "readme", "project file\n");
  // Dotfiles kept elsewhere and linked in, as dotfile managers do.
  fs::create_directories(home / "dotfiles" / "kube");
  write_file(home / "dotfiles" / "kube" / "config", "kube-sekrit\n");
  fs::create_directory_symlink("dotfiles/kube", home / ".kube");
  write_file(home / "dotfiles" / "gitconfig", "[user] name = agent\n");
  fs::create_symlink("dotfiles/gitconfig", home / ".gitconfig");
  TempUser user(home);
  chown_tree(home, user.uid(), user.gid());
  test::TempDir db_dir;
  const std::string db = (db_dir.path() / "a.db").string();

  // The default: the agent is the sudo caller, its HOME an empty tmpfs, the project writable.
  auto r = launch_as_sudo_caller(
      user, subnet,
      {"--audit-db", db, "--workdir", (home / "project").string(), "--ro", (home / ".gitconfig").string(), "--", kSh,
       "-c",
       "id -un; pwd; echo HOME=$HOME; cat ~/.ssh/id_ed25519 ~/.aws/credentials ~/.netrc ~/notes.txt; "
       "echo home=$(ls -A ~ | tr '\\n' ' '); cat readme; echo made > new-file && echo wrote; cat ~/.gitconfig; echo end"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(user.name() + "\n" + (home / "project").string() + "\nHOME=" + home.string() + "\n"));
  EXPECT_THAT(r.out, Not(HasSubstr("sekrit")));
  EXPECT_THAT(r.out, Not(HasSubstr("home note")));
  EXPECT_THAT(r.out, HasSubstr("home=.gitconfig project\n"));
  EXPECT_THAT(r.out, HasSubstr("project file\nwrote\n[user] name = agent\nend\n"));
  EXPECT_THAT(r.err, HasSubstr("runs as " + user.name()));
  EXPECT_EQ(slurp(home / "project" / "new-file"), "made\n");
  struct stat st {};
  ASSERT_EQ(::stat((home / "project" / "new-file").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, user.uid());

  // The whole HOME given read-write on purpose: its credentials stay covered.
  auto rw = launch_as_sudo_caller(
      user, subnet,
      {"--audit-db", db, "--workdir", (home / "project").string(), "--rw", home.string(), "--", kSh, "-c",
       "cat ~/.ssh/id_ed25519 ~/.aws/credentials ~/.netrc ~/.kube/config ~/dotfiles/kube/config; "
       "echo ssh=$(ls -A ~/.ssh | wc -l); cat ~/notes.txt; "
       "echo key > ~/.ssh/authorized_keys || echo ssh-not-writable; echo more >> ~/notes.txt && echo appended"});
  EXPECT_EQ(rw.exit_code, 0) << rw.err;
  EXPECT_THAT(rw.out, Not(HasSubstr("sekrit")));
  EXPECT_THAT(rw.out, HasSubstr("ssh=0\nhome note\nssh-not-writable\nappended\n"));
  EXPECT_EQ(slurp(home / "notes.txt"), "home note\nmore\n");
  EXPECT_FALSE(fs::exists(home / ".ssh" / "authorized_keys"));

  // Another agent user (--user nobody) gets the sudo caller's credentials hidden too,
  // though .netrc is world-readable and the home searchable.
  auto other = launch_as_sudo_caller(user, subnet,
                                     {"--audit-db", db, "--user", "nobody", "--ro", home.string(), "--", kSh, "-c",
                                      "id -un; cat " + (home / ".netrc").string() + " " + (home / "notes.txt").string()});
  EXPECT_EQ(other.exit_code, 0) << other.err;
  EXPECT_THAT(other.out, HasSubstr("nobody\nhome note\n"));
  EXPECT_THAT(other.out, Not(HasSubstr("sekrit")));
  expect_nothing_left(subnet);
}

TEST(LaunchSandboxFs, TheRootIsReadOnlyAndOnlyTheWorkdirIsWritable) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(141);
  SandboxDir host;
  const auto open = host.folder("open", fs::perms(0777));  // the host lets anyone write here
  const auto work = host.folder("work");
  ASSERT_EQ(::chown(work.c_str(), 65534, 65534), 0);
  test::TempDir db_dir;
  // --user nobody: the default is a uid of the launch's own, which owns no folder.
  auto r = launch(subnet, {"--audit-db", (db_dir.path() / "a.db").string(), "--user", "nobody", "--workdir",
                           work.string(), "--", kPython,
                           "-c", kWriteProbe, "/etc/nbx-probe", (open / "probe").string(), "/var/nbx-probe",
                           (work / "made-inside").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("FAIL " + (open / "probe").string() + " EROFS\n"));
  EXPECT_THAT(r.out, HasSubstr("FAIL /etc/nbx-probe EROFS\n"));
  EXPECT_THAT(r.out, HasSubstr("FAIL /var/nbx-probe EROFS\n"));
  EXPECT_THAT(r.out, HasSubstr("WROTE " + (work / "made-inside").string() + "\n"));
  EXPECT_THAT(r.out, HasSubstr("cwd " + work.string() + "\n"));
  EXPECT_FALSE(fs::exists(open / "probe"));
  EXPECT_EQ(slurp(work / "made-inside"), "written by the agent\n");

  // Even an agent run as root, which owns /usr, cannot write the host's system.
  auto root = launch(subnet, {"--audit-db", (db_dir.path() / "a.db").string(), "--user", "root", "--workdir",
                              work.string(), "--", kPython, "-c", kWriteProbe, "/usr/nbx-probe",
                              (open / "probe").string()});
  EXPECT_EQ(root.exit_code, 0) << root.err;
  EXPECT_THAT(root.out, HasSubstr("FAIL /usr/nbx-probe EROFS\n"));
  EXPECT_THAT(root.out, HasSubstr("FAIL " + (open / "probe").string() + " EROFS\n"));
  EXPECT_FALSE(fs::exists("/usr/nbx-probe"));
  expect_nothing_left(subnet);
}

TEST(LaunchSandboxFs, RoRwAndHideBindsWorkAndNoMountIsLeftBehind) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(142);
  const auto mounts_before = mount_lines();
  SandboxDir host;
  const auto ro = host.folder("ro", fs::perms(0777));
  write_file(ro / "ro-file", "read-only content\n");
  test::TempDir rw;  // under the host's /tmp: bound into the agent's fresh one
  fs::permissions(rw.path(), fs::perms(0777));
  const auto hidden_dir = host.folder("hidden");
  write_file(hidden_dir / "secret.txt", "dir-sekrit\n");
  const auto visible = host.folder("visible");
  const auto hidden_file = write_file(visible / "token", "file-sekrit\n");
  write_file(visible / "other", "other content\n");
  const auto work = host.folder("work");
  test::TempDir db_dir;
  auto r = launch(subnet, {"--audit-db", (db_dir.path() / "a.db").string(), "--workdir", work.string(), "--ro",
                           ro.string(), "--rw", rw.path().string(), "--hide", hidden_dir.string(), "--hide",
                           hidden_file.string(), "--", kSh, "-c",
                           "cat " + (ro / "ro-file").string() + "; " + kPython + " -c '" + kWriteProbe + "' " +
                               (ro / "new").string() + " " + (rw.path() / "new").string() + " " +
                               hidden_file.string() + " " + (hidden_dir / "new").string() +
                               "; echo hidden-dir=$(ls -A " + hidden_dir.string() + " | wc -l); cat " +
                               hidden_file.string() + " " + (visible / "other").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("read-only content\n"));
  EXPECT_THAT(r.out, HasSubstr("FAIL " + (ro / "new").string() + " EROFS\n"));
  EXPECT_THAT(r.out, HasSubstr("WROTE " + (rw.path() / "new").string() + "\n"));
  EXPECT_THAT(r.out, HasSubstr("FAIL " + hidden_file.string() + " EROFS\n"));
  EXPECT_THAT(r.out, HasSubstr("FAIL " + (hidden_dir / "new").string() + " EROFS\n"));
  EXPECT_THAT(r.out, HasSubstr("hidden-dir=0\nother content\n"));
  EXPECT_THAT(r.out, Not(HasSubstr("sekrit")));
  EXPECT_FALSE(fs::exists(ro / "new"));
  EXPECT_EQ(slurp(rw.path() / "new"), "written by the agent\n");
  EXPECT_EQ(slurp(hidden_file), "file-sekrit\n");

  EXPECT_EQ(leaked_mounts(mounts_before, {host.path(), rw.path()}), "") << "mounts were left behind on the host";
  expect_nothing_left(subnet);
}

TEST(LaunchSandboxFs, DevIsMinimalAndProcIsMaskedAsDockerDoes) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(143);
  test::TempDir db_dir;
  // As root (without capabilities, as always): only the read-only mounts stop it here.
  const std::string probe = R"(
import errno, os, pty
print("dev", " ".join(sorted(os.listdir("/dev"))))
for p in ("/proc/sys/kernel/domainname", "/proc/sysrq-trigger", "/dev/nbx-probe"):
    try:
        if os.path.exists(p) or p.startswith("/dev/"):
            os.close(os.open(p, os.O_WRONLY | os.O_CREAT))
            print("OPENED", p)
    except OSError as e:
        print("FAIL", p, errno.errorcode.get(e.errno, str(e.errno)))
masked = [l.split()[4] for l in open("/proc/self/mountinfo") if l.split()[4] in ("/proc/keys", "/proc/timer_list", "/proc/kcore", "/proc/sched_debug")]
print("masked", " ".join(sorted(masked)))
print("keys", len(open("/proc/keys").read()))
m, s = pty.openpty()
print("pty", os.ttyname(s))
with open("/dev/null", "w") as f:
    f.write("x")
print("null ok")
)";
  auto r = launch(subnet, {"--audit-db", (db_dir.path() / "a.db").string(), "--user", "root", "--", kPython, "-c", probe});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("dev fd full null ptmx pts random shm stderr stdin stdout tty urandom zero\n"));
  EXPECT_THAT(r.out, HasSubstr("FAIL /proc/sys/kernel/domainname EROFS\n"));
  EXPECT_THAT(r.out, HasSubstr("FAIL /dev/nbx-probe EROFS\n"));
  EXPECT_THAT(r.out, Not(HasSubstr("OPENED")));
  EXPECT_THAT(r.out, HasSubstr("masked /proc/keys /proc/timer_list"));
  EXPECT_THAT(r.out, HasSubstr("keys 0\n"));
  EXPECT_THAT(r.out, HasSubstr("pty /dev/pts/0\n"));
  EXPECT_THAT(r.out, HasSubstr("null ok\n"));
  expect_nothing_left(subnet);
}

TEST(LaunchSandboxFs, BadPathsAreRefusedWithExit2AndMissingLayersStopTheLaunchWith125) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(144);
  SandboxDir host;
  const auto work = host.folder("work", fs::perms(0777));
  const auto audit = host.folder("audit");
  const auto marker = work / "ran";
  const std::string db = (audit / "a.db").string();
  const std::vector<std::string> run_marker = {"--", kSh, "-c", "touch " + marker.string()};
  auto attempt = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--audit-db", db, "--workdir", work.string()});
    args.insert(args.end(), run_marker.begin(), run_marker.end());
    return launch(subnet, args);
  };
  struct Refused {
    std::vector<std::string> args;
    std::string says;
  };
  for (const auto& [args, says] : std::vector<Refused>{
           {{"--rw", "/"}, "--rw '/': refused: the host's root is never writable"},
           {{"--rw", "/etc"}, "--rw '/etc': refused: /etc is a system folder"},
           {{"--rw", "/usr/lib"}, "--rw '/usr/lib': refused: /usr is a system folder"},
           {{"--rw", "/boot"}, "/boot is a system folder"},
           {{"--rw", "/proc"}, "/proc is the kernel's"},
           {{"--rw", "/dev"}, "/dev is the kernel's"},
           {{"--rw", audit.string()}, "it holds the audit database"},
           {{"--rw", host.path().string()}, "it holds the audit database"},
           {{"--ro", "/proc/1"}, "--ro '/proc/1': refused"},
           {{"--hide", "/"}, "--hide '/': refused"},
           {{"--allow-degraded", "everything"}, "--allow-degraded 'everything': no such layer"},
           {{"--user", "no-such-user-nbx"}, "--user 'no-such-user-nbx': no such user"},
       }) {
    auto r = attempt(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << " " << args[1] << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr(says));
  }
  auto bad_workdir = launch(subnet, {"--audit-db", db, "--workdir", "/usr", "--", "true"});
  EXPECT_EQ(bad_workdir.exit_code, 2);
  EXPECT_THAT(bad_workdir.err, HasSubstr("--workdir '/usr': refused"));

  const std::string missing = (host.path() / "missing").string();
  for (const char* flag : {"--ro", "--rw"}) {
    auto r = attempt({flag, missing});
    EXPECT_EQ(r.exit_code, 125) << flag << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr(std::string(flag) + " '" + missing + "': no such file or directory"));
    EXPECT_THAT(r.err, HasSubstr(std::string("--allow-degraded ") + (flag + 2)));
  }
  auto no_workdir = launch(subnet, {"--audit-db", db, "--workdir", missing, "--", "true"});
  EXPECT_EQ(no_workdir.exit_code, 125);
  EXPECT_THAT(no_workdir.err, HasSubstr("--workdir '" + missing + "': no such directory"));
  EXPECT_FALSE(fs::exists(marker)) << "the agent ran";

  // Accepted by name, the missing bind is left out and the banner says so.
  auto accepted = attempt({"--ro", missing, "--allow-degraded", "ro"});
  EXPECT_EQ(accepted.exit_code, 0) << accepted.err;
  EXPECT_THAT(accepted.err, HasSubstr("DEGRADED: ro: " + missing + " does not exist"));
  EXPECT_TRUE(fs::exists(marker));
  expect_nothing_left(subnet);
}

TEST(LaunchSandboxFs, ExplainPrintsTheLayersAndRunsNothing) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(145);
  SandboxDir host;
  const auto work = host.folder("work", fs::perms(0777));
  const auto ro = host.folder("ro");
  const auto rw = host.folder("rw", fs::perms(0777));  // the agent's user (nobody) may write both
  const auto marker = work / "ran";
  test::TempDir db_dir;
  const auto db = db_dir.path() / "a.db";
  auto r = launch(subnet, {"--explain", "--audit-db", db.string(), "--workdir", work.string(), "--ro", ro.string(),
                           "--rw", rw.string(), "--hide", (ro / "x").string(), "--keep-env", "ANTHROPIC_API_KEY",
                           "--", kSh, "-c", "touch " + marker.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("user: netbox-agent: the default: a uid and gid of its own for this launch"));
  EXPECT_THAT(r.out, HasSubstr("network: own namespace; its only route is the proxy (embedded"));
  EXPECT_THAT(r.out, HasSubstr("root: the host's /, read-only"));
  EXPECT_THAT(r.out, HasSubstr("workdir: " + work.string() + " (read-write"));
  EXPECT_THAT(r.out, HasSubstr("writable: " + work.string() + ", " + rw.string() + "\n"));
  EXPECT_THAT(r.out, HasSubstr("read-only binds: " + ro.string() + "\n"));
  EXPECT_THAT(r.out, HasSubstr((ro / "x").string()));
  EXPECT_THAT(r.out, HasSubstr("seccomp: default\n"));
  EXPECT_THAT(r.out, HasSubstr("cgroup: "));
  EXPECT_THAT(r.out, HasSubstr("env kept: PATH, LANG, LC_*, TERM, TZ, ANTHROPIC_API_KEY\n"));
  EXPECT_FALSE(fs::exists(marker)) << "--explain ran the command";
  EXPECT_FALSE(fs::exists(db)) << "--explain opened the audit database";

  auto missing = launch(subnet, {"--explain", "--audit-db", db.string(), "--workdir", work.string(), "--ro",
                                 (host.path() / "missing").string(), "--", "true"});
  EXPECT_EQ(missing.exit_code, 125);
  EXPECT_THAT(missing.err, HasSubstr("--ro '"));
  expect_nothing_left(subnet);
}

TEST(LaunchSandboxFs, WorkdirQuotaStopsAWriterWithEnospcAndDiscardsOrCommits) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(146);
  const auto mounts_before = mount_lines();
  SandboxDir host;
  const auto work = host.folder("work", fs::perms(0777));
  fs::create_directories(work / "sub");
  fs::permissions(work / "sub", fs::perms(0777));
  write_file(work / "keep", "kept\n", fs::perms(0666));
  write_file(work / "del", "to delete\n", fs::perms(0666));
  write_file(work / "sub" / "f", "original\n", fs::perms(0666));
  test::TempDir db_dir;
  const std::string db = (db_dir.path() / "a.db").string();
  const std::string changes =
      "echo new > new; rm del; echo changed > sub/f; mkdir d2; echo y > d2/y; ln -s keep link; ";

  auto discarded = launch(subnet, {"--audit-db", db, "--workdir", work.string(), "--workdir-quota", "16M", "--", kSh,
                                   "-c", changes + "dd if=/dev/zero of=big bs=1M count=32 2>&1; echo dd=$?; cat sub/f"});
  EXPECT_EQ(discarded.exit_code, 0) << discarded.err;
  EXPECT_THAT(discarded.out, HasSubstr("No space left on device"));
  EXPECT_THAT(discarded.out, HasSubstr("dd=1\nchanged\n"));
  EXPECT_THAT(discarded.err, HasSubstr("--workdir-quota: "));
  EXPECT_THAT(discarded.err, HasSubstr("bytes written in " + work.string() + ", discarded"));
  EXPECT_FALSE(fs::exists(work / "big"));
  EXPECT_FALSE(fs::exists(work / "new"));
  EXPECT_TRUE(fs::exists(work / "del"));
  EXPECT_EQ(slurp(work / "sub" / "f"), "original\n");

  auto committed = launch(subnet, {"--audit-db", db, "--workdir", work.string(), "--workdir-quota", "16M", "--commit",
                                   "--", kSh, "-c", changes + "truncate -s 8G sparse; echo done"});
  EXPECT_EQ(committed.exit_code, 0) << committed.err;
  EXPECT_THAT(committed.err, HasSubstr("bytes written in " + work.string() + ", committed"));
  EXPECT_EQ(slurp(work / "new"), "new\n");
  EXPECT_FALSE(fs::exists(work / "del"));
  EXPECT_EQ(slurp(work / "sub" / "f"), "changed\n");
  EXPECT_EQ(slurp(work / "d2" / "y"), "y\n");
  EXPECT_EQ(fs::read_symlink(work / "link"), "keep");
  EXPECT_EQ(slurp(work / "keep"), "kept\n");
  struct stat st {};
  ASSERT_EQ(::stat((work / "new").c_str(), &st), 0);
  EXPECT_GE(st.st_uid, 2'000'000'000u) << "the agent's file, owned by the agent's user (the launch's own uid)";
  EXPECT_LT(st.st_uid, 2'000'065'536u);
  // 8 GiB the quota held (a hole takes no room) must not become 8 GiB on the host's disk.
  ASSERT_EQ(::stat((work / "sparse").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 8LL << 30);
  EXPECT_LT(st.st_blocks * 512, 1 << 20);

  // The agents row keeps what each launch wrote into its overlay, as stderr said: the
  // first filled the 16M quota, the second's 8G file was a hole.
  std::vector<std::uint64_t> written;
  for (const auto& row : query(db, "SELECT resource_usage FROM agents ORDER BY id")) {
    auto j = nlohmann::json::parse(row.at(0), nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("workdir_bytes_written")) << row.at(0);
    written.push_back(j["workdir_bytes_written"].get<std::uint64_t>());
  }
  ASSERT_EQ(written.size(), 2u);
  EXPECT_GT(written[0], 15u << 20);
  EXPECT_LE(written[0], 16u << 20);
  EXPECT_GT(written[1], 0u);
  EXPECT_LT(written[1], 1u << 20);
  EXPECT_THAT(discarded.err, HasSubstr("--workdir-quota: " + std::to_string(written[0]) + " bytes written"));
  EXPECT_THAT(committed.err, HasSubstr("--workdir-quota: " + std::to_string(written[1]) + " bytes written"));

  auto explain = launch(subnet, {"--explain", "--audit-db", db, "--workdir", work.string(), "--workdir-quota", "16M",
                                 "--", "true"});
  EXPECT_EQ(explain.exit_code, 0) << explain.err;
  EXPECT_THAT(explain.out, HasSubstr("overlay, upper layer a tmpfs of 16M; changes discarded at exit"));
  auto commit_alone = launch(subnet, {"--audit-db", db, "--workdir", work.string(), "--commit", "--", "true"});
  EXPECT_EQ(commit_alone.exit_code, 2);
  EXPECT_THAT(commit_alone.err, HasSubstr("--commit: only with --workdir-quota"));
  auto zero = launch(subnet, {"--audit-db", db, "--workdir", work.string(), "--workdir-quota", "0", "--", "true"});
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_THAT(zero.err, HasSubstr("--workdir-quota '0'"));

  EXPECT_EQ(leaked_mounts(mounts_before, {host.path()}), "") << "mounts were left behind on the host";
  expect_nothing_left(subnet);
}

TEST(LaunchSandboxFs, AKilledLauncherLeavesNoMountAndNoChangeAndATimeoutStillCommits) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(147);
  const auto mounts_before = mount_lines();
  SandboxDir host;
  const auto work = host.folder("work", fs::perms(0777));
  test::TempDir db_dir;
  const std::string db = (db_dir.path() / "a.db").string();
  Background launcher({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--audit-db", db,
                       "--workdir", work.string(), "--workdir-quota", "16M", "--commit", "--rw",
                       host.folder("rw", fs::perms(0777)).string(), "--", kSh, "-c",
                       "echo uncommitted > file && echo ready; exec sleep 60"},
                      db_dir.path(), "victim");
  ASSERT_TRUE(eventually([&] { return launcher.out().find("ready") != std::string::npos; })) << launcher.err();
  ::kill(launcher.pid(), SIGKILL);
  EXPECT_EQ(launcher.wait(), 137);
  EXPECT_TRUE(eventually([&] {
    return test::run({"ip", "-o", "link", "show"}).out.find(subnet.veth_prefix) == std::string::npos;
  }));
  EXPECT_EQ(test::run_netbox({"gc"}).exit_code, 0);
  EXPECT_FALSE(fs::exists(work / "file")) << "the overlay of a killed launch reached the host";

  // --timeout ends the agent with SIGTERM; the init outlives it and commits.
  auto timed = launch(subnet, {"--audit-db", db, "--workdir", work.string(), "--workdir-quota", "16M", "--commit",
                               "--timeout", "1", "--", kSh, "-c", "echo committed > file; exec sleep 60"});
  EXPECT_EQ(timed.exit_code, 124) << timed.err;
  EXPECT_THAT(timed.err, HasSubstr("committed"));
  EXPECT_EQ(slurp(work / "file"), "committed\n");

  EXPECT_EQ(leaked_mounts(mounts_before, {host.path()}), "") << "mounts were left behind on the host";
  expect_nothing_left(subnet);
}

TEST(LaunchSandboxFs, ACommitNeverChangesAFileSystemMountedInsideTheWorkdir) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(148);
  SandboxDir host;
  const auto work = host.folder("work", fs::perms(0777));
  const auto mnt = host.folder("work/mnt", fs::perms(0777));
  // A file system of its own inside the workdir, as a data volume would be.
  ASSERT_EQ(test::run({"mount", "-t", "tmpfs", "-o", "size=1m,mode=0777", "nbx-e2e", mnt.string()}).exit_code, 0);
  struct Unmount {
    fs::path path;
    ~Unmount() { test::run({"umount", path.string()}); }
  } unmount{mnt};
  write_file(mnt / "data", "on another file system\n");
  test::TempDir db_dir;
  // The agent sees an empty mnt (an overlay's lower layer has no submounts); deleting it
  // leaves a whiteout that a careless commit would apply to the volume's contents.
  auto r = launch(subnet, {"--audit-db", (db_dir.path() / "a.db").string(), "--workdir", work.string(),
                           "--workdir-quota", "16M", "--commit", "--", kSh, "-c", "ls -A mnt | wc -l; rm -rf mnt"});
  EXPECT_EQ(r.exit_code, 125) << r.err;
  EXPECT_EQ(r.out, "0\n");
  // The host's root is detached from the init's view before the agent runs, so the
  // mount is not crossed (the rmdir finds it busy); the commit's own check of the file
  // system is the second wall. Either way the commit stops there and says so.
  EXPECT_THAT(r.err, HasSubstr("--commit failed, partly applied: "));
  EXPECT_THAT(r.err, HasSubstr("./mnt"));
  EXPECT_EQ(slurp(mnt / "data"), "on another file system\n");
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
