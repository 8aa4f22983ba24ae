// Issue 22 item 11: a credential's secret lives in pages of its own that a fork or clone
// sees zeroed (netbox-init is cloned from the launcher after the secrets are read), and
// that no core file holds.
#include "netbox/proxy/credential_secret.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace netbox::proxy {
namespace {

constexpr const char* kValue = "sk-unit-the-clone-must-not-hold-this-9f2c";

// 0: the forked child found the secret's bytes zeroed; 1: it found the secret.
int child_sees(const Secret& s) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const auto v = s.reveal();  // same address, the child's copy of the page
    bool zero = true;
    for (char c : v) zero = zero && c == '\0';
    ::_exit(zero ? 0 : 1);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(SecretPages, AForkSeesTheSecretZeroedAndTheOwnerKeepsIt) {
  const Secret s{std::string(kValue)};
  const Secret copy = s;
  EXPECT_EQ(child_sees(s), 0);
  EXPECT_EQ(child_sees(copy), 0);
  EXPECT_EQ(s.reveal(), kValue);
  EXPECT_EQ(copy.reveal(), kValue);
}

TEST(SecretPages, ThePagesAreMarkedDontDumpAndWipeOnFork) {
  const Secret s{std::string(kValue)};
  const auto at = reinterpret_cast<std::uintptr_t>(s.reveal().data());
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in_mapping = false, found = false;
  std::string flags;
  while (std::getline(smaps, line)) {
    unsigned long from = 0, to = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &from, &to) == 2) {
      in_mapping = at >= from && at < to;
      found = found || in_mapping;
      continue;
    }
    if (in_mapping && line.starts_with("VmFlags:")) flags = line + " ";
  }
  ASSERT_TRUE(found);
  EXPECT_NE(flags.find(" dd "), std::string::npos) << flags << ": no dd (MADV_DONTDUMP)";
  EXPECT_NE(flags.find(" wf "), std::string::npos) << flags << ": no wf (MADV_WIPEONFORK)";
}

TEST(SecretPages, AMovedSecretLeavesAnEmptyOne) {
  Secret s{std::string(kValue)};
  Secret moved = std::move(s);
  EXPECT_TRUE(s.empty());  // NOLINT(bugprone-use-after-move): what a move leaves is the point
  EXPECT_EQ(moved.reveal(), kValue);
  EXPECT_TRUE(Secret{std::string()}.empty());
}

}  // namespace
}  // namespace netbox::proxy
