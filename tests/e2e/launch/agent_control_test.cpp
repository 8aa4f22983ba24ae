// Operator control of running agents (issue 25 items 3 and 5): `netbox agent freeze`
// stops a counting agent, `resume` lets it go on, and `kill` ends it (frozen or not) and
// says it is gone only once it is; for an embedded launch over its own operator socket,
// and for an agent of a shared proxy, where the action travels to the agent's launcher
// over its registration connection, as a shared proxy's guardian rule's kill does too.
// From inside the sandbox the agent can neither reach a launch's operator socket nor use
// a shared proxy's operator ops, and `netbox agent list` names every running agent.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <thread>

namespace netbox::launch_test {
namespace {

namespace fs = std::filesystem;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;

const fs::path kLaunches = "/run/netbox/launches";

test::RunResult agent_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "agent");
  return test::run_netbox(args, std::chrono::seconds(60));
}

std::string unique(const std::string& what) { return "ctl-" + what + "-" + std::to_string(::getpid()); }

// The agent NAME as `netbox agent list` shows it (null when it is not listed).
nlohmann::json listed(const std::string& name, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args{"list", "--format", "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = agent_cli(args);
  const auto list = nlohmann::json::parse(r.out, nullptr, false);
  if (!list.is_array()) return nullptr;
  for (const auto& a : list)
    if (a.value("name", "") == name) return a;
  return nullptr;
}

// A shell counting as it goes, one line per count.
const std::string kCounter = "i=0; while :; do i=$((i+1)); echo $i; sleep 0.01; done";

bool grows(const Background& b) {
  const auto before = b.out().size();
  return eventually([&] { return b.out().size() > before; }, std::chrono::seconds(10));
}

bool stands_still(const Background& b) {
  const auto held = b.out().size();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // a running counter prints ~50 lines here
  return b.out().size() == held;
}

bool ended(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  return stat.empty() || stat.find(") Z") != std::string::npos;
}

// Freeze, resume, freeze again and kill the agent NAME whose launch is `launcher`, over
// whatever socket `netbox agent` finds it by (`extra` flags: --control of a shared proxy).
void freeze_resume_kill(Background& launcher, const std::string& name, const std::vector<std::string>& extra) {
  ASSERT_TRUE(eventually([&] { return !listed(name, extra).is_null(); })) << launcher.err();
  ASSERT_TRUE(grows(launcher)) << launcher.err();
  const auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), extra.begin(), extra.end());
    return agent_cli(args);
  };

  auto r = with({"freeze", name});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("frozen"));
  EXPECT_TRUE(stands_still(launcher)) << "a frozen agent went on counting";
  EXPECT_EQ(listed(name, extra).value("state", ""), "frozen");

  r = with({"resume", name});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(grows(launcher)) << "a resumed agent did not go on";
  EXPECT_EQ(listed(name, extra).value("state", ""), "running");

  r = with({"freeze", name});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = with({"kill", name});  // frozen: thawed first, then ended
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(name + " is gone: killed"));
  ASSERT_TRUE(eventually([&] { return ended(launcher.pid()); }, std::chrono::seconds(20)));
  EXPECT_THAT(launcher.wait(), AnyOf(143, 137)) << launcher.err();
  EXPECT_THAT(launcher.err(), HasSubstr("the operator is killing the agent: operator uid 0"));

  EXPECT_TRUE(eventually([&] { return listed(name, extra).is_null(); })) << "a killed agent is still listed";
  r = with({"kill", name});  // gone: nothing answers for it any more
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("no running agent is named " + name));
}

void expect_operator_rows(const fs::path& db, const std::string& name) {
  const auto rows = query(db, "SELECT message FROM events WHERE kind = 'operator_action' AND message LIKE '% " +
                                  name + ": %' ORDER BY id");
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_THAT(rows[0][0], HasSubstr("operator uid 0: freeze " + name + ": frozen"));
  EXPECT_THAT(rows[1][0], HasSubstr("resume " + name + ": resumed"));
  EXPECT_THAT(rows[3][0], HasSubstr("kill " + name + ": killed"));
}

