// Scope `policy` of netbox launch --ask: the host is added to the file's allow list with
// the rest of the text (comments, layout) kept, and nothing that would not load replaces it.
#include "netbox/policy/allow_addition.hpp"
#include "netbox/policy/load.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace netbox::policy {
namespace {

namespace fs = std::filesystem;

struct PolicyFile {
  fs::path dir = fs::temp_directory_path() / ("nbx-allow-" + std::to_string(::getpid()) + "-" +
                                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::path file = dir / "policy.json";
  explicit PolicyFile(const std::string& text) {
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms(0755));
    std::ofstream(file) << text;
    fs::permissions(file, fs::perms(0644));
  }
  ~PolicyFile() { fs::remove_all(dir); }
  std::string text() const {
    std::ifstream in(file);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
};

TEST(AllowAddition, TheEntryGoesFirstAndTheRestIsKept) {
  PolicyFile p("// ours\n{\"version\": 1, \"allow\": [\"a.test\"], /* keep */ \"ports\": [443]}\n");
  add_allow_entry(p.file, "", "b.test:443");
  EXPECT_EQ(p.text(), "// ours\n{\"version\": 1, \"allow\": [\"b.test:443\", \"a.test\"], /* keep */ \"ports\": [443]}\n");
  add_allow_entry(p.file, "", "b.test:443");  // there already: not twice
  EXPECT_EQ(load_policy_file(p.file).base.allow.size(), 2u);
  EXPECT_EQ(fs::status(p.file).permissions(), fs::perms(0644)) << "its mode kept";
}

TEST(AllowAddition, AnAgentsProfileGetsItInItsOwnList) {
  PolicyFile p(R"({"version": 1, "allow": [], "agents": {"ci": {"allow": []}}})");
  add_allow_entry(p.file, "ci", "c.test:80");
  EXPECT_EQ(p.text(), R"({"version": 1, "allow": [], "agents": {"ci": {"allow": ["c.test:80"]}}})");
}

TEST(AllowAddition, NoListOrAResultThatDoesNotLoadLeavesTheFileAsItWas) {
  const std::string text = R"({"version": 1, "ports": [443]})";
  PolicyFile p(text);
  EXPECT_THROW(add_allow_entry(p.file, "", "b.test:443"), std::runtime_error);
  EXPECT_EQ(p.text(), text);
  PolicyFile q(R"({"version": 1, "allow": []})");
  EXPECT_THROW(add_allow_entry(q.file, "", "bad host!:443"), PolicyError);
  EXPECT_EQ(q.text(), R"({"version": 1, "allow": []})");
  EXPECT_FALSE(fs::exists(q.file.string() + ".netbox-new")) << "nothing left beside it";
}

// Two launches sharing a policy file, both answered "add to the policy" at once: processes
// adding entries side by side lose none, and the file always loads (before the folder lock
// they wrote one temporary file together, and one's rename could drop the other's entry).
TEST(AllowAddition, ProcessesAddingAtOnceLoseNoEntry) {
  PolicyFile p("{\"version\": 1, \"allow\": [\"a.test\"], \"ports\": [443]}\n");
  constexpr int kProcesses = 6, kEach = 15;
  std::vector<pid_t> children;
  for (int c = 0; c < kProcesses; ++c) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int failed = 0;
      for (int i = 0; i < kEach; ++i) {
        try {
          add_allow_entry(p.file, "", "h" + std::to_string(c) + "-" + std::to_string(i) + ".test:443");
        } catch (...) {
          ++failed;
        }
      }
      ::_exit(failed == 0 ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (const pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a process's addition failed";
  }
  const auto loaded = load_policy_file(p.file);
  const std::string text = p.text();
  int missing = 0;
  for (int c = 0; c < kProcesses; ++c)
    for (int i = 0; i < kEach; ++i)
      missing += text.find("\"h" + std::to_string(c) + "-" + std::to_string(i) + ".test:443\"") == std::string::npos;
  EXPECT_EQ(missing, 0) << text;
}

}  // namespace
}  // namespace netbox::policy
