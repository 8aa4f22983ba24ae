// Scope `policy` of netbox launch --ask: the host is added to the file's allow list with
// the rest of the text (comments, layout) kept, and nothing that would not load replaces it.
#include "netbox/policy/allow_addition.hpp"
#include "netbox/policy/load.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

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

}  // namespace
}  // namespace netbox::policy
