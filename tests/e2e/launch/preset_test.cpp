// Launch defaults (issue 27 item 1): `--preset NAME` with nothing else runs an agent
// installed under its user's HOME; the user's ~/.config/netbox/launch.json gives every flag
// a key, checked like proxy.json (position, key, owner, mode); every agent user gets a
// usable HOME. Each from a real launch, as if through sudo.
#include "launch_fixture.hpp"
#include "temp_user.hpp"

#include "support/sqlite_query.hpp"

#include "netbox/tls/certificate_authority.hpp"

#include <gmock/gmock.h>
#include <sys/stat.h>

#include <fstream>

namespace netbox::launch_test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

fs::path write_file(const fs::path& p, const std::string& text, fs::perms mode = fs::perms(0644)) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
  fs::permissions(p, mode);
  return p;
}

// A user with a HOME like one Claude Code's installer leaves: the agent in ~/.local/bin,
// its settings in ~/.claude; and the user's launch.json.
struct AgentHome {
  AgentHome() : home(host.folder("home")), project(host.folder("project")), user(home, "nbxps") {}

  void install_stand_in(std::uint16_t upstream_port) {
    // Stands in for Claude Code: writes its HOME and its settings folder, and calls the
    // model API (api.anthropic.com, pinned to the loopback upstream by the test policy).
    write_file(home / ".local/bin/claude", R"(#!/usr/bin/python3
import os, sys, urllib.request
home = os.environ["HOME"]
os.makedirs(os.path.join(home, ".cache", "claude"), exist_ok=True)
with open(os.path.join(home, ".claude", "session.json"), "w") as f:
    f.write("kept by the preset's --rw ~/.claude\n")
print("home", home)
print("first-in-path", os.environ["PATH"].split(":")[0])
body = urllib.request.urlopen("http://api.anthropic.com:)" + std::to_string(upstream_port) +
                                                        R"(/v1/messages", timeout=20).read().decode()
print("model", body)
)",
               fs::perms(0755));
    fs::create_directories(home / ".claude");
  }

  fs::path launch_json(const std::string& text, fs::perms mode = fs::perms(0644)) {
    return write_file(home / ".config/netbox/launch.json", text, mode);
  }

  void own_all() {
    chown_tree(home, user.uid(), user.gid());
    chown_tree(project, user.uid(), user.gid());
  }

  HostDir host;
  fs::path home, project;
  TempUser user;
  test::TempDir db_dir;
  std::string db = (db_dir.path() / "a.db").string();
};

TEST(LaunchPreset, ClaudeRunsAStandInInstalledUnderHomeWithNoOtherFlag) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(85);
  HttpServer upstream;
  AgentHome a;
  a.install_stand_in(upstream.port());
  // The test's own settings, in the user's launch.json: its subnet and store, and a policy
  // that includes @anthropic with api.anthropic.com pinned to the loopback upstream.
  const auto policy = write_file(a.host.path() / "policy.json", R"({"version": 1, "include": ["@anthropic"],
    "ports": [)" + std::to_string(upstream.port()) + R"(],
    "resolve": {"api.anthropic.com": ["127.0.0.1"]}, "internal": {"allow": ["127.0.0.1/32"]}})");
  a.launch_json(R"({
  // the test's subnet, store and policy; the rest is the preset's
  "subnet": ")" + subnet.cidr + R"(", "audit-db": ")" + a.db + R"(",
  "workdir": ")" + a.project.string() + R"(", "policy": ")" + policy.string() + R"("
})");
  a.own_all();

  const auto r = launch_as_sudo_caller(a.user, {"--preset", "claude", "--", "claude"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("home " + a.home.string() + "\n"));
  EXPECT_THAT(r.out, HasSubstr("first-in-path " + (a.home / ".local/bin").string() + "\n"));
  EXPECT_THAT(r.out, HasSubstr(std::string("model ") + HttpServer::kBody));
  EXPECT_TRUE(fs::exists(a.home / ".claude/session.json")) << "the preset's --rw ~/.claude did not reach the host";
  EXPECT_FALSE(fs::exists(a.home / ".cache")) << "HOME is a tmpfs: the agent's cache stays inside";
  EXPECT_EQ(test::query_column(a.db, "SELECT host || ' ' || decision FROM requests"),
            std::vector<std::string>{"api.anthropic.com allow"});
  expect_nothing_left(subnet);
}

// With a netbox CA and the key in the launcher's environment, the preset's policy inspects
// the API host and injects the key: the agent holds only a placeholder.
TEST(LaunchPreset, WithACaTheAgentHoldsAPlaceholderNotTheKey) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(89);
  AgentHome a;
  write_file(a.home / ".local/bin/claude", "#!/bin/sh\necho \"key=$ANTHROPIC_API_KEY\"\n", fs::perms(0755));
  const auto ca_dir = a.db_dir.path() / "ca";
  tls::CertificateAuthority::create(ca_dir);
  a.launch_json(R"({"subnet": ")" + subnet.cidr + R"(", "audit-db": ")" + a.db + R"(", "workdir": ")" +
                a.project.string() + R"(", "ca-dir": ")" + ca_dir.string() + R"("})");
  a.own_all();
  const std::string secret = "sk-ant-e2e-the-agent-must-never-see-this";
  std::vector<std::string> argv = {"env", "ANTHROPIC_API_KEY=" + secret, "SUDO_UID=" + std::to_string(a.user.uid()),
                                   "SUDO_GID=" + std::to_string(a.user.gid()), "SUDO_USER=" + a.user.name(),
                                   test::netbox_binary().string(), "launch", "--preset", "claude", "--", "claude"};
  const auto r = test::run(argv);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("key=")) << r.err;
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr(secret)));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("key=\n"))) << "the agent got no placeholder";
  expect_nothing_left(subnet);
}

