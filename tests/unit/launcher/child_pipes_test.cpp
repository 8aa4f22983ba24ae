// The launcher <-> confined child protocol over real pipes and a real fork: each message
// arrives as sent, and a side that is gone reads as gone (never as a go-ahead).
#include "netbox/launcher/child_pipes.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

namespace netbox::launcher {
namespace {

// Forks a child that plays the init's side with `child_side` (its exit status: 0 when
// every message it expected arrived), and returns its status once the launcher's side ran.
template <typename Child, typename Launcher>
int play(Child child_side, Launcher launcher_side) {
  ChildPipes pipes = ChildPipes::open();
  const pid_t pid = ::fork();
  if (pid == 0) {
    pipes.keep_child_ends();
    _exit(child_side(pipes));
  }
  pipes.keep_launcher_ends();
  launcher_side(pipes);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

TEST(ChildPipes, EveryMessageArrivesInOrder) {
  const int rc = play(
      [](ChildPipes& p) {
        const auto ports = p.read_ports();
        if (!ports || ports->http != 3128 || ports->socks != 1080 || ports->capture != 40001) return 1;
        if (!p.read_release()) return 2;
        p.reply_ready();
        ChildPipes::exec_failed(p.exec_fd(), ENOENT, "exec");
        p.report_workdir_bytes(4096);
        return 0;
      },
      [](ChildPipes& p) {
        ASSERT_TRUE(p.send_ports({3128, 1080, 40001}));
        ASSERT_TRUE(p.send_release());
        EXPECT_TRUE(p.read_setup_reply().ready);
        const auto failure = p.read_exec_failure();
        ASSERT_TRUE(failure);
        EXPECT_STREQ(failure->step, "exec");
        EXPECT_EQ(failure->err, ENOENT);
        EXPECT_EQ(p.read_workdir_bytes(), 4096u);
      });
  EXPECT_EQ(rc, 0);
}

TEST(ChildPipes, ASetupFailureCarriesItsReasonAndASuccessfulExecReadsAsNothing) {
  const int rc = play(
      [](ChildPipes& p) {
        if (!p.read_ports() || !p.read_release()) return 1;
        p.reply_failed("mount /proc: Operation not permitted");
        return 0;  // the exec pipe closes at exit, as a successful exec closes it
      },
      [](ChildPipes& p) {
        ASSERT_TRUE(p.send_ports({}));
        ASSERT_TRUE(p.send_release());
        const SetupReply reply = p.read_setup_reply();
        EXPECT_FALSE(reply.ready);
        EXPECT_EQ(reply.error, "mount /proc: Operation not permitted");
        EXPECT_FALSE(p.read_exec_failure());
        EXPECT_FALSE(p.read_workdir_bytes()) << "nothing counted";
      });
  EXPECT_EQ(rc, 0);
}

TEST(ChildPipes, ALauncherThatGaveUpIsNeverReadAsAGoAhead) {
  const int rc = play(
      [](ChildPipes& p) {
        if (p.read_ports()) return 1;     // the launcher closed its end before sending them
        if (p.read_release()) return 2;
        return 0;
      },
      [](ChildPipes& p) { p = ChildPipes::open(); });  // drops (closes) the launcher's ends
  EXPECT_EQ(rc, 0);
}

TEST(ChildPipes, AChildThatDiedSaysNeitherReadyNorExecd) {
  const int rc = play([](ChildPipes&) { return 0; },
                      [](ChildPipes& p) {
                        const SetupReply reply = p.read_setup_reply();
                        EXPECT_FALSE(reply.ready);
                        EXPECT_EQ(reply.error, "");
                      });
  EXPECT_EQ(rc, 0);
}

TEST(ChildPipes, AHalfWrittenExecFailureIsAFailureWithoutAStep) {
  const int rc = play(
      [](ChildPipes& p) {
        const char partial[3] = {1, 2, 3};
        return ::write(p.exec_fd(), partial, sizeof partial) == 3 ? 0 : 1;
      },
      [](ChildPipes& p) {
        const auto failure = p.read_exec_failure();
        ASSERT_TRUE(failure) << "a truncated report is not an exec";
        EXPECT_STREQ(failure->step, "");
      });
  EXPECT_EQ(rc, 0);
}

}  // namespace
}  // namespace netbox::launcher
