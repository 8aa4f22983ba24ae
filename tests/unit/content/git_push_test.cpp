// Push bodies made by real git: the commands a client sends and the pack
// `git pack-objects` makes for them (what `git push` sends over smart HTTP), read back.
#include "netbox/content/git_push.hpp"

#include "support/process.hpp"
#include "support/git_repo.hpp"
#include "support/hand_pack.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

namespace netbox::content {
namespace {

using test::run;

class GitPushTest : public ::testing::Test {
 protected:
  std::string repo() const { return repo_.path(); }
  std::string git(std::vector<std::string> args, const std::string& input = {}) { return repo_.git(std::move(args), input); }
  // A commit with a message long enough that git deltifies neighbours against each other.
  std::string commit(const std::string& message) { return repo_.commit(message, 4000); }
  std::string rev(const std::string& name) { return repo_.rev(name); }
  static std::string pkt(const std::string& payload) { return test::GitRepo::pkt(payload); }
  std::string body(const std::string& old_id, const std::string& new_id, const std::string& ref,
                   const std::vector<std::string>& pack_flags = {"--thin"}) {
    return repo_.push_body(old_id, new_id, ref, pack_flags);
  }

  GitPush read(const std::string& text) {
    auto r = read_git_push(text);
    if (auto* e = std::get_if<GitPushRefusal>(&r)) {
      ADD_FAILURE() << e->reason;
      return {};
    }
    return std::get<GitPush>(std::move(r));
  }

  std::string refused(const std::string& text) {
    auto r = read_git_push(text);
    EXPECT_TRUE(std::holds_alternative<GitPushRefusal>(r)) << "read";
    return std::holds_alternative<GitPushRefusal>(r) ? std::get<GitPushRefusal>(r).reason : std::string();
  }

