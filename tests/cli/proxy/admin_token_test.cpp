// `netbox proxy --admin` serves the audit (/api/requests) and the metrics (agents, hosts):
// without --admin-token-file it refuses to start (exit 2, naming --admin-token-file and
// --admin-insecure) unless --admin-insecure asks for an open endpoint; with a token the
// API answers only to it (issue 22, item 17).
#include "support/background_process.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <string>

namespace netbox::test {
namespace {

class AdminTokenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    policy = dir.write("policy.json", R"({"version": 1, "allow": ["example.test"]})");
    ::chmod(policy.c_str(), 0644);
  }
  std::vector<std::string> command(std::vector<std::string> extra) const {
    std::vector<std::string> args{netbox_binary().string(), "proxy", "--policy", policy.string(),
                                  "--listen", "127.0.0.1:" + std::to_string(proxy_port),
                                  "--audit-db", (dir.path() / "audit.db").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  // The status of GET path on the admin endpoint, with an optional bearer token.
  std::string status(const std::string& path, const std::string& token = "") const {
    std::vector<std::string> args{"curl", "-sS", "--max-time", "20", "-o", "/dev/null", "-w", "%{http_code}"};
    if (!token.empty()) args.insert(args.end(), {"-H", "Authorization: Bearer " + token});
    args.push_back("http://127.0.0.1:" + std::to_string(admin_port) + path);
    return run(args).out;
  }

  TempDir dir;
  std::filesystem::path policy;
  unsigned short proxy_port = free_port();
  unsigned short admin_port = free_port();
};

TEST_F(AdminTokenTest, ANewcomersAdminWithoutATokenIsRefusedWithWhatToDo) {
  auto args = command({"--admin", "127.0.0.1:" + std::to_string(admin_port)});
  args.erase(args.begin());
  auto r = run_netbox(args, std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--admin-token-file FILE"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--admin-insecure"), std::string::npos) << r.err;
}

TEST_F(AdminTokenTest, WithATokenTheAuditIsServedOnlyToIt) {
  const auto token = dir.write("admin.token", "s3cret-admin-token\n");
  ::chmod(token.c_str(), 0600);
  BackgroundProcess proxy(command({"--admin", "127.0.0.1:" + std::to_string(admin_port), "--admin-token-file",
                                   token.string()}),
                          dir.path() / "proxy.log");
  ASSERT_TRUE(wait_for_port(admin_port)) << proxy.log();
  EXPECT_EQ(status("/api/requests"), "401");
  EXPECT_EQ(status("/metrics"), "401");
  EXPECT_EQ(status("/api/requests", "s3cret-admin-token"), "200");
  EXPECT_EQ(status("/healthz"), "200");  // probes stay open
}

TEST_F(AdminTokenTest, AdminInsecureServesTheAuditToAnyone) {
  BackgroundProcess proxy(command({"--admin", "127.0.0.1:" + std::to_string(admin_port), "--admin-insecure"}),
                          dir.path() / "proxy.log");
  ASSERT_TRUE(wait_for_port(admin_port)) << proxy.log();
  EXPECT_EQ(status("/api/requests"), "200");
}

TEST_F(AdminTokenTest, AdminInsecureWithATokenContradicts) {
  auto args = command({"--admin", "127.0.0.1:" + std::to_string(admin_port), "--admin-insecure",
                       "--admin-token-file", "/nonexistent"});
  args.erase(args.begin());
  auto r = run_netbox(args, std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("contradict"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace netbox::test