TEST(AgentControl, AnEmbeddedLaunchIsFrozenResumedAndKilledOverItsOperatorSocket) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(140);
  test::TempDir dir;
  const auto policy = dir.write("policy.json", policy_json(8080));
  const auto db = dir.path() / "audit.db";
  const auto name = unique("embedded");
  Background launcher({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--policy", policy.string(),
                       "--audit-db", db.string(), "--name", name, "--", kSh, "-c", kCounter},
                      dir.path(), "embedded");
  const auto socket = kLaunches / (std::to_string(launcher.pid()) + ".sock");
  ASSERT_TRUE(eventually([&] { return fs::exists(socket); })) << launcher.err();
  struct stat st {};
  ASSERT_EQ(::stat(kLaunches.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  freeze_resume_kill(launcher, name, {});
  EXPECT_FALSE(fs::exists(socket)) << "the launch left its operator socket behind";
  expect_operator_rows(db, name);
  expect_nothing_left(subnet);
}

TEST(AgentControl, AnAgentOfASharedProxyIsFrozenResumedAndKilledThroughItsLauncher) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(141);
  HostDir host;
  test::TempDir dir;
  SharedProxy proxy(host, dir.write("policy.json", policy_json(8080)));
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  const auto name = unique("shared");
  Background launcher({test::netbox_binary().string(), "launch", "--subnet", subnet.cidr, "--proxy-control",
                       proxy.socket().string(), "--name", name, "--", kSh, "-c", kCounter},
                      dir.path(), "shared");
  freeze_resume_kill(launcher, name, {"--control", proxy.socket().string()});
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  expect_operator_rows(proxy.store(), name);
  expect_nothing_left(subnet);
}

// The missing half of "the shared proxy applies all of this per registered agent": a
// guardian rule's kill used to be recorded as not done, the agent left running.
TEST(AgentControl, AGuardianKillRuleOfASharedProxyEndsTheAgent) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(142);
  HttpServer upstream;
  HostDir host;
  test::TempDir dir;
  auto policy = policy_json(upstream.port());
  policy.insert(policy.rfind('}'), R"(, "guardian": {"rules": [{"on": ["denied >= 3 in 60s"], "action": "kill"}]})");
  SharedProxy proxy(host, dir.write("policy.json", policy));
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  const std::string denied =
      std::string(kCurl) + " -s -o /dev/null http://denied.test:" + std::to_string(upstream.port()) + "/";
  const auto r = launch(subnet, {"--proxy-control", proxy.socket().string(), "--name", unique("guarded"), "--", kSh,
                                 "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do " + denied + "; done; sleep 50; echo survived"});
  EXPECT_THAT(r.out, Not(HasSubstr("survived")));
  EXPECT_THAT(r.exit_code, AnyOf(143, 137)) << r.err;
  EXPECT_THAT(r.err, HasSubstr("the guardian is killing the agent: guardian.rules[0]"));
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  const auto rows = query(proxy.store(), "SELECT kind, message FROM events WHERE kind LIKE 'guardian_action%'");
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows.front()[0], "guardian_action");
  EXPECT_THAT(rows.front()[1], HasSubstr("killed"));
  expect_nothing_left(subnet);
}

// What an agent tries: the launches' folder, a launch's socket by its path, and the
// operator ops of the shared proxy it is registered with. The launcher hides the proxy's
// control socket from its agents (by its folder); here a careless operator has also linked
// it where the agent can see it, open to everyone: SO_PEERCRED still refuses the agent.
const char* kAttack = R"PY(
import os, socket, sys, time
print("launches visible:", os.path.exists(sys.argv[1]), flush=True)
def ask(path, line):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(20)
        s.connect(path)
        s.sendall(line.encode() + b"\n")
        return s.recv(4096).decode().strip()
    except OSError as e:
        return "error " + type(e).__name__