  static inline const std::string& kZero = test::GitRepo::kZero;
  test::GitRepo repo_;
  test::TempDir dir_;
};

TEST_F(GitPushTest, AFastForwardIsShownByThePushedCommits) {
  const std::string a = commit("a");
  commit("b");
  commit("c");
  const std::string d = commit("d");
  const GitPush push = read(body(a, d, "refs/heads/agent/x"));
  ASSERT_EQ(push.updates.size(), 1u);
  EXPECT_EQ(push.updates[0].ref, "refs/heads/agent/x");
  EXPECT_EQ(push.updates[0].old_id, a);
  EXPECT_EQ(push.updates[0].new_id, d);
  EXPECT_EQ(push.capabilities, "report-status side-band-64k");
  EXPECT_EQ(push.commits.size(), 3u);  // b, c, d: a is the server's
  EXPECT_TRUE(push.shows_fast_forward(push.updates[0]));
}

TEST_F(GitPushTest, CommitsStoredAsDeltasAreDecoded) {
  const std::string a = commit("a");
  for (int i = 0; i < 8; ++i) commit("similar " + std::to_string(i));
  const std::string head = rev("HEAD");
  // No --thin: every base is in the pack, and with a window git deltifies the near-identical
  // commits against each other (the test checks that it did).
  const std::string text = body(a, head, "refs/heads/agent/x", {"--window=50", "--depth=50"});
  const std::string pack_path = (dir_.path() / "p.pack").string();
  dir_.write("p.pack", text.substr(text.find("PACK")));
  git({"index-pack", pack_path});
  const std::string verify = git({"verify-pack", "-v", pack_path});
  std::size_t deltified = 0;
  for (std::size_t at = verify.find(" commit "); at != std::string::npos; at = verify.find(" commit ", at + 1)) {
    const std::size_t eol = verify.find('\n', at);
    // A deltified object's line ends with its depth and its base's id.
    if (std::count(verify.begin() + static_cast<long>(at), verify.begin() + static_cast<long>(eol), ' ') > 5) ++deltified;
  }
  ASSERT_GT(deltified, 0u) << "git stored no commit as a delta; the test shows nothing\n" << verify;
  const GitPush push = read(text);
  EXPECT_EQ(push.commits.size(), 8u);
  EXPECT_TRUE(push.shows_fast_forward(push.updates[0]));
}

TEST_F(GitPushTest, AForcePushIsNotShownAsAFastForward) {
  const std::string a = commit("a");
  const std::string b = commit("b");
  git({"reset", "-q", "--hard", a});
  const std::string rewritten = commit("b, rewritten");
  const GitPush push = read(body(b, rewritten, "refs/heads/agent/x"));
  EXPECT_FALSE(push.shows_fast_forward(push.updates[0]));
}

// A commit whose `parent` line comes after `committer` is a root commit to git (its
// parse_commit_buffer counts only the `parent` lines right after `tree`; fsck accepts the
// commit). Counting that line would pass a force push of a protected ref as a
// fast-forward from the old tip.
TEST_F(GitPushTest, AParentLineAfterTheOtherHeadersIsNoParent) {
  const std::string old_tip = commit("a");
  const std::string tree = rev("HEAD^{tree}");
  const std::string who = "agent <agent@example.test> 1700000000 +0000\n";
  auto pushed = [&](const std::string& header) {
    const std::string id = git({"hash-object", "-t", "commit", "-w", "--stdin"}, header + "\nrewritten\n");
    const std::string new_id = id.substr(0, id.find('\n'));
    return read(pkt(old_tip + " " + new_id + " refs/heads/main\n") + "0000" +
                git({"pack-objects", "--stdout", "-q"}, new_id + "\n"));
  };
  const GitPush forced = pushed("tree " + tree + "\nauthor " + who + "committer " + who + "parent " + old_tip + "\n");
  ASSERT_EQ(forced.updates.size(), 1u);
  const std::string rewritten = forced.updates[0].new_id;
  EXPECT_EQ(git({"rev-list", "--parents", "-n1", rewritten}), rewritten + "\n") << "a root commit to git";
  EXPECT_FALSE(forced.shows_fast_forward(forced.updates[0]));
  EXPECT_FALSE(forced.commits.contains(rewritten)) << "a commit git reads otherwise is not read";
  // The same line right after `tree` is a parent, to git and to netbox.
  const GitPush child = pushed("tree " + tree + "\nparent " + old_tip + "\nauthor " + who + "committer " + who);
  EXPECT_TRUE(child.shows_fast_forward(child.updates[0]));
}

TEST_F(GitPushTest, ACreationAndADeletionAreSaidSo) {
  commit("a");
  const std::string b = commit("b");
  const GitPush created = read(body(kZero, b, "refs/heads/agent/new"));
  EXPECT_TRUE(created.updates[0].creates());
  EXPECT_TRUE(created.shows_fast_forward(created.updates[0]));
  const GitPush deleted = read(body(b, kZero, "refs/heads/main"));
  EXPECT_TRUE(deleted.updates[0].deletes());
  EXPECT_FALSE(deleted.shows_fast_forward(deleted.updates[0]));
}

TEST_F(GitPushTest, SeveralUpdatesAreAllRead) {
  const std::string a = commit("a");
  const std::string b = commit("b");
  std::string text = pkt(a + " " + b + " refs/heads/agent/x" + std::string(1, '\0') + "report-status\n") +
                     pkt(kZero + " " + b + " refs/heads/main\n") + pkt(a + " " + kZero + " refs/tags/v1\n") + "0000" +
                     git({"pack-objects", "--stdout", "--revs", "-q"}, b + "\n^" + a + "\n");
  const GitPush push = read(text);
  ASSERT_EQ(push.updates.size(), 3u);
  EXPECT_EQ(push.updates[1].ref, "refs/heads/main");
  EXPECT_TRUE(push.updates[2].deletes());
}

TEST_F(GitPushTest, WhatCannotBeReadIsRefused) {
  const std::string a = commit("a");
  const std::string b = commit("b");
  const std::string good = body(a, b, "refs/heads/agent/x");
  std::string flipped = good;
  flipped[flipped.size() - 30] ^= 1;
  EXPECT_FALSE(refused(flipped).empty());
  EXPECT_FALSE(refused(good + "x").empty());  // the checksum is then the wrong 20 bytes
  EXPECT_FALSE(refused(good.substr(0, good.size() - 1)).empty());
  EXPECT_NE(refused(body(a, b, "refs/heads/a..b")).find("not a ref name"), std::string::npos);
  EXPECT_NE(refused(body(a, b, "HEAD")).find("not a ref name"), std::string::npos);
  EXPECT_NE(refused("zzzz").find("pkt-lines"), std::string::npos);
  EXPECT_NE(refused("0000").find("names no ref"), std::string::npos);
  EXPECT_NE(refused(pkt(a + " " + b + " refs/heads/x\n") + "0000").find("no pack"), std::string::npos);
  EXPECT_NE(refused(pkt(a + " " + b.substr(1) + " refs/heads/x\n") + "0000").find("object ids"), std::string::npos);
  EXPECT_NE(refused(pkt(a + " " + kZero + " refs/heads/x\n") + "0000PACK").find("deletions only"), std::string::npos);
  EXPECT_NE(refused(pkt("push-cert" + std::string(1, '\0') + "x\n")).find("signed push"), std::string::npos);
}

// Commands for `updates` ((old id, new id) each, to refs/heads/agent/N) and a flush: a
// push body once the pack is added.
std::string commands(const std::vector<std::pair<std::string, std::string>>& updates) {
  std::string out;
  for (std::size_t i = 0; i < updates.size(); ++i)
    out += test::GitRepo::pkt(updates[i].first + " " + updates[i].second + " refs/heads/agent/" + std::to_string(i) +
                              (i == 0 ? std::string(1, '\0') + "report-status" : "") + "\n");
  return out + "0000";
}

// A chain of `length` commits in `pack`, each naming the one before it `copies` times
// among its parent lines, plus `others` parents no pack holds. The last commit's id.
std::string chain(test::HandPack& pack, int length, int copies, int others, std::string* first = nullptr) {
  std::string last;
  for (int i = 0; i < length; ++i) {
    std::vector<std::string> parents(last.empty() ? 0 : static_cast<std::size_t>(copies), last);
    for (int k = 0; k < others; ++k) parents.push_back(test::sha1_hex("elsewhere " + std::to_string(i) + " " + std::to_string(k)));
    last = pack.add(1, test::HandPack::commit_text(parents));
    if (i == 0 && first) *first = last;
  }
  return last;
}

// `count` old ids that the pack's commits name but none leads to from a chain: parents
// of commits beside it, 100 to a commit. A walk to one of them goes over the whole chain.
std::vector<std::string> elsewhere(test::HandPack& pack, int count) {
  std::vector<std::string> ids;
  for (int i = 0; i < count; ++i) ids.push_back(test::sha1_hex("gone " + std::to_string(i)));
  for (std::size_t at = 0; at < ids.size(); at += 100)
    pack.add(1, test::HandPack::commit_text({ids.begin() + static_cast<long>(at),
                                             ids.begin() + static_cast<long>(std::min(at + 100, ids.size()))}));
  return ids;
}

// The reviewer's push, scaled to the test: commits repeating their one parent line (100
// times, the most a commit may have) and 300 updates whose old commits are not in the
// pack (but named by it). Each parent is walked once: the 301 walks take 59 steps each, within a bound
// that one walk over every repeated line would pass.
TEST(GitPushWalk, RepeatedParentLinesAreWalkedOnce) {
  test::HandPack pack;
  std::string root;
  const std::string tip = chain(pack, 60, 100, 0, &root);
  std::vector<std::pair<std::string, std::string>> updates{{root, tip}};
  for (const std::string& old_id : elsewhere(pack, 300)) updates.emplace_back(old_id, tip);
  GitPushLimits limits;
  limits.max_walk_edges = 301 * 59;
  auto r = read_git_push(commands(updates) + pack.bytes(), limits);
  ASSERT_TRUE(std::holds_alternative<GitPush>(r)) << std::get<GitPushRefusal>(r).reason;
  const GitPush& push = std::get<GitPush>(r);
  EXPECT_EQ(push.commits.at(tip).size(), 1u);
  EXPECT_TRUE(push.shows_fast_forward(push.updates[0]));
  EXPECT_FALSE(push.shows_fast_forward(push.updates[1]));
  EXPECT_EQ(push.fast_forwards.size(), 1u);
}

// 1000 updates (the most a push may name) that each walk 50 commits of 100 parents:
// five million steps, refused at the bound (2^22) rather than walked.
TEST(GitPushWalk, WalksPastTheBoundAreRefused) {
  test::HandPack pack;
  const std::string tip = chain(pack, 50, 1, 99);
  std::vector<std::pair<std::string, std::string>> updates;
  for (const std::string& old_id : elsewhere(pack, 1000)) updates.emplace_back(old_id, tip);
  auto r = read_git_push(commands(updates) + pack.bytes());
  ASSERT_TRUE(std::holds_alternative<GitPushRefusal>(r)) << "the push was walked to the end";
  EXPECT_NE(std::get<GitPushRefusal>(r).reason.find("more than 4194304 steps from a commit to a parent"), std::string::npos)
      << std::get<GitPushRefusal>(r).reason;
}

// A commit of 21,000 identical parent lines (1 MB) is refused when read, before any walk.
TEST(GitPushWalk, ACommitWithMoreParentsThanTheBoundIsRefused) {
  test::HandPack pack;
  const std::string old_tip = test::sha1_hex("old");
  const std::string tip = pack.add(1, test::HandPack::commit_text(std::vector<std::string>(21000, old_tip)));
  auto r = read_git_push(commands({{old_tip, tip}}) + pack.bytes());
  ASSERT_TRUE(std::holds_alternative<GitPushRefusal>(r));
  EXPECT_NE(std::get<GitPushRefusal>(r).reason.find("more than 100 parents"), std::string::npos)
      << std::get<GitPushRefusal>(r).reason;
  // An octopus merge within the bound is read.
  test::HandPack octopus;
  std::vector<std::string> parents{old_tip};
  for (int k = 1; k < 100; ++k) parents.push_back(test::sha1_hex("branch " + std::to_string(k)));
  const std::string merge = octopus.add(1, test::HandPack::commit_text(parents));
  auto read = read_git_push(commands({{old_tip, merge}}) + octopus.bytes());
  ASSERT_TRUE(std::holds_alternative<GitPush>(read)) << std::get<GitPushRefusal>(read).reason;
  EXPECT_TRUE(std::get<GitPush>(read).shows_fast_forward(std::get<GitPush>(read).updates[0]));
}

// A blob whose entry header declares 2^55 bytes: its stream, 4 MiB of zeros in 4 KiB,
// is inflated only to the push's bound, and the push refused naming it. (Unbounded, a
// 2 MB pack of such streams inflates to 2 GB.)
TEST(GitPushInflation, ADeclaredHugeBlobIsInflatedOnlyToTheBound) {
  test::HandPack pack;
  const std::string old_tip = test::sha1_hex("old");
  const std::string tip = pack.add(1, test::HandPack::commit_text({old_tip}));
  pack.add(3, std::string(std::size_t{4} << 20, '\0'), std::uint64_t{1} << 55);
  GitPushLimits limits;
  limits.max_inflated_bytes = 1 << 20;
  auto r = read_git_push(commands({{old_tip, tip}}) + pack.bytes(), limits);
  ASSERT_TRUE(std::holds_alternative<GitPushRefusal>(r));
  EXPECT_NE(std::get<GitPushRefusal>(r).reason.find("inflate to more than 1048576 bytes"), std::string::npos)
      << std::get<GitPushRefusal>(r).reason;
}

// The bound is the push's, not an object's: 130 blobs of 1 MiB, each as large as its
// header says, pass the default bound (8 x the largest window, 128 MiB) together.
TEST(GitPushInflation, TheBoundCountsEveryObjectOfThePush) {
  test::HandPack pack;
  const std::string tip = pack.add(1, test::HandPack::commit_text({}));
  pack.add(3, std::string(std::size_t{1} << 20, '\0'));
  pack.repeat_last(129);
  auto r = read_git_push(commands({{test::GitRepo::kZero, tip}}) + pack.bytes());
  ASSERT_TRUE(std::holds_alternative<GitPushRefusal>(r));
  EXPECT_NE(std::get<GitPushRefusal>(r).reason.find("inflate to more than 134217728 bytes"), std::string::npos)
      << std::get<GitPushRefusal>(r).reason;
}

// A server for git's ext:: transport that sends `answer` (its ref advertisement and
// report) and reads what git sends until git closes the pipe.
std::string ext_server(const test::TempDir& dir, const std::string& name, const std::string& answer) {
  const auto data = dir.write(name, answer);
  const auto script = dir.write(name + ".sh", "#!/bin/sh\ncat '" + data.string() + "'\nexec cat >/dev/null\n");
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  return "ext::" + script.string();
}

// The refusal answer, as real git receives it: a server (over git's ext:: transport, the
// same report-status exchange as smart HTTP's) that advertises an empty repository and
// answers with git_push_refusal. git must print each ref's reason and the summary.
TEST_F(GitPushTest, GitPrintsTheRefusalForEveryRef) {
  commit("a");
  git({"branch", "agent/x"});
  GitPush push;
  push.capabilities = "report-status side-band-64k";
  push.updates = {{kZero, rev("HEAD"), "refs/heads/agent/x"}, {kZero, rev("HEAD"), "refs/heads/main"}};
  const std::string advert =
      pkt_line(kZero + " capabilities^{}" + std::string(1, '\0') + "report-status side-band-64k delete-refs\n") + "0000";
  const auto server =
      ext_server(dir_, "server",
                 advert + git_push_refusal(push, {{"refs/heads/main", "refs/heads/main is not in git.push"}},
                                           "push refused by policy: refs/heads/main"));
  const auto r = run({"git", "-C", repo(), "-c", "protocol.ext.allow=always", "push", "--porcelain", server, "agent/x", "main"});
  EXPECT_NE(r.exit_code, 0);
  const std::string all = r.out + r.err;
  EXPECT_NE(all.find("refs/heads/main\t[remote rejected] (refs/heads/main is not in git.push)"), std::string::npos) << all;
  EXPECT_NE(all.find("refs/heads/agent/x\t[remote rejected] (not pushed: netbox refused another ref"), std::string::npos)
      << all;
  EXPECT_NE(all.find("remote: netbox: push refused by policy: refs/heads/main"), std::string::npos) << all;

  // Without side-band the same report, bare; and a body netbox cannot read gets ERR.
  push.capabilities = "report-status";
  const auto bare = ext_server(dir_, "bare",
                               pkt_line(kZero + " capabilities^{}" + std::string(1, '\0') + "report-status\n") + "0000" +
                                   git_push_refusal(push, {}, "x"));
  const auto r2 = run({"git", "-C", repo(), "-c", "protocol.ext.allow=always", "push", "--porcelain", bare, "main"});
  EXPECT_NE((r2.out + r2.err).find("refs/heads/main\t[remote rejected] (not pushed"), std::string::npos) << r2.out + r2.err;
  const auto err = ext_server(dir_, "err", git_push_error("the push is not pkt-lines"));
  const auto r3 = run({"git", "-C", repo(), "-c", "protocol.ext.allow=always", "push", err, "main"});
  EXPECT_NE(r3.exit_code, 0);
  EXPECT_NE(r3.err.find("remote error: netbox: the push is not pkt-lines"), std::string::npos) << r3.err;
}

TEST(PktLineTest, ReadsLengthsFlushesAndRefusesTheRest) {
  EXPECT_EQ(read_pkt_line("0000").kind, PktLine::Kind::flush);
  const auto p = read_pkt_line("0009hello0000");
  EXPECT_EQ(p.kind, PktLine::Kind::data);
  EXPECT_EQ(p.payload, "hello");
  EXPECT_EQ(p.used, 9u);
  EXPECT_EQ(read_pkt_line("0009hel").kind, PktLine::Kind::incomplete);
  EXPECT_EQ(read_pkt_line("00").kind, PktLine::Kind::incomplete);
  EXPECT_EQ(read_pkt_line("0001").kind, PktLine::Kind::malformed);
  EXPECT_EQ(read_pkt_line("0003").kind, PktLine::Kind::malformed);
  EXPECT_EQ(read_pkt_line("fff1").kind, PktLine::Kind::malformed);
  EXPECT_EQ(read_pkt_line("00g9hello").kind, PktLine::Kind::malformed);
}

}  // namespace
}  // namespace netbox::content
