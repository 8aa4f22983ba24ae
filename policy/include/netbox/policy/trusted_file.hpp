#pragma once
// Whether a file that decides what netbox lets through (a policy, proxy.json, the CA key)
// can be changed by someone other than the people netbox works for. One check serves
// every such file, at load and at every reload: a policy that any local user may write,
// or whose folder lets them rename another file over it, is theirs to widen.
#include <sys/stat.h>
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace netbox::policy {

struct FileTrust {
  std::vector<uid_t> owners;  // the file (and its folder) must belong to one of these
  mode_t forbidden = S_IWOTH | S_IWGRP;  // mode bits of the file that must be clear
  // Group write allowed when the group is root's or the invoker's own (a user-private
  // group under umask 002): no one else is in it.
  bool own_group_may_write = true;
  bool folder = true;  // also check the folder holding the path (a rename swap)
  std::string why;     // a clause: "whoever may write it decides what the proxy lets through"
};

// Root, the invoking user (real and effective uid) and, run as root through sudo, the
// user who ran sudo (SUDO_UID): the owners a file may have when whoever runs netbox trusts it.
std::vector<uid_t> invoking_owners();

// The problem with the open file `fd` (which `path` named), or nullopt when it is safe,
// for the caller to put after the file's name: "mode 0666 lets every local user change it; whoever may write it decides what the
// proxy lets through (chmod go-w PATH)". The folder may be writable by others only when it has the
// sticky bit and belongs to a trusted owner (/tmp): others then cannot replace the file.
std::optional<std::string> untrusted_because(int fd, const std::filesystem::path& path, const FileTrust& trust);

}  // namespace netbox::policy
