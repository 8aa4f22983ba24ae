// The CLI contract every subcommand shares: --help, --version, usage errors exit 2.
#include "support/process.hpp"
#include "support/temp_dir.hpp"

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
      {{"launch", "--timeout", "5x", "--", "true"}, "netbox launch", "--timeout: '5x' is not a duration"},
      {{"launch", "--kill-grace", "soon", "--", "true"}, "netbox launch", "--kill-grace: 'soon' is not a duration"},
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

// CLI11's "The following argument was not expected" said plainly: the unknown option by
// name, a near miss suggested, an unknown subcommand with the list of the real ones.
TEST(Cli, AnUnknownOptionOrSubcommandIsNamedPlainly) {
  auto typo = run_netbox({"launch", "--polcy", "p.json", "--", "true"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_EQ(typo.err.rfind("netbox launch: unknown option '--polcy' (did you mean --policy?)\n", 0), 0U) << typo.err;
  auto unknown = run_netbox({"audit", "--frobnicate"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_EQ(unknown.err.rfind("netbox audit: unknown option '--frobnicate'\n", 0), 0U) << unknown.err;
  auto sub = run_netbox({"lanch", "--", "true"});
  EXPECT_EQ(sub.exit_code, 2);
  EXPECT_EQ(sub.err.rfind("netbox: unknown subcommand 'lanch' (did you mean launch?); the subcommands are proxy, ", 0),
            0U)
      << sub.err;
}

TEST(Cli, HelpSubcommandPrintsTheUsageOfWhatItNames) {
  auto top = run_netbox({"help"});
  EXPECT_EQ(top.exit_code, 0) << top.err;
  EXPECT_EQ(top.out, run_netbox({"--help"}).out);
  auto launch = run_netbox({"help", "launch"});
  EXPECT_EQ(launch.exit_code, 0) << launch.err;
  EXPECT_EQ(launch.out, run_netbox({"launch", "--help"}).out);
  auto nested = run_netbox({"help", "audit", "prune"});
  EXPECT_EQ(nested.exit_code, 0) << nested.err;
  EXPECT_NE(nested.out.find("--older-than"), std::string::npos) << nested.out;
  auto none = run_netbox({"help", "lanch"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("no subcommand 'lanch' (did you mean launch?)"), std::string::npos) << none.err;
}

// Every flag that takes a length of time reads the one grammar (policy/duration.hpp): a
// compound duration passes each, and each refuses a bad one with the same reason.
TEST(Cli, EveryDurationFlagTakesTheSameGrammar) {
  const std::vector<std::vector<std::string>> flags = {
      {"launch", "--explain", "--timeout", "DUR", "--", "true"},
      {"launch", "--explain", "--kill-grace", "DUR", "--", "true"},
      {"launch", "--explain", "--rlimit-cpu", "DUR", "--", "true"},
      {"audit", "--db", "/nonexistent/audit.db", "--since", "DUR"},
      {"audit", "prune", "--db", "/nonexistent/audit.db", "--older-than", "DUR"},
      {"proxy", "--config", "/nonexistent.json", "--policy", "/nonexistent.json", "--audit-retention", "DUR"},
      {"proxy", "--config", "/nonexistent.json", "--policy", "/nonexistent.json", "--audit-shutdown-wait", "DUR"},
  };
  const auto with = [](std::vector<std::string> args, const std::string& value) {
    for (auto& a : args)
      if (a == "DUR") a = value;
    return args;
  };
  for (const auto& args : flags) {
    const std::string flag = args[args.size() - 2] == "--" ? args[args.size() - 4] : args[args.size() - 2];
    auto bad = run_netbox(with(args, "1h2h"));
    EXPECT_EQ(bad.exit_code, 2) << flag << "\n" << bad.err;
    EXPECT_NE(bad.err.find("'1h2h' is not a"), std::string::npos) << flag << "\n" << bad.err;
    EXPECT_NE(bad.err.find("the unit h is given twice"), std::string::npos) << flag << "\n" << bad.err;
    // "1h30m" parses: whatever fails next (no store, no policy) is not the duration.
    auto good = run_netbox(with(args, "1h30m"));
    EXPECT_EQ(good.err.find("1h30m"), std::string::npos) << flag << "\n" << good.err;
  }
}

// Every shipped preset loads (its launch keys and its policy, with its includes).
TEST(Cli, EveryPresetLoads) {
  netbox::test::TempDir work;
  for (const char* preset : {"claude", "codex", "aider", "gemini"}) {
    auto r = run_netbox({"launch", "--preset", preset, "--explain", "--workdir", work.path().string(), "--", preset});
    EXPECT_EQ(r.exit_code, 0) << preset << "\n" << r.err;
    EXPECT_NE(r.out.find(std::string("policy preset ") + preset), std::string::npos) << r.out;
  }
}
