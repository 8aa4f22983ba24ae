// The attribution's readers of /proc (issue 27), on this test's own processes: the socket's
// holder found down a tree of children and within its budget, and an agent-chosen command
// line made printable and bounded.
#include "agents/process_table.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace netbox::proxy {
namespace {

using namespace std::string_literals;

std::uint64_t inode_of(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? st.st_ino : 0;
}

ScanBudget generous() {
  ScanBudget b;
  b.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  return b;
}

TEST(FirstWords, ArgumentsJoinedPrintableAndBounded) {
  EXPECT_EQ(first_words("curl\0-s\0http://x/\0"s), "curl -s http://x/");
  EXPECT_EQ(first_words(""), "");
  // A forged argv[0] with a terminal escape and a newline: shown, not obeyed.
  EXPECT_EQ(first_words("\x1b[2Jinnocent\nline\0-x\0"s), "\\x1b[2Jinnocent\\x0aline -x");
  EXPECT_EQ(first_words("a\0b\0c\0d\0e\0f\0g\0h\0"s), "a b c d e f…");
  const std::string flood(100000, 'A');
  const std::string shown = first_words(flood + "\0next"s);
  EXPECT_EQ(shown, std::string(kArgvBytes, 'A') + "…");
  // A process that blanked its arguments leaves runs of NULs: no empty words.
  EXPECT_EQ(first_words("python3\0\0\0\0"s), "python3");
}

// The socket is found in the child that holds it, not in this process, which closed its copy.
TEST(FindSocketOwner, FindsTheHolderDownTheTreeAndStopsAtItsBudget) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  int ready[2];
  ASSERT_EQ(::pipe2(ready, O_CLOEXEC), 0);
  const std::uint64_t inode = inode_of(pair[1]);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(pair[0]);
    ::close(ready[0]);
    if (::write(ready[1], "x", 1) != 1) ::_exit(1);
    ::pause();
    ::_exit(0);
  }
  ::close(pair[1]);
  ::close(ready[1]);
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  const SocketOwner owner = find_socket_owner(::getpid(), inode, generous());
  EXPECT_EQ(owner.end, ScanEnd::found);
  EXPECT_EQ(owner.pid, child);
  EXPECT_TRUE(holds_socket(child, inode, 1024));
  const auto described = describe_process(child);
  ASSERT_TRUE(described);
  EXPECT_TRUE(described->pid);
  EXPECT_NE(described->exe, "unknown");

  ScanBudget tiny = generous();
  tiny.descriptors = 1;  // this process holds more than one descriptor, read first
  EXPECT_EQ(find_socket_owner(::getpid(), inode, tiny).end, ScanEnd::over_budget);
  EXPECT_EQ(find_socket_owner(::getpid(), inode + 1000000000ull, generous()).end, ScanEnd::not_found);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::close(pair[0]);
  ::close(ready[0]);
}

}  // namespace
}  // namespace netbox::proxy
