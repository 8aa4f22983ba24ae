// `netbox proxy --config FILE`: every flag is a key of the file, a flag on the command
// line wins over its key, and every mistake in the file exits 2 naming the file and key.
#include "support/background_process.hpp"
#include "support/process.hpp"
#include "support/sqlite_query.hpp"
#include "support/temp_dir.hpp"
#include "support/upstream_server.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include <sys/stat.h>
#include <unistd.h>

#include <string>

namespace netbox::test {
namespace {

class ProxyConfigTest : public ::testing::Test {
 protected:
  std::filesystem::path write_policy() const {
    return dir.write("policy.json", R"({"version": 1, "allow": ["upstream.test"], "ports": [)" +
                                        std::to_string(upstream.port()) + R"(], "internal": {"allow": ["127.0.0.1/32"]},
                                        "resolve": {"upstream.test": ["127.0.0.1"]}})");
  }
  // A config file as root would keep it: 0644, not writable by others.
  std::filesystem::path config(const std::string& text) const {
    auto path = dir.write("proxy.json", text);
    ::chmod(path.c_str(), 0644);
    return path;
  }
  RunResult curl_through(unsigned short port) const {
    return run({"curl", "-sS", "--max-time", "20", "-o", "/dev/null", "-w", "%{http_code}", "-x",
                "http://127.0.0.1:" + std::to_string(port), "http://upstream.test:" + std::to_string(upstream.port()) + "/"});
  }
  // Runs `netbox proxy` with a config that must be refused before it starts.
  RunResult refused(const std::string& text, std::vector<std::string> extra = {}) const {
    std::vector<std::string> args{"proxy", "--config", config(text).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_netbox(args, std::chrono::seconds(20));
  }

  TempDir dir;
  UpstreamServer upstream;
};

TEST_F(ProxyConfigTest, EveryValueComesFromTheFileWhenNoFlagGivesIt) {
  const auto port = free_port();
  const auto db = dir.path() / "state" / "audit.db";
  std::filesystem::create_directory(dir.path() / "state");
  ::chmod((dir.path() / "state").c_str(), 0700);
  const auto cfg = config(R"({"policy": ")" + write_policy().string() + R"(", "listen": ["127.0.0.1:)" +
                          std::to_string(port) + R"("], "audit-db": ")" + db.string() +
                          R"(", "threads": 2, "audit-sync": true, "audit-shutdown-wait": 2.5})");
  BackgroundProcess proxy({netbox_binary().string(), "proxy", "--config", cfg.string()}, dir.path() / "proxy.log");
  ASSERT_TRUE(wait_for_port(port)) << proxy.log();
  EXPECT_EQ(curl_through(port).out, "200");
  EXPECT_EQ(proxy.stop(SIGTERM), 0) << proxy.log();
  EXPECT_EQ(query_column(db, "SELECT host || ' ' || decision FROM requests"),
            std::vector<std::string>{"upstream.test allow"});
  EXPECT_NE(proxy.log().find("config=" + cfg.string()), std::string::npos) << "the start line names the file\n"
                                                                            << proxy.log();
}

TEST_F(ProxyConfigTest, AFlagOnTheCommandLineWinsOverItsKey) {
  const auto file_port = free_port();
  const auto flag_port = free_port();
  ASSERT_NE(file_port, flag_port);
  const auto cfg = config(R"({"policy": ")" + write_policy().string() + R"(", "listen": "127.0.0.1:)" +
                          std::to_string(file_port) + R"(", "audit-db": ")" + (dir.path() / "file.db").string() +
                          R"(", "log-format": "json"})");
  const auto flag_db = dir.path() / "flag.db";
  BackgroundProcess proxy({netbox_binary().string(), "proxy", "--config", cfg.string(), "--listen",
                           "127.0.0.1:" + std::to_string(flag_port), "--audit-db", flag_db.string(), "--log-format",
                           "text"},
                          dir.path() / "proxy.log");
  ASSERT_TRUE(wait_for_port(flag_port)) << proxy.log();
  EXPECT_EQ(curl_through(flag_port).out, "200");
  EXPECT_NE(curl_through(file_port).out, "200") << "the file's listen address was used beside the flag's";
  EXPECT_EQ(proxy.stop(SIGTERM), 0) << proxy.log();
  EXPECT_EQ(query_column(flag_db, "SELECT count(*) FROM requests"), std::vector<std::string>{"1"});
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "file.db"));
  EXPECT_EQ(proxy.log().find('{'), std::string::npos) << "--log-format text lost to the file's json\n" << proxy.log();
}

