// `netbox proxy --export`: a bad value exits 2 naming the flag and the value, before
// anything listens; a JSONL export is created like the audit store and, moved away by
// logrotate, is created again on SIGHUP while the proxy goes on.
#include "support/background_process.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/upstream_server.hpp"

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <csignal>
#include <fstream>
#include <string>
#include <thread>

namespace netbox::test {
namespace {

using ::testing::HasSubstr;

std::size_t lines_of(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) n += !line.empty();
  return n;
}

bool eventually(const std::function<bool()>& pred) {
  for (int i = 0; i < 800; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return false;
}

class ExportFlagsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    policy = dir.write("policy.json", R"({"version": 1, "allow": ["upstream.test"], "ports": [)" +
                                          std::to_string(upstream.port()) + R"(],
        "internal": {"allow": ["127.0.0.1/32"]}, "resolve": {"upstream.test": ["127.0.0.1"]}})");
  }
  RunResult refused(const std::string& value) {
    const auto r = run(proxy_command(policy, free_port(), dir.path() / "audit.db", {"--export", value}),
                              std::chrono::seconds(20));
    EXPECT_EQ(r.exit_code, 2) << value << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("--export")) << value;
    EXPECT_THAT(r.err, HasSubstr(value)) << value;
    return r;
  }
  int get(unsigned short port, const std::string& path) const {
    const auto r = run({"curl", "-sS", "--max-time", "20", "-o", "/dev/null", "-w", "%{http_code}", "-x",
                        "http://127.0.0.1:" + std::to_string(port),
                        "http://upstream.test:" + std::to_string(upstream.port()) + path});
    return std::atoi(r.out.c_str());
  }

  TempDir dir;
  UpstreamServer upstream;
  std::filesystem::path policy;
};

TEST_F(ExportFlagsTest, BadValuesExitTwoNamingTheFlagAndTheValue) {
  refused("ftp://127.0.0.1:21");
  EXPECT_THAT(refused("ocsf-jsonl:").err, HasSubstr("no path"));
  refused("otlp-http://127.0.0.1");
  refused("otlp-http://127.0.0.1:99999");
  refused("otlp-http://:4318");
  EXPECT_THAT(refused("ocsf-jsonl:" + (dir.path() / "no-such-folder" / "x.jsonl").string()).err,
              HasSubstr("No such file or directory"));
  // A folder others may write into is refused as the audit store's is.
  const auto open_folder = dir.path() / "open";
  std::filesystem::create_directory(open_folder);
  ::chmod(open_folder.c_str(), 0777);
  refused("ocsf-jsonl:" + (open_folder / "x.jsonl").string());
  // A symbolic link where the file should be.
  std::filesystem::create_symlink("/etc/passwd", dir.path() / "link.jsonl");
  refused("ocsf-jsonl:" + (dir.path() / "link.jsonl").string());
}

TEST_F(ExportFlagsTest, TheFileIsPrivateAndSighupReopensItAfterLogrotateMovedIt) {
  const auto port = free_port();
  const auto file = dir.path() / "export.jsonl";
  ::umask(0);  // the mode is netbox's, not the umask's
  BackgroundProcess proxy(proxy_command(policy, port, dir.path() / "audit.db", {"--export", "ocsf-jsonl:" + file.string()}),
                          dir.path() / "proxy.log");
  ::umask(022);
  ASSERT_TRUE(wait_for_port(port)) << proxy.log();
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0) << "created at start";
  EXPECT_EQ(st.st_mode & 0077, 0u) << std::oct << st.st_mode;

  EXPECT_EQ(get(port, "/before"), 200);
  ASSERT_TRUE(eventually([&] { return lines_of(file) >= 1; }));
  std::filesystem::rename(file, dir.path() / "export.jsonl.1");
  ::kill(proxy.pid(), SIGHUP);
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(file); })) << proxy.log();
  EXPECT_EQ(get(port, "/after"), 200);
  ASSERT_TRUE(eventually([&] { return lines_of(file) >= 1; })) << proxy.log();
  EXPECT_EQ(proxy.stop(SIGTERM), 0) << proxy.log();
  EXPECT_EQ(lines_of(dir.path() / "export.jsonl.1"), 1u);
  EXPECT_EQ(lines_of(file), 1u);
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0077, 0u) << std::oct << st.st_mode;
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(nlohmann::json::parse(line)["unmapped"]["netbox"]["path"], "/after");
}

// The receiver down: every request is answered, and /metrics counts what was lost.
TEST_F(ExportFlagsTest, WithTheReceiverDownRequestsAreAnsweredAndMetricsCountTheDrops) {
  const auto port = free_port(), admin = free_port();
  const auto sink = "otlp-http://127.0.0.1:" + std::to_string(free_port());  // nothing listens there
  BackgroundProcess proxy(proxy_command(policy, port, dir.path() / "audit.db",
                                        {"--export", sink, "--admin", "127.0.0.1:" + std::to_string(admin),
                                         "--admin-insecure"}),
                          dir.path() / "proxy.log");
  ASSERT_TRUE(wait_for_port(port)) << proxy.log();
  ASSERT_TRUE(wait_for_port(admin)) << proxy.log();
  for (int i = 0; i < 10; ++i) EXPECT_EQ(get(port, "/n" + std::to_string(i)), 200);
  const std::string series = "netbox_export_dropped_total{sink=\"" + sink + "\"} ";
  std::string metrics;
  // Four attempts with backoff (0.1 + 0.2 + 0.4 s), then the batch is dropped and counted.
  EXPECT_TRUE(eventually([&] {
    metrics = run({"curl", "-sS", "--max-time", "10", "http://127.0.0.1:" + std::to_string(admin) + "/metrics"}).out;
    const auto at = metrics.find(series);
    return at != std::string::npos && std::atof(metrics.c_str() + at + series.size()) >= 10;
  })) << metrics;
  EXPECT_EQ(get(port, "/after"), 200);
  EXPECT_EQ(proxy.stop(SIGTERM), 0) << proxy.log();
  EXPECT_THAT(proxy.log(), HasSubstr("cannot connect"));
}

}  // namespace
}  // namespace netbox::test
