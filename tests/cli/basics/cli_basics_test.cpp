// The CLI contract every subcommand shares: --help, --version, usage errors exit 2.
#include "support/process.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

using netbox::test::run_netbox;

TEST(Cli, VersionPrintsNameAndVersion) {
  auto r = run_netbox({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("netbox 0."), std::string::npos) << r.out;
}

TEST(Cli, VersionSubcommandPrintsVersionAndCommit) {
  auto r = run_netbox({"version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("netbox 0.", 0), 0U) << r.out;
  EXPECT_NE(r.out.find("(commit "), std::string::npos) << r.out;
  EXPECT_EQ(r.out, run_netbox({"--version"}).out);
}

TEST(Cli, HelpListsEverySubcommand) {
  auto r = run_netbox({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* sub : {"proxy", "launch", "audit", "policy", "gc", "version"})
    EXPECT_NE(r.out.find(sub), std::string::npos) << "missing " << sub << " in\n" << r.out;
}

TEST(Cli, UnknownFlagExitsTwoWithOneLineReasonAndPointerToHelp) {
  auto r = run_netbox({"--frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--frobnicate"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--help"), std::string::npos) << r.err;
}

TEST(Cli, NoSubcommandIsAUsageError) {
  auto r = run_netbox({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--help"), std::string::npos) << r.err;
}

TEST(Cli, GcWithoutRootExitsOneSayingSo) {
  if (::geteuid() != 0) GTEST_SKIP() << "drops to nobody with setpriv, which needs root; CI runs as root";
  auto r = netbox::test::run({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              netbox::test::netbox_binary().string(), "gc"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("must run as root"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "") << "it must not claim there is nothing to remove";
}

TEST(Cli, AUsageErrorInASubcommandNamesItAndItsHelp) {
  auto r = run_netbox({"launch", "--frobnicate", "--", "true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("netbox launch: ", 0), 0U) << r.err;
  EXPECT_NE(r.err.find("Run 'netbox launch --help'"), std::string::npos) << r.err;
  auto nested = run_netbox({"policy", "check", "--frobnicate", "x.json"});
  EXPECT_EQ(nested.exit_code, 2);
  EXPECT_NE(nested.err.find("Run 'netbox policy check --help'"), std::string::npos) << nested.err;
}

// A value refused after parsing (by the subcommand's own checks, not by CLI11) is reported
// the same way in every subcommand: its name, the flag and value, its --help, exit 2.
TEST(Cli, EverySubcommandReportsABadValueTheSameWay) {
  struct Case {
    std::vector<std::string> args;
    std::string command;
    std::string names;
  };
  const std::vector<Case> cases = {
      {{"launch", "--timeout", "5x", "--", "true"}, "netbox launch", "--timeout '5x'"},
      {{"launch", "--kill-grace", "soon", "--", "true"}, "netbox launch", "--kill-grace 'soon'"},
      {{"audit", "--decision", "maybe", "--db", "/nonexistent.db"}, "netbox audit", "--decision 'maybe'"},
      {{"audit", "summary", "--limit", "-1"}, "netbox audit summary", "--limit -1"},
      {{"audit", "prune", "--older-than", "ages"}, "netbox audit prune", "--older-than"},
      {{"policy", "check", (netbox::test::source_dir() / "packaging/policy.json").string(), "--host", "a..b"},
       "netbox policy check",
       "--host 'a..b'"},
      {{"proxy", "--policy", "p.json", "--audit-queue", "-1"}, "netbox proxy", "--audit-queue: '-1' is negative"},
      {{"proxy", "--policy", "p.json", "--listen", "localhost:80"}, "netbox proxy", "--listen 'localhost:80'"},
  };
  for (const auto& c : cases) {
    auto r = run_netbox(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.names << "\n" << r.err;
    EXPECT_EQ(r.err.rfind(c.command + ": " + c.names, 0), 0U) << r.err;
    EXPECT_NE(r.err.find("\nRun '" + c.command + " --help' for usage.\n"), std::string::npos) << r.err;
  }
}
