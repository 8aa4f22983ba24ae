// libpq is loaded only for a postgresql:// store (audit/libpq/libpq.cpp): a launch, which
// writes to SQLite, maps none of its 18 libraries (their relocations were a seventh of a
// launch's CPU), and a host without libpq still runs netbox, refusing a PostgreSQL store
// with a message that names the package, as a configuration error.
#include "launch_fixture.hpp"

#include <gmock/gmock.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace netbox::launch_test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

std::string maps_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(LaunchLibpq, ALaunchMapsNoLibpq) {
  NETBOX_REQUIRE_ROOT();
  HostDir host;
  Background launch({test::netbox_binary().string(), "launch", "--audit-db", (host.folder("store") / "a.db").string(),
                     "--", kSh, "-c", "echo ready; exec sleep 30"},
                    host.path(), "launch");
  ASSERT_TRUE(eventually([&] { return launch.out().find("ready") != std::string::npos; })) << launch.err();
  const auto maps = maps_of(launch.pid());
  ::kill(launch.pid(), SIGTERM);
  launch.wait();
  EXPECT_THAT(maps, HasSubstr("libsqlite3"));  // the libraries it links are there to see
  EXPECT_THAT(maps, Not(HasSubstr("libpq"))) << maps;
  EXPECT_THAT(maps, Not(HasSubstr("libkrb5"))) << maps;
}

// libpq.so.5 as ld.so.cache finds it (the file the soname resolves to), or empty.
fs::path installed_libpq() {
  auto r = test::run({"/sbin/ldconfig", "-p"});
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    const auto arrow = line.find("=> ");
    if (line.find("libpq.so.5 ") != std::string::npos && arrow != std::string::npos) {
      std::error_code ec;
      auto real = fs::canonical(line.substr(arrow + 3), ec);
      if (!ec) return real;
    }
  }
  return {};
}

TEST(LaunchLibpq, WithoutLibpqAPostgresqlStoreIsAConfigurationErrorAndTheRestRuns) {
  NETBOX_REQUIRE_ROOT();
  const auto libpq = installed_libpq();
  if (libpq.empty()) GTEST_SKIP() << "no libpq.so.5 in ld.so.cache to hide";
  test::TempDir dir;
  const auto empty = dir.write("empty", "");
  // In a mount namespace of its own, libpq.so.5 is an empty file: what dlopen finds is
  // no library, as on a host where libpq5 is not installed.
  const std::string hide = "mount --bind " + empty.string() + " " + libpq.string() + " && ";
  auto pg = test::run({"unshare", "-m", "--propagation", "private", kSh, "-c",
                       hide + "exec " + test::netbox_binary().string() + " audit --db postgresql://127.0.0.1:1/netbox"});
  EXPECT_EQ(pg.exit_code, 2) << pg.err;
  EXPECT_THAT(pg.err, HasSubstr("--db: a PostgreSQL audit store needs libpq"));
  EXPECT_THAT(pg.err, HasSubstr("libpq5"));
  // Everything else runs there: a launch writing its SQLite store.
  auto ok = test::run({"unshare", "-m", "--propagation", "private", kSh, "-c",
                       hide + "exec " + test::netbox_binary().string() + " launch --quiet --audit-db " +
                           (dir.path() / "a.db").string() + " -- /bin/echo launched"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, "launched\n");
}

}  // namespace
}  // namespace netbox::launch_test
