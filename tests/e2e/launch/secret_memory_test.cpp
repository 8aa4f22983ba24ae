// Issue 22 item 11: no process in the agent's namespaces holds a credential's secret.
// netbox-init is cloned from the launcher, which has read the secret by then: its copy of
// the launcher's memory must hold none (the secret's pages are wiped on fork, every other
// copy zeroed before the clone). Searched as root from the host through /proc/PID/mem of
// the init, every readable mapping; the same search finds the secret in the launcher,
// whose embedded proxy holds it, so the search itself works. From inside, the agent (as
// uid 0, the most the launch gives it) reads what /proc shows it of the init.
#include "launch_fixture.hpp"

#include "netbox/tls/certificate_authority.hpp"
#include "support/temp_dir.hpp"
#include "support/tls_upstream_server.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <signal.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

namespace netbox::launch_test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kVar = "NETBOX_TEST_MEMORY_KEY";
constexpr const char* kSecret = "sk-e2e-in-no-memory-of-the-namespace-7f3a9c";

struct SecretInEnvironment {
  SecretInEnvironment() { ::setenv(kVar, kSecret, 1); }
  ~SecretInEnvironment() { ::unsetenv(kVar); }
};

// Whether `needle` is in any readable mapping of process `pid` (read as root).
bool memory_holds(pid_t pid, const std::string& needle) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  const int mem = ::open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  if (mem < 0) throw std::runtime_error("cannot open /proc/" + std::to_string(pid) + "/mem");
  std::string line;
  bool found = false;
  while (!found && std::getline(maps, line)) {
    unsigned long from = 0, to = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %4s", &from, &to, perms) != 3 || perms[0] != 'r') continue;
    if (line.find("[vvar]") != std::string::npos || to - from > (1UL << 30)) continue;  // no data / reservations
    std::string bytes(to - from, '\0');
    const ssize_t n = ::pread(mem, bytes.data(), bytes.size(), static_cast<off_t>(from));
    if (n > 0) found = bytes.substr(0, static_cast<std::size_t>(n)).find(needle) != std::string::npos;
  }
  ::close(mem);
  return found;
}

// The launcher's child named netbox-init (the namespace's PID 1).
pid_t init_of(pid_t launcher) {
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::ifstream status(e.path() / "status");
    std::string line, name;
    pid_t ppid = -1;
    while (std::getline(status, line)) {
      if (line.starts_with("Name:")) name = line.substr(line.find_first_not_of(" \t", 5));
      if (line.starts_with("PPid:")) ppid = std::stoi(line.substr(5));
    }
    if (ppid == launcher && name == "netbox-init") return std::stoi(e.path().filename());
  }
  return -1;
}

TEST(LaunchSecretMemory, NetboxInitHoldsNoSecretAndTheAgentReadsNone) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(133);
  test::TempDir dir;
  test::TlsUpstreamServer tls{"allowed.test"};
  tls::CertificateAuthority::create(dir.path() / "ca");
  auto j = nlohmann::json::parse(policy_json(tls.port()));
  j["inspect"] = {"allowed.test"};
  j["credentials"] = nlohmann::json::parse(std::string(R"([{"name": "openai", "hosts": ["allowed.test"],
      "header": "Authorization", "format": "Bearer {secret}", "secret_env": ")") + kVar + "\"}]");
  const auto policy = dir.write("policy.json", j.dump());
  SecretInEnvironment secret;
  // As uid 0 inside: /proc/1 is visible (hidepid spares root), so every read is tried.
  const std::string agent = R"(
for f in /proc/1/environ /proc/1/cmdline /proc/1/mem; do
  if head -c 1000000 "$f" 2>/dev/null | grep -a -q "$NEEDLE"; then echo "found in $f"; else echo "none in $f"; fi
done
echo ready
exec sleep 600
)";
  Background launcher({NETBOX_BINARY, "launch", "--subnet", subnet.cidr, "--policy", policy.string(), "--audit-db",
                       (dir.path() / "a.db").string(), "--ca-dir", (dir.path() / "ca").string(), "--user", "root",
                       "--env", std::string("NEEDLE=") + std::string(kSecret).substr(0, 12) + "[-]" + std::string(kSecret).substr(13),
                       "--", kSh, "-c", agent},
                      dir.path(), "launch");
  ASSERT_TRUE(eventually([&] { return launcher.out().find("ready") != std::string::npos; })) << launcher.err();
  EXPECT_THAT(launcher.out(), Not(HasSubstr("found in"))) << launcher.out();
  EXPECT_THAT(launcher.out(), HasSubstr("none in /proc/1/environ"));
  const pid_t init = init_of(launcher.pid());
  ASSERT_GT(init, 0);
  EXPECT_TRUE(memory_holds(launcher.pid(), kSecret)) << "the search must find the secret where it is (the proxy)";
#if defined(__SANITIZE_ADDRESS__)
  // The sanitizer runtime keeps its own copy of the whole environment (read from
  // /proc/self/environ at start, for its options) in a mapping of its own, which the init
  // inherits and netbox cannot wipe (seen: one hit, "...SMT_SECRET=...\0SHELL=..." in a
  // small anonymous mapping). The normal build makes this check.
#else
  EXPECT_FALSE(memory_holds(init, kSecret)) << "netbox-init holds the credential's secret";
#endif
  ::kill(launcher.pid(), SIGTERM);
  launcher.wait();
  expect_nothing_left(subnet);
}

// netbox proxy holds its agents' secrets: it is not dumpable. Run as nobody, so that the
// flag shows: /proc/PID files of a non-dumpable process belong to root, not to its user.
TEST(LaunchSecretMemory, NetboxProxyIsNotDumpable) {
  NETBOX_REQUIRE_ROOT();
  HostDir host;
  const auto store = host.folder("nobody-store", fs::perms(0700));
  ASSERT_EQ(::chown(store.c_str(), 65534, 65534), 0);
  const auto policy = host.file("policy.json", policy_json(8080));
  Background proxy({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", NETBOX_BINARY, "proxy",
                    "--listen", "127.0.0.1:0", "--policy", policy.string(), "--audit-db", (store / "a.db").string()},
                   host.path(), "proxy");
  const fs::path proc = "/proc/" + std::to_string(proxy.pid());
  // Once it runs netbox as nobody and says it listens (setpriv execs it: same pid).
  ASSERT_TRUE(eventually([&] { return proxy.err().find("listening") != std::string::npos; })) << proxy.err();
  std::ifstream status(proc / "status");
  std::string line, uid;
  while (std::getline(status, line))
    if (line.starts_with("Uid:")) uid = line;
  EXPECT_THAT(uid, HasSubstr("65534")) << "the proxy runs as nobody";
  struct stat st {};
  ASSERT_EQ(::stat((proc / "environ").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u) << "/proc/PID/environ of a dumpable process belongs to its user";
  ::kill(proxy.pid(), SIGTERM);
  proxy.wait();
}

}  // namespace
}  // namespace netbox::launch_test