print("embedded:", ask(sys.argv[2], '{"op":"kill","agent":"%s"}' % sys.argv[4]), flush=True)
print("shared kill:", ask(sys.argv[3], '{"op":"kill","agent":"%s"}' % sys.argv[5]), flush=True)
print("shared list:", ask(sys.argv[3], '{"op":"list"}'), flush=True)
print("attacked", flush=True)
while True:
    time.sleep(1)
)PY";

// A process of uid `uid` connecting to `path`: the errno, 0 when it connected.
int connect_as(uid_t uid, const fs::path& path) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setresgid(uid, uid, uid) != 0 || ::setresuid(uid, uid, uid) != 0) ::_exit(99);
    const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    ::_exit(::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 ? 0 : errno);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(AgentControl, TheAgentCannotReachAnOperatorSocketNorUseTheSharedProxysOperatorOps) {
  NETBOX_REQUIRE_ROOT();
  const auto victim_subnet = test_subnet(143);
  const auto attacker_subnet = test_subnet(144);
  HostDir host;
  test::TempDir dir;
  const auto policy = dir.write("policy.json", policy_json(8080));
  SharedProxy proxy(host, policy);
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  const auto exposed = host.folder("exposed") / "proxy.sock";
  ASSERT_EQ(::link(proxy.socket().c_str(), exposed.c_str()), 0) << std::strerror(errno);
  ASSERT_EQ(::chmod(exposed.c_str(), 0666), 0);  // reachable by the agent: only SO_PEERCRED stands
  const auto victim = unique("victim");
  const auto attacker = unique("attacker");
  Background embedded({test::netbox_binary().string(), "launch", "--subnet", victim_subnet.cidr, "--policy",
                       policy.string(), "--audit-db", (dir.path() / "audit.db").string(), "--name", victim, "--",
                       kSh, "-c", kCounter},
                      dir.path(), "victim");
  const auto victim_socket = kLaunches / (std::to_string(embedded.pid()) + ".sock");
  ASSERT_TRUE(eventually([&] { return !listed(victim).is_null(); })) << embedded.err();
  // The agent's uid, or any uid but root, cannot enter the launches' folder.
  EXPECT_EQ(connect_as(65534, victim_socket), EACCES);
  const auto script = host.file("attack.py", kAttack);
  Background attack({test::netbox_binary().string(), "launch", "--subnet", attacker_subnet.cidr, "--proxy-control",
                     proxy.socket().string(), "--name", attacker, "--", kPython, script.string(), kLaunches.string(),
                     victim_socket.string(), exposed.string(), victim, attacker},
                    dir.path(), "attacker");
  ASSERT_TRUE(eventually([&] { return attack.out().find("attacked") != std::string::npos; })) << attack.err();
  const auto out = attack.out();
  EXPECT_THAT(out, HasSubstr("launches visible: False"));
  EXPECT_THAT(out, HasSubstr("embedded: error FileNotFoundError"));
  EXPECT_THAT(out, HasSubstr("shared kill: {\"error\":\"operator op \\\"kill\\\" refused: uid 2"));
  EXPECT_THAT(out, HasSubstr("shared list: {\"error\":\"operator op \\\"list\\\" refused: uid 2"));

  // Both still run, and `list` names both: the launch's and the shared proxy's.
  const auto r = agent_cli({"list", "--format", "json", "--control", proxy.socket().string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto list = nlohmann::json::parse(r.out);
  std::map<std::string, std::string> via;
  for (const auto& a : list) via[a.value("name", "")] = a.value("via", "");
  EXPECT_EQ(via[victim], victim_socket.string());
  EXPECT_EQ(via[attacker], proxy.socket().string());
  EXPECT_EQ(listed(victim).value("state", ""), "running");

  EXPECT_EQ(agent_cli({"kill", victim}).exit_code, 0);
  EXPECT_EQ(agent_cli({"kill", attacker, "--control", proxy.socket().string()}).exit_code, 0);
  embedded.wait();
  attack.wait();
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  expect_nothing_left(victim_subnet);
  expect_nothing_left(attacker_subnet);
}

}  // namespace
}  // namespace netbox::launch_test
