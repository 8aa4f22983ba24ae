// The CLI contract every subcommand shares: --help, --version, usage errors exit 2.
#include "support/process.hpp"

#include <gtest/gtest.h>

using netbox::test::run_netbox;

TEST(Cli, VersionPrintsNameAndVersion) {
  auto r = run_netbox({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("netbox 0."), std::string::npos) << r.out;
}

TEST(Cli, HelpListsEverySubcommand) {
  auto r = run_netbox({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* sub : {"proxy", "launch", "audit", "policy", "gc"})
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