TEST_F(ProxyConfigTest, AMissingConfigFileNamedWithTheFlagExitsTwo) {
  auto r = run_netbox({"proxy", "--config", (dir.path() / "nope.json").string(), "--policy", write_policy().string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("netbox proxy: " + (dir.path() / "nope.json").string() + ": cannot open", 0), 0U) << r.err;
  EXPECT_NE(r.err.find("Run 'netbox proxy --help' for usage."), std::string::npos) << r.err;
}

TEST_F(ProxyConfigTest, EachMistakeInTheFileExitsTwoNamingTheFileAndKey) {
  const auto pol = write_policy().string();
  const auto file = (dir.path() / "proxy.json").string();
  // Each mistake is named at FILE:LINE:COLUMN, where `at` (the first occurrence of that text
  // in the file) stands, as the policy's are; "" for a mistake of the file as a whole.
  struct Case {
    std::string text;
    std::string at;
    std::string message;
  };
  const std::string p = R"({"policy": ")" + pol + R"(", )";
  const std::vector<Case> cases = {
      {p + R"("thread": 2})", R"("thread")", "unknown key 'thread' (did you mean threads?)"},
      {p + R"("threads": "2"})", R"("2")", "key threads: expected a whole number, not \"2\""},
      {p + R"("threads": 2.5})", "2.5", "key threads: expected a whole number, not 2.5"},
      {p + R"("audit-sync": "yes"})", R"("yes")", "key audit-sync: expected true or false"},
      {p + R"("listen": [3128]})", "[3128]", "key listen: expected a string or a non-empty list"},
      {p + R"("policy-file": "x"})", R"("policy-file")", "unknown key 'policy-file'"},
      {p + R"("threads": 1000})", "1000", "key threads: Value 1000 not in range"},
      {p + R"("log-format": "xml"})", R"("xml")", "key log-format: xml not in {text,json}"},
      {p + R"("audit-queue": -1})", "-1", "key audit-queue: "},
      {p + R"("listen": "localhost:80"})", R"("listen")", "key listen 'localhost:80': 'localhost' is not an IP address"},
      {p + R"("dns-server": ["1.1.1.1:53", "dns"]})", R"("dns-server")", "key dns-server 'dns': no port"},
      {p + R"("subnet": "10.0.0.0/99"})", R"("subnet")", "key subnet 10.0.0.0/99: expected a network"},
      {p + R"("audit-retention": "forever"})", R"("forever")", "key audit-retention: 'forever' is not a duration"},
      {p + R"("audit-retention": "1h2h"})", R"("1h2h")", "key audit-retention: '1h2h' is not a duration: the unit h"},
      {p + R"("admin-token-file": "/t"})", R"("admin-token-file")", "key admin-token-file needs --admin"},
      {p + R"("threads": 2, "threads": 3})", R"("threads": 3)", "/threads: key 'threads' appears twice"},
      {p + "\n  // a comment\n  \"thred\": 2}", R"("thred")", "unknown key 'thred'"},
      {R"({"policy": )", "", ":1:12: invalid JSON: "},
      {R"({"listen": "127.0.0.1:0"})", "", "--policy is required (or the key policy in " + file + ")"},
  };
  for (const auto& c : cases) {
    auto r = refused(c.text);
    EXPECT_EQ(r.exit_code, 2) << c.text << "\n" << r.err;
    std::string where = file;
    if (!c.at.empty()) {
      // Looked for after the policy's path, whose random temporary folder can spell "-1".
      const auto at = c.text.find(c.at, c.text.starts_with(p) ? p.size() : 0);
      ASSERT_NE(at, std::string::npos) << c.at;
      const auto newline = c.text.rfind('\n', at);
      const auto line = 1 + std::count(c.text.begin(), c.text.begin() + static_cast<long>(at), '\n');
      const auto column = newline == std::string::npos ? at + 1 : at - newline;
      where += ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
    } else if (c.message.starts_with(":")) {
      where += "";
    } else {
      where = "";
    }
    EXPECT_EQ(r.err.rfind("netbox proxy: " + where + c.message, 0), 0U) << c.text << "\n" << r.err;
    EXPECT_NE(r.err.find("Run 'netbox proxy --help' for usage."), std::string::npos) << r.err;
  }
  auto whole = refused(R"(["--policy", "x"])");
  EXPECT_EQ(whole.err.rfind("netbox proxy: " + file + ":1:1: expected a JSON object", 0), 0U) << whole.err;
}

// Comments are allowed, as in a policy: a key can say why it is set.
TEST_F(ProxyConfigTest, CommentsAreAllowed) {
  auto r = refused("// the proxy's settings\n{\"policy\": \"" + write_policy().string() +
                   "\", /* why: one thread is enough here */ \"threads\": 1,\n \"audit-retention\": \"1h30m\", \"nope\": 1}");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(":3:"), std::string::npos) << "the comments were read, the mistake placed after them\n" << r.err;
  EXPECT_NE(r.err.find("unknown key 'nope'"), std::string::npos) << r.err;
}

TEST_F(ProxyConfigTest, AFlagGivenDoesNotExcuseAWrongKey) {
  // The file is checked whole even where a flag overrides a key, so a mistake in it does
  // not surface later, when the flag is dropped from a unit file.
  auto r = refused(R"({"policy": ")" + write_policy().string() + R"(", "threads": "two"})", {"--threads", "2"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("key threads: expected a whole number"), std::string::npos) << r.err;
}

TEST_F(ProxyConfigTest, AsRootAFileOthersMayWriteIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "the ownership rule applies to root; CI runs as root";
  const auto text = R"({"policy": ")" + write_policy().string() + R"(", "listen": "127.0.0.1:0"})";
  const auto cfg = config(text);
  for (mode_t mode : {0664, 0646}) {
    ::chmod(cfg.c_str(), mode);
    auto r = run_netbox({"proxy", "--config", cfg.string()}, std::chrono::seconds(20));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("netbox proxy: " + cfg.string() + ": mode 0", 0), 0U) << r.err;
    EXPECT_NE(r.err.find(mode == 0664 ? "lets its group change it" : "lets every local user change it"),
              std::string::npos) << r.err;
  }
  ::chmod(cfg.c_str(), 0644);
  ASSERT_EQ(::chown(cfg.c_str(), 65534, 65534), 0);
  auto r = run_netbox({"proxy", "--config", cfg.string()}, std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("netbox proxy: " + cfg.string() + ": owned by uid 65534, not uid 0", 0), 0U) << r.err;
}

TEST_F(ProxyConfigTest, HelpNamesTheConfigFile) {
  auto r = run_netbox({"proxy", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--config"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/etc/netbox/proxy.json"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace netbox::test
