// Policy reloads: a good file takes effect for new connections and is recorded; a bad
// one is refused with its reason recorded, and the old policy keeps deciding.
#include "proxy_fixture.hpp"

#include <sys/stat.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

namespace netbox::test {
namespace {

TEST_F(ProxyTest, GoodReloadTakesEffectAndIsRecorded) {
  start_proxy(base_policy(R"("resolve": {"upstream.test": ["127.0.0.1"], "later.test": ["127.0.0.1"]})"));
  const auto later = "http://later.test:" + std::to_string(upstream.port()) + "/";
  EXPECT_EQ(proxy_get(port, later).status, 403);
  dir.write("policy.json", base_policy(R"("allow": ["upstream.test", "later.test"],
      "resolve": {"upstream.test": ["127.0.0.1"], "later.test": ["127.0.0.1"]})"));
  EXPECT_TRUE(server->reload_policy());
  EXPECT_EQ(proxy_get(port, later).status, 200);
  auto ev = events();
  ASSERT_GE(ev.size(), 2u);
  EXPECT_EQ(ev.front().kind, "policy_load");  // the start
  EXPECT_EQ(ev.back().kind, "policy_load");   // the reload
  EXPECT_NE(ev.back().message.find("policy.json"), std::string::npos) << ev.back().message;
  EXPECT_EQ(server->counters().policy_reloads_ok, 1u);
}

TEST_F(ProxyTest, BadReloadIsRefusedRecordedAndTheOldPolicyStays) {
  start_proxy(base_policy());
  dir.write("policy.json", R"({"version": 1, "allow": ["a.*.test"]})");
  EXPECT_FALSE(server->reload_policy());
  EXPECT_EQ(proxy_get(port, upstream_url("/")).status, 200);  // still the old policy
  auto ev = events();
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev.back().kind, "policy_reload_failed");
  EXPECT_NE(ev.back().message.find("policy.json"), std::string::npos) << ev.back().message;
  EXPECT_NE(ev.back().message.find("allow"), std::string::npos) << ev.back().message;
  EXPECT_EQ(server->counters().policy_reloads_failed, 1u);
}

TEST_F(ProxyTest, KeepAliveConnectionKeepsThePolicyItStartedWith) {
  start_proxy(base_policy());
  ProxyConnection c(port);
  const auto req = "GET " + upstream_url("/") + " HTTP/1.1\r\nHost: upstream.test\r\n\r\n";
  EXPECT_EQ(c.send(req).status, 200);
  dir.write("policy.json", base_policy(R"("allow": ["nothing.test"])"));
  ASSERT_TRUE(server->reload_policy());
  EXPECT_EQ(c.send(req).status, 200);                          // the open connection
  EXPECT_EQ(proxy_get(port, upstream_url("/")).status, 403);    // a new one
}


// A reload must never widen what a registered agent may do: dropping the profile it was
// registered with would decide its requests with the (wider) top level. Refused, kept,
// recorded and counted (issue 12, item 16).
TEST_F(ProxyTest, ReloadRemovingARegisteredAgentsProfileIsRefusedAndTheAgentStaysConfined) {
  start_proxy(base_policy(R"("agents": {"strict": {"allow": ["nothing.test"]}})"));
  server->register_agent(boost::asio::ip::make_address("127.0.0.1"), "confined", "strict");
  EXPECT_EQ(proxy_get(port, upstream_url("/")).status, 403);

  dir.write("policy.json", base_policy());  // the same top level, no agents.strict
  EXPECT_FALSE(server->reload_policy());
  EXPECT_EQ(proxy_get(port, upstream_url("/")).status, 403) << "the reload widened the agent's profile";
  EXPECT_EQ(server->counters().policy_reloads_failed, 1u);
  EXPECT_EQ(server->counters().policy_reloads_ok, 0u);
  ASSERT_EQ(server->policy()->agents.count("strict"), 1u);
  auto ev = events();
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev.back().kind, "policy_reload_failed");
  EXPECT_NE(ev.back().message.find("confined"), std::string::npos) << ev.back().message;
  EXPECT_NE(ev.back().message.find("strict"), std::string::npos) << ev.back().message;

