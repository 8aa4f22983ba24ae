#pragma once
// A real, unprivileged user of this machine with a HOME, made for one test and removed
// after, and `netbox launch` run as if through sudo by that user.
#include "launch_fixture.hpp"

#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace netbox::launch_test {

class TempUser {
 public:
  explicit TempUser(const std::filesystem::path& home, const std::string& prefix = "nbxfs")
      : name_(prefix + std::to_string(::getpid() % 1000000)) {
    test::run({"userdel", name_});  // a leftover of a killed run
    auto r = test::run({"useradd", "-M", "-U", "-d", home.string(), "-s", "/bin/sh", name_});
    if (r.exit_code != 0) throw std::runtime_error("useradd: " + r.err);
    struct passwd* pw = ::getpwnam(name_.c_str());
    if (!pw) throw std::runtime_error("getpwnam " + name_);
    uid_ = pw->pw_uid;
    gid_ = pw->pw_gid;
  }
  ~TempUser() { test::run({"userdel", name_}); }
  TempUser(const TempUser&) = delete;
  TempUser& operator=(const TempUser&) = delete;
  const std::string& name() const { return name_; }
  uid_t uid() const { return uid_; }
  gid_t gid() const { return gid_; }

 private:
  std::string name_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
};

inline void chown_tree(const std::filesystem::path& top, uid_t uid, gid_t gid) {
  ASSERT_EQ(::lchown(top.c_str(), uid, gid), 0);
  for (const auto& e : std::filesystem::recursive_directory_iterator(top))
    ASSERT_EQ(::lchown(e.path().c_str(), uid, gid), 0);
}

// `netbox launch ARGS` as if run through sudo by `user` (SUDO_UID, SUDO_GID, SUDO_USER).
inline test::RunResult launch_as_sudo_caller(const TempUser& user, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"env", "SUDO_UID=" + std::to_string(user.uid()),
                                   "SUDO_GID=" + std::to_string(user.gid()), "SUDO_USER=" + user.name(),
                                   test::netbox_binary().string(), "launch"};
  argv.insert(argv.end(), args.begin(), args.end());
  return test::run(argv);
}

}  // namespace netbox::launch_test
