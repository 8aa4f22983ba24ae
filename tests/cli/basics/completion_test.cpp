// The shipped bash completion (packaging/completions/netbox.bash) in a real bash, with the
// built netbox first on PATH: what a user gets on TAB. Everything it offers is read from
// netbox itself, so these cases also hold it to subcommands and flags added later.
#include "support/process.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

using netbox::test::run;

namespace {

// The words bash would offer for `line` (the cursor at its end).
std::vector<std::string> complete(const std::string& line) {
  const auto script = netbox::test::source_dir() / "packaging/completions/netbox.bash";
  const std::string program = "source '" + script.string() + "'\n" +
                              "read -ra COMP_WORDS <<<\"$LINE\"\n"
                              "[[ $LINE == *' ' ]] && COMP_WORDS+=('')\n"
                              "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
                              "_netbox\n"
                              "printf '%s\\n' \"${COMPREPLY[@]}\"\n";
  const auto bin = netbox::test::netbox_binary().parent_path().string();
  auto r = run({"env", "PATH=" + bin + ":/usr/bin:/bin", "LINE=" + line, "bash", "--norc", "-c", program});
  EXPECT_EQ(r.exit_code, 0) << line << "\n" << r.err;
  std::vector<std::string> words;
  std::istringstream in(r.out);
  for (std::string w; std::getline(in, w);)
    if (!w.empty()) words.push_back(w);
  std::sort(words.begin(), words.end());
  return words;
}

bool has(const std::vector<std::string>& words, const std::string& w) {
  return std::find(words.begin(), words.end(), w) != words.end();
}

std::string joined(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += w + " ";
  return s;
}

}  // namespace

TEST(Completion, OffersEverySubcommandTheHelpLists) {
  const auto top = complete("netbox ");
  for (const char* sub : {"proxy", "launch", "audit", "policy", "gc", "ca", "version", "help"})
    EXPECT_TRUE(has(top, sub)) << sub << " missing from: " << joined(top);
  EXPECT_TRUE(has(complete("netbox audit "), "summary")) << joined(complete("netbox audit "));
  EXPECT_EQ(complete("netbox policy ch"), std::vector<std::string>{"check"});
  EXPECT_EQ(complete("netbox ca s"), std::vector<std::string>{"show"});
  EXPECT_TRUE(has(complete("netbox help "), "launch")) << joined(complete("netbox help "));
}

TEST(Completion, OffersTheFlagsOfTheSubcommandOnTheLine) {
  EXPECT_EQ(complete("netbox launch --pol"), std::vector<std::string>{"--policy"});
  EXPECT_EQ(complete("netbox launch --policy p.json --tmp-size 1G --pre"), std::vector<std::string>{"--preset"});
  const auto summary = complete("netbox audit summary --");
  EXPECT_TRUE(has(summary, "--since")) << joined(summary);
  EXPECT_FALSE(has(complete("netbox audit --"), "--preset")) << "a flag of another subcommand";
}

TEST(Completion, OffersAFlagsValuesWhereTheyAreAFixedSet) {
  EXPECT_EQ(complete("netbox audit --format "), (std::vector<std::string>{"csv", "json", "table"}));
  EXPECT_EQ(complete("netbox audit --decision d"), std::vector<std::string>{"deny"});
  EXPECT_EQ(complete("netbox launch --preset c"), (std::vector<std::string>{"claude", "codex"}));
  EXPECT_EQ(complete("netbox launch --network p"), std::vector<std::string>{"proxy-vars"});
  EXPECT_EQ(complete("netbox proxy --log-format "), (std::vector<std::string>{"json", "text"}));
}

TEST(Completion, OffersTheProfilesOfThePolicyOnTheLine) {
  netbox::test::TempDir dir;
  const auto policy = dir.write("policy.json", R"({"version": 1, "allow": ["a.example"],
    "agents": {"builder": {"allow": ["b.example"]}, "browser": {}, "tester": {}}})");
  EXPECT_EQ(complete("netbox launch --policy " + policy.string() + " --profile b"),
            (std::vector<std::string>{"browser", "builder"}));
  EXPECT_EQ(complete("netbox policy check " + policy.string() + " --agent t"), std::vector<std::string>{"tester"});
  EXPECT_TRUE(complete("netbox launch --policy " + (dir.path() / "missing.json").string() + " --profile b").empty());
  const auto none = dir.write("none.json", R"({"version": 1, "allow": ["a.example"]})");
  EXPECT_TRUE(complete("netbox launch --policy " + none.string() + " --profile ").empty())
      << joined(complete("netbox launch --policy " + none.string() + " --profile "));
}

TEST(Completion, CompletesTheAgentsCommandAfterTheDoubleDash) {
  EXPECT_TRUE(has(complete("netbox launch --policy p.json -- ech"), "echo"));
  EXPECT_FALSE(has(complete("netbox launch -- --pol"), "--policy")) << "netbox's flags after --";
}
