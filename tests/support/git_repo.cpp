#include "support/git_repo.hpp"

#include "support/process.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

namespace netbox::test {

GitRepo::GitRepo() {
  git({"init", "-q", "-b", "main", path()});
  git({"config", "user.email", "agent@example.test"});
  git({"config", "user.name", "agent"});
}

std::string GitRepo::git(std::vector<std::string> args, const std::string& input) {
  std::vector<std::string> argv{"git", "-C", path()};
  if (args.front() == "init") argv = {"git"};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto r = run(argv, std::chrono::seconds(60), input);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

std::string GitRepo::commit(const std::string& message, std::size_t padding) {
  dir_.write("repo/file", message);
  git({"add", "file"});
  git({"commit", "-q", "-m", padding ? message + "\n\n" + std::string(padding, 'x') : message});
  return rev("HEAD");
}

std::string GitRepo::rev(const std::string& name) {
  std::string out = git({"rev-parse", name});
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::string GitRepo::pkt(const std::string& payload) {
  char head[5];
  std::snprintf(head, sizeof head, "%04zx", payload.size() + 4);
  return head + payload;
}

std::string GitRepo::push_body(const std::string& old_id, const std::string& new_id, const std::string& ref,
                               const std::vector<std::string>& pack_flags) {
  std::string out = pkt(old_id + " " + new_id + " " + ref + std::string(1, '\0') + "report-status side-band-64k\n") + "0000";
  if (new_id == kZero) return out;
  std::vector<std::string> args{"pack-objects", "--stdout", "--revs", "-q"};
  args.insert(args.end(), pack_flags.begin(), pack_flags.end());
  return out + git(args, new_id + "\n" + (old_id == kZero ? "" : "^" + old_id + "\n"));
}

}  // namespace netbox::test
