#pragma once
// A real git repository in a temporary folder, and the bodies real git sends for a push
// over smart HTTP (the command pkt-line, a flush, and the pack of what the server lacks,
// thin as send-pack makes it): what the git-push reader, the policy's git rules and
// `netbox policy check --body` are tested on.
#include "support/temp_dir.hpp"

#include <string>
#include <vector>

namespace netbox::test {

class GitRepo {
 public:
  static inline const std::string kZero = std::string(40, '0');  // "no commit": a creation's old, a deletion's new

  GitRepo();  // `git init -b main` with a committer set
  std::string path() const { return (dir_.path() / "repo").string(); }

  // Runs `git -C REPO ARGS` with `input` on stdin; a failure fails the test. Its stdout.
  std::string git(std::vector<std::string> args, const std::string& input = {});
  // Commits `message` as the file's content; `padding` bytes of 'x' in the message make
  // commits large enough that git deltifies neighbours against each other. Its id.
  std::string commit(const std::string& message, std::size_t padding = 0);
  std::string rev(const std::string& name);

  static std::string pkt(const std::string& payload);
  // The body `git push` sends for one update of `ref` from `old_id` to `new_id`.
  std::string push_body(const std::string& old_id, const std::string& new_id, const std::string& ref,
                        const std::vector<std::string>& pack_flags = {"--thin"});

 private:
  TempDir dir_;
};

}  // namespace netbox::test