// A command installed under HOME (Claude Code's installer uses ~/.local/bin) is not found
// inside, where HOME is empty: the message names where it is and the flags that show it.
TEST(LaunchPreset, ACommandOnlyTheHostHasIsNamedWithTheFlagsThatShowIt) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(87);
  AgentHome a;
  a.install_stand_in(9);
  a.own_all();
  const auto r = launch_as_sudo_caller(a.user, {"--subnet", subnet.cidr, "--audit-db", a.db, "--workdir",
                                                a.project.string(), "--", "claude"});
  EXPECT_EQ(r.exit_code, 127) << r.err;
  const std::string bin = (a.home / ".local/bin").string();
  EXPECT_THAT(r.err, HasSubstr("claude: command not found; on the host it is " + bin +
                               "/claude, which the agent does not see: give --ro " + bin + " --env PATH=" + bin));
  EXPECT_THAT(r.err, HasSubstr("or --preset claude"));
  expect_nothing_left(subnet);
}

// Every key of the user's launch.json is a flag; a flag given wins over its key.
TEST(LaunchPreset, TheUsersLaunchJsonKeysApplyAndAFlagWins) {
  NETBOX_REQUIRE_ROOT();
  AgentHome a;
  a.launch_json(R"({"agent": "from-file", "audit-db": ")" + a.db + R"(", "workdir": ")" + a.project.string() +
                R"(", "timeout": "1h30m"})");
  a.own_all();
  const auto from_file = launch_as_sudo_caller(a.user, {"--explain", "--format", "json", "--", "true"});
  EXPECT_EQ(from_file.exit_code, 0) << from_file.err;
  EXPECT_THAT(from_file.out, HasSubstr(R"("agent":"from-file")"));
  const auto flag = launch_as_sudo_caller(a.user, {"--explain", "--format", "json", "--agent", "from-flag", "--", "true"});
  EXPECT_EQ(flag.exit_code, 0) << flag.err;
  EXPECT_THAT(flag.out, HasSubstr(R"("agent":"from-flag")"));
}

// Mistakes in launch.json exit 2 before anything runs, naming the file, the line and
// column, and the key; a file others may change is refused, since it names the policy.
TEST(LaunchPreset, AMistakeInLaunchJsonExitsTwoNamingFileAndKey) {
  NETBOX_REQUIRE_ROOT();
  AgentHome a;
  const std::string file = (a.home / ".config/netbox/launch.json").string();
  struct Case {
    std::string text;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"{\"polcy\": \"x.json\"}", file + ":1:2: unknown key 'polcy' (did you mean policy?)"},
      {"{\n  // the timeout\n  \"timeout\": \"1h2h\"}", file + ":3:14: key timeout: '1h2h' is not a duration"},
      {"{\"ro\": 3}", file + ":1:8: key ro: expected a string or a non-empty list of strings"},
      {"{\"preset\": \"clod\"}", file + ":1:12: key preset: clod not in {claude,codex,aider,gemini}"},
      {"{\"agent\": \"a\", \"agent\": \"b\"}", file + ":1:16: /agent: key 'agent' appears twice"},
  };
  for (const auto& c : cases) {
    a.launch_json(c.text);
    a.own_all();
    const auto r = launch_as_sudo_caller(a.user, {"--", "true"});
    EXPECT_EQ(r.exit_code, 2) << c.text << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("netbox launch: " + c.message, 0), 0U) << c.text << "\n" << r.err;
  }
  a.launch_json("{}", fs::perms(0666));
  a.own_all();
  const auto mode = launch_as_sudo_caller(a.user, {"--", "true"});
  EXPECT_EQ(mode.exit_code, 2) << mode.err;
  EXPECT_EQ(mode.err.rfind("netbox launch: " + file + ": mode 0666 lets every local user change it", 0), 0U)
      << mode.err;
  a.launch_json("{}");
  a.own_all();
  ASSERT_EQ(::chown(file.c_str(), 65534, 65534), 0);
  const auto owner = launch_as_sudo_caller(a.user, {"--", "true"});
  EXPECT_EQ(owner.exit_code, 2) << owner.err;
  EXPECT_EQ(owner.err.rfind("netbox launch: " + file + ": owned by uid 65534", 0), 0U) << owner.err;
}

// The default agent user (a uid of its own, nobody's /nonexistent as its home) gets a
// usable, empty HOME: the agent's own /tmp.
TEST(LaunchPreset, TheDefaultAgentUserGetsAUsableHome) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(86);
  HostDir work;
  test::TempDir db_dir;
  const auto r = launch(subnet, {"--audit-db", (db_dir.path() / "a.db").string(), "--workdir", work.path().string(),
                                 "--", "/bin/sh", "-c",
                                 "echo HOME=$HOME; mkdir -p \"$HOME/.cache/x\" && ls -A \"$HOME\" | tr '\\n' ' ' && echo usable"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("HOME=/tmp\n"));
  EXPECT_THAT(r.out, HasSubstr(".cache usable"));
  expect_nothing_left(subnet);
}

}  // namespace
}  // namespace netbox::launch_test