  // Once the agent has left, the same file loads.
  server->unregister_agent(boost::asio::ip::make_address("127.0.0.1"));
  EXPECT_TRUE(server->reload_policy());
  EXPECT_EQ(proxy_get(port, upstream_url("/")).status, 200);
}

TEST_F(ProxyTest, AnAgentCannotBeRegisteredWithAProfileThePolicyLacks) {
  start_proxy(base_policy());
  EXPECT_THROW(server->register_agent(boost::asio::ip::make_address("127.0.0.1"), "confined", "strict"),
               std::invalid_argument);
}

TEST_F(ProxyTest, ReloadKeepingARegisteredAgentsProfileTakesEffect) {
  start_proxy(base_policy(R"("agents": {"strict": {"allow": ["nothing.test"]}})"));
  server->register_agent(boost::asio::ip::make_address("127.0.0.1"), "confined", "strict");
  dir.write("policy.json", base_policy(R"("agents": {"strict": {"allow": ["upstream.test"]}})"));
  EXPECT_TRUE(server->reload_policy());
  EXPECT_EQ(proxy_get(port, upstream_url("/")).status, 200);
}

// An embedded Server follows its policy file by itself (ProxyOptions::watch_policy_file):
// a save in place and an editor's write-and-rename both take effect, with no call from
// its owner; a bad save is refused once and the old policy keeps deciding.
class WatchedPolicyTest : public ProxyTest {
 protected:
  void SetUp() override {
    configure = [](proxy::ProxyOptions& o) { o.watch_policy_file = true; };
    start_proxy(base_policy(R"("resolve": {"upstream.test": ["127.0.0.1"], "later.test": ["127.0.0.1"]})"));
  }
  std::string later_url() const { return "http://later.test:" + std::to_string(upstream.port()) + "/"; }
  std::string allowing(const std::string& names) const {
    return base_policy(R"("allow": [)" + names + R"(],
        "resolve": {"upstream.test": ["127.0.0.1"], "later.test": ["127.0.0.1"]})");
  }
  // Bounded wait for what the watch does a moment after the file changes.
  template <class Pred>
  bool eventually(Pred done) {
    for (int i = 0; i < 300; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return done();
  }
};

TEST_F(WatchedPolicyTest, SavingThePolicyFileReloadsIt) {
  EXPECT_EQ(proxy_get(port, later_url()).status, 403);
  dir.write("policy.json", allowing(R"("upstream.test", "later.test")"));
  EXPECT_TRUE(eventually([&] { return server->counters().policy_reloads_ok == 1; }));
  EXPECT_EQ(proxy_get(port, later_url()).status, 200);
  EXPECT_EQ(events().back().kind, "policy_load");
}

TEST_F(WatchedPolicyTest, AnEditorsWriteAndRenameReloadsIt) {
  const auto tmp = dir.write(".policy.json.swp", allowing(R"("upstream.test", "later.test")"));
  std::filesystem::rename(tmp, policy_path);
  EXPECT_TRUE(eventually([&] { return server->counters().policy_reloads_ok == 1; }));
  EXPECT_EQ(proxy_get(port, later_url()).status, 200);
  // And again: the watch is on the folder, so the replaced inode does not end it.
  const auto tmp2 = dir.write(".policy.json.swp", allowing(R"("later.test")"));
  std::filesystem::rename(tmp2, policy_path);
  EXPECT_TRUE(eventually([&] { return server->counters().policy_reloads_ok == 2; }));
  EXPECT_EQ(proxy_get(port, upstream_url("/")).status, 403);
}

TEST_F(WatchedPolicyTest, ABadSaveIsRefusedAndTheOldPolicyStays) {
  dir.write("policy.json", R"({"version": 1, "allow": ["a.*.test"]})");
  EXPECT_TRUE(eventually([&] { return server->counters().policy_reloads_failed == 1; }));
  EXPECT_EQ(proxy_get(port, upstream_url("/")).status, 200);
  EXPECT_EQ(events().back().kind, "policy_reload_failed");
  EXPECT_EQ(server->counters().policy_reloads_ok, 0u);
}

// Any local user could widen a running proxy's policy by editing a file that became
// world-writable, or by renaming their own file over it in a folder open to them: a
// reload of such a file is refused with an event and the old policy keeps deciding
// (issue 22, item 16).
TEST_F(WatchedPolicyTest, AFileOthersMayWriteIsNotReloaded) {
  ASSERT_EQ(::chmod(policy_path.c_str(), 0666), 0);
  dir.write("policy.json", allowing(R"("upstream.test", "later.test")"));  // "another user's" edit
  EXPECT_TRUE(eventually([&] { return server->counters().policy_reloads_failed >= 1; }));
  EXPECT_EQ(proxy_get(port, later_url()).status, 403) << "a world-writable policy was reloaded";
  EXPECT_EQ(server->counters().policy_reloads_ok, 0u);
  auto ev = events();
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev.back().kind, "policy_reload_failed");
  EXPECT_NE(ev.back().message.find("mode 0666 lets every local user change it"), std::string::npos)
      << ev.back().message;
  // Made safe again, the same content loads.
  ASSERT_EQ(::chmod(policy_path.c_str(), 0644), 0);
  EXPECT_TRUE(eventually([&] { return server->counters().policy_reloads_ok == 1; }));
  EXPECT_EQ(proxy_get(port, later_url()).status, 200);
}

TEST_F(WatchedPolicyTest, AFileInAFolderOthersMayWriteIsNotReloaded) {
  const auto folder = policy_path.parent_path();
  ASSERT_EQ(::chmod(folder.c_str(), 0777), 0);  // no sticky bit: anyone may rename over the file
  const auto tmp = dir.write(".swap", allowing(R"("upstream.test", "later.test")"));
  std::filesystem::rename(tmp, policy_path);
  EXPECT_TRUE(eventually([&] { return server->counters().policy_reloads_failed >= 1; }));
  EXPECT_EQ(proxy_get(port, later_url()).status, 403);
  EXPECT_NE(events().back().message.find("lets other users rename another file over it"), std::string::npos)
      << events().back().message;
  // With the sticky bit (as /tmp), others cannot replace a file they do not own.
  ASSERT_EQ(::chmod(folder.c_str(), 01777), 0);
  dir.write("policy.json", allowing(R"("upstream.test", "later.test")"));
  EXPECT_TRUE(eventually([&] { return server->counters().policy_reloads_ok == 1; }));
  EXPECT_EQ(proxy_get(port, later_url()).status, 200);
  ::chmod(folder.c_str(), 0700);
}

// The audit store often sits beside the policy: its steady writes must not hold a reload off.
TEST_F(WatchedPolicyTest, ABusyFileBesideThePolicyDoesNotHoldTheReloadOff) {
  dir.write("policy.json", allowing(R"("upstream.test", "later.test")"));
  bool reloaded = false;
  for (int i = 0; i < 300 && !reloaded; ++i) {
    dir.write("busy.db", std::to_string(i));  // more often than the quiet period
    reloaded = server->counters().policy_reloads_ok == 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(reloaded) << "writes to another file kept the policy from being reloaded";
}

TEST_F(WatchedPolicyTest, OtherFilesInTheFolderDoNotReloadThePolicy) {
  dir.write("notes.txt", "unrelated");
  dir.write("policy.json", allowing(R"("upstream.test", "later.test")"));  // the change that counts
  EXPECT_TRUE(eventually([&] { return server->counters().policy_reloads_ok == 1; }));
  dir.write("notes.txt", "unrelated again");
  // One more change of the policy, so the test knows the watch has seen the notes by then.
  dir.write("policy.json", allowing(R"("later.test")"));
  EXPECT_TRUE(eventually([&] { return server->counters().policy_reloads_ok >= 2; }));
  EXPECT_EQ(server->counters().policy_reloads_ok, 2u) << "a change of another file reloaded the policy";
}

// Kubernetes mounts a ConfigMap as policy.json -> ..data/policy.json and swaps ..data
// (a symlink to a dated folder) by renaming a new link over it: no event names policy.json.
TEST_F(ProxyTest, APolicyFileBehindASymlinkIsReloadedWhenTheLinkIsSwapped) {
  namespace fs = std::filesystem;
  const auto v1 = dir.path() / "v1";
  const auto v2 = dir.path() / "v2";
  fs::create_directories(v1);
  fs::create_directories(v2);
  const auto resolve = std::string(R"("resolve": {"upstream.test": ["127.0.0.1"], "later.test": ["127.0.0.1"]})");
  std::ofstream(v1 / "policy.json") << base_policy(resolve);
  std::ofstream(v2 / "policy.json") << base_policy(R"("allow": ["later.test"], )" + resolve);
  fs::create_directory_symlink("v1", dir.path() / "..data");
  const auto link = dir.path() / "linked.json";
  fs::create_symlink("..data/policy.json", link);

  configure = [&](proxy::ProxyOptions& o) {
    o.policy_file = link;
    o.watch_policy_file = true;
  };
  start_proxy(base_policy(resolve));  // writes policy.json too, which this server does not read
  const auto later = "http://later.test:" + std::to_string(upstream.port()) + "/";
  EXPECT_EQ(proxy_get(port, later).status, 403);
  fs::create_directory_symlink("v2", dir.path() / "..data_tmp");
  fs::rename(dir.path() / "..data_tmp", dir.path() / "..data");
  bool reloaded = false;
  for (int i = 0; i < 300 && !reloaded; ++i) {
    reloaded = server->counters().policy_reloads_ok == 1;
    if (!reloaded) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(reloaded);
  EXPECT_EQ(proxy_get(port, later).status, 200);
}

TEST_F(ProxyTest, SighupReloadsWhenAsked) {
  configure = [](proxy::ProxyOptions& o) { o.reload_on_sighup = true; };
  start_proxy(base_policy(R"("resolve": {"upstream.test": ["127.0.0.1"], "later.test": ["127.0.0.1"]})"));
  dir.write("policy.json", base_policy(R"("allow": ["upstream.test", "later.test"],
      "resolve": {"upstream.test": ["127.0.0.1"], "later.test": ["127.0.0.1"]})"));
  ASSERT_EQ(::kill(::getpid(), SIGHUP), 0);
  bool reloaded = false;
  for (int i = 0; i < 300 && !reloaded; ++i) {
    reloaded = server->counters().policy_reloads_ok == 1;
    if (!reloaded) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(reloaded);
  EXPECT_EQ(proxy_get(port, "http://later.test:" + std::to_string(upstream.port()) + "/").status, 200);
}

}  // namespace
}  // namespace netbox::test

namespace netbox::test {
namespace {

// Keys the proxy cannot apply (inspect without a CA loaded) must never be half applied: a
// reload that brings them in is refused, and the old policy keeps deciding.
TEST_F(ProxyTest, AReloadBringingInKeysTheProxyCannotApplyIsRefused) {
  start_proxy(base_policy());
  dir.write("policy.json", base_policy(R"("inspect": ["upstream.test"],
      "rules": [{"host": "upstream.test", "methods": ["HEAD"], "action": "allow"}],
      "resolve": {"upstream.test": ["127.0.0.1"]})"));
  EXPECT_FALSE(server->reload_policy());
  EXPECT_EQ(proxy_get(port, upstream_url("/")).status, 200) << "the old policy still decides";
  auto ev = events();
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev.back().kind, "policy_reload_failed");
  EXPECT_NE(ev.back().message.find("inspect: TLS inspection needs the netbox CA"), std::string::npos)
      << ev.back().message;
  EXPECT_NE(ev.back().message.find("--ca-dir"), std::string::npos) << ev.back().message;
}

}  // namespace
}  // namespace netbox::test
