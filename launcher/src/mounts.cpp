#include "netbox/launcher/mounts.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace netbox::launcher {
namespace {

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what + ": " + std::strerror(errno)); }

void mount_or_throw(const char* source, const char* target, const char* type, unsigned long flags, const char* data) {
  if (::mount(source, target, type, flags, data) != 0)
    fail(std::string("mount ") + (type ? type : "bind") + " on " + target);
}

bool is_real_directory(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

void make_dir(const std::string& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) != 0 || ::chmod(path.c_str(), mode) != 0) fail("mkdir " + path);
}

void make_file(const std::string& path, mode_t mode) {
  int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) fail("creating " + path);
  ::close(fd);
}

std::string tmpfs_options(std::uint64_t bytes, const char* mode) {
  return "size=" + std::to_string(bytes) + ",mode=" + mode;
}

// Where the views are assembled: a tmpfs mounted on the host's /tmp path (in this
// namespace only), which becomes the root for a while. It holds the new root, the old
// one, the agent's writable memory and the empty file hidden files are covered with.
constexpr const char* kBase = "/tmp";
constexpr const char* kNewRoot = "/newroot";
constexpr const char* kOldRoot = "/oldroot";
constexpr const char* kShared = "/shared";
constexpr const char* kEmptyFile = "/empty";
constexpr const char* kUpper = "/upper";

std::string in_new(const std::string& path) { return path == "/" ? kNewRoot : kNewRoot + path; }
std::string in_old(const std::string& path) { return path == "/" ? kOldRoot : kOldRoot + path; }

// Per-mount flags of one mount and everything below it. mount_setattr does it in one
// call (Linux 5.12); older kernels get a bind remount of each mount in mountinfo.
void set_tree_flags(const std::string& top, bool read_only) {
  struct mount_attr attr {};
  attr.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (read_only ? MOUNT_ATTR_RDONLY : 0);
  attr.attr_clr = read_only ? 0 : MOUNT_ATTR_RDONLY;
  if (::syscall(SYS_mount_setattr, AT_FDCWD, top.c_str(), AT_RECURSIVE, &attr, sizeof attr) == 0) return;
  // ENOSYS: before 5.12; EPERM: a seccomp filter (a container runtime's) that does not know it.
  if (errno != ENOSYS && errno != EPERM) fail("mount_setattr on " + top);
  // Between the two pivots the root has no /proc; the host's is under the old root.
  std::ifstream info(::access("/proc/self/mountinfo", R_OK) == 0 ? "/proc/self/mountinfo"
                                                                 : std::string(kOldRoot) + "/proc/self/mountinfo");
  if (!info) fail("reading mountinfo for " + top);
  int changed = 0;
  std::string line;
  while (std::getline(info, line)) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point, options;
    if (!(fields >> id >> parent >> dev >> root >> point >> options)) continue;
    // mountinfo escapes space, tab, newline and backslash as \ooo.
    std::string path;
    for (std::size_t i = 0; i < point.size(); ++i) {
      if (point[i] == '\\' && i + 3 < point.size()) {
        path += static_cast<char>(std::stoi(point.substr(i + 1, 3), nullptr, 8));
        i += 3;
      } else {
        path += point[i];
      }
    }
    if (path != top && !path.starts_with(top + "/")) continue;
    unsigned long flags = MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | (read_only ? MS_RDONLY : 0);
    std::istringstream opts(options);
    for (std::string o; std::getline(opts, o, ',');) {
      if (o == "noexec") flags |= MS_NOEXEC;
      if (o == "noatime") flags |= MS_NOATIME;
      if (o == "nodiratime") flags |= MS_NODIRATIME;
      if (o == "relatime") flags |= MS_RELATIME;
      if (o == "ro") flags |= MS_RDONLY;  // a read-only mount of the host stays read-only
    }
    mount_or_throw(nullptr, path.c_str(), nullptr, flags, nullptr);
    ++changed;
  }
  // Never fail open: a tree whose flags were not set is not used.
  if (changed == 0) {
    errno = ENOENT;
    fail("no mount found in mountinfo at " + top);
  }
}

// Whatever the host had mounted there goes (with everything below it): the agent
// gets a fresh file system instead.
void detach_host_mount(const std::string& target) {
  if (::umount2(target.c_str(), MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT) fail("umount " + target);
}

// A mount point for a bind from the host, where the view has none: below a fresh
// tmpfs (HOME, /tmp), each missing folder is made, owned by `uid`.
void make_mount_point(const std::string& target, bool directory, uid_t uid, gid_t gid) {
  if (exists(target)) return;
  std::size_t pos = std::string(kNewRoot).size();
  while ((pos = target.find('/', pos + 1)) != std::string::npos) {
    const std::string part = target.substr(0, pos);
    if (exists(part)) continue;
    make_dir(part, 0755);
    if (::chown(part.c_str(), uid, gid) != 0) fail("chown " + part);
  }
  if (directory)
    make_dir(target, 0755);
  else
    make_file(target, 0444);
}

// The upper layer on a tmpfs of the quota's size; its root takes the owner and mode of
// the host's folder, which the merged folder shows. The descriptors are opened before
// the host's root is detached, and stay reachable only to the init.
WorkdirOverlay mount_overlay(const BindMount& bind, const std::string& source, const std::string& target) {
  make_dir(kUpper, 0700);
  mount_or_throw("tmpfs", kUpper, "tmpfs", MS_NOSUID | MS_NODEV, tmpfs_options(bind.quota, "0700").c_str());
  const std::string upper = std::string(kUpper) + "/upper";
  const std::string work = std::string(kUpper) + "/work";
  make_dir(upper, 0755);
  make_dir(work, 0700);
  struct stat st {};
  if (::stat(source.c_str(), &st) != 0) fail("stat " + bind.path);
  if (::chown(upper.c_str(), st.st_uid, st.st_gid) != 0 || ::chmod(upper.c_str(), st.st_mode & 07777) != 0)
    fail("chown " + upper);
  // Renamed lower folders are copied, not redirected, so the upper layer alone says
  // what changed (see commit_overlay).
  const std::string options = "lowerdir=" + source + ",upperdir=" + upper + ",workdir=" + work +
                              ",redirect_dir=off,index=off,metacopy=off";
  mount_or_throw("overlay", target.c_str(), "overlay", MS_NOSUID | MS_NODEV, options.c_str());
  WorkdirOverlay overlay;
  overlay.path = bind.path;
  overlay.upper_fd = ::open(upper.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  overlay.host_fd = ::open(source.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (overlay.upper_fd < 0 || overlay.host_fd < 0) fail("open " + bind.path);
  return overlay;
}

// A folder made on the host, as git init would have made it, owned as its parent.
void make_host_folder(const std::string& source) {
  if (exists(source)) return;
  struct stat parent {};
  if (::stat(source.substr(0, source.rfind('/')).c_str(), &parent) != 0) fail("stat the folder of " + source);
  if (::mkdir(source.c_str(), 0755) != 0) {
    if (errno == EROFS) return;  // nobody writes there, the agent neither
    fail("mkdir " + source);
  }
  if (::chown(source.c_str(), parent.st_uid, parent.st_gid) != 0) fail("chown " + source);
}

// Where openat2 or open_tree is missing (before 5.6, or refused by a container runtime's
// seccomp filter): bound by path as before, checked by the plan only.
constexpr int kByPath = -2;

// `bind.source` opened (O_PATH) from `bind.within` without leaving it: a link on the way
// that leads out, or a magic link, fails the launch. With make_missing, a missing last
// folder is made in its parent, owned as that parent. -1: it does not exist (and is not to
// be made, or the file system is read-only); kByPath: see there.
int open_within(const BindMount& bind) {
  const int root = ::open(in_old(bind.within).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) fail("open " + bind.within);
  const std::string rel = bind.source.size() > bind.within.size() ? bind.source.substr(bind.within.size() + 1) : ".";
  auto open_beneath = [&](const std::string& path) {
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    return static_cast<int>(::syscall(SYS_openat2, root, path.c_str(), &how, sizeof how));
  };
  int fd = open_beneath(rel);
  if (fd < 0 && (errno == ENOSYS || errno == EPERM)) {  // before 5.6, or a container's seccomp filter
    ::close(root);
    return kByPath;
  }
  if (fd < 0 && errno == ENOENT && bind.make_missing) {
    const auto slash = rel.rfind('/');
    const std::string parent_rel = slash == std::string::npos ? "." : rel.substr(0, slash);
    const std::string name = slash == std::string::npos ? rel : rel.substr(slash + 1);
    const int parent = open_beneath(parent_rel);
    if (parent < 0) fail("open " + bind.within + "/" + parent_rel + " within " + bind.within);
    struct stat owner {};
    const int dir = ::openat(parent, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);  // O_PATH cannot mkdirat on every kernel
    const bool made = dir >= 0 && ::fstat(dir, &owner) == 0 && ::mkdirat(dir, name.c_str(), 0755) == 0;
    const int err = errno;
    if (made && ::fchownat(dir, name.c_str(), owner.st_uid, owner.st_gid, AT_SYMLINK_NOFOLLOW) != 0) fail("chown " + bind.source);
    if (dir >= 0) ::close(dir);
    ::close(parent);
    if (!made && err != EROFS && err != EEXIST) {
      errno = err;
      fail("mkdir " + bind.source);
    }
    fd = open_beneath(rel);
  }
  const int err = errno;
  ::close(root);
  if (fd < 0 && err != ENOENT) {
    errno = err;
    fail("open " + bind.source + " without leaving " + bind.within);
  }
  return fd;
}

// A bind from an O_PATH descriptor: the tree it names, cloned and moved onto `target`.
// False: open_tree is missing or refused (kByPath).
bool bind_descriptor(int fd, const std::string& target) {
  const int tree = static_cast<int>(
      ::syscall(SYS_open_tree, fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE));
  if (tree < 0 && (errno == ENOSYS || errno == EPERM)) return false;
  if (tree < 0) fail("open_tree for " + target);
  const int rc = static_cast<int>(::syscall(SYS_move_mount, tree, "", AT_FDCWD, target.c_str(), MOVE_MOUNT_F_EMPTY_PATH));
  const int err = errno;
  ::close(tree);
  if (rc != 0) {
    errno = err;
    fail("move_mount onto " + target);
  }
  return true;
}

void bind_from_host(const BindMount& bind, const AgentMounts& m, WorkdirOverlay& overlay) {
  if (bind.pin) {
    const std::string self = in_new(bind.path);
    if (exists(self)) mount_or_throw(self.c_str(), self.c_str(), nullptr, MS_BIND, nullptr);
    return;
  }
  const std::string source = in_old(bind.source);
  int held = bind.within.empty() ? kByPath : open_within(bind);  // the source opened within bind.within
  if (held == -1) return;  // gone since the plan, or on a read-only file system: nothing to protect
  if (held == kByPath && bind.make_missing) {
    make_host_folder(source);
    if (!exists(source)) return;  // on a read-only file system: nobody can make it
  }
  struct Closer {
    int fd;
    ~Closer() {
      if (fd >= 0) ::close(fd);
    }
  } close_held{held};
  std::string target = in_new(bind.path);
  // A symlink the view shows already leads to the source's path (mount(2) would follow
  // it from the assembly root, not the agent's).
  struct stat link {};
  if (::lstat(target.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) target = in_new(bind.source);
  const bool below_home = !m.home.empty() && target.starts_with(in_new(m.home) + "/");
  struct stat held_st {};
  const bool folder = held >= 0 ? ::fstat(held, &held_st) == 0 && S_ISDIR(held_st.st_mode) : is_real_directory(source);
  make_mount_point(target, folder, below_home ? m.home_uid : 0, below_home ? m.home_gid : 0);
  if (bind.quota > 0) {
    overlay = mount_overlay(bind, source, target);
    return;
  }
  if (held < 0 || !bind_descriptor(held, target))
    mount_or_throw(source.c_str(), target.c_str(), nullptr, MS_BIND | MS_REC, nullptr);
  set_tree_flags(target, !bind.writable);
}

void hide(const std::string& path) {
  const std::string target = in_new(path);
  struct stat st {};
  // Nothing there to see; or a symlink, which mount(2) would follow from the assembly
  // root: its target is hidden on its own.
  if (::lstat(target.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) return;
  if (S_ISDIR(st.st_mode)) {
    mount_or_throw("tmpfs", target.c_str(), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0555");
    return;
  }
  mount_or_throw(kEmptyFile, target.c_str(), nullptr, MS_BIND, nullptr);
  mount_or_throw(nullptr, target.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                 nullptr);
}

// Only what programs expect: the host's own nodes bound in (null, zero, full, random,
// urandom, tty), a devpts instance of its own, /dev/shm, the fd links. The tmpfs is
// made read-only once /dev/shm is bound (see finish_dev).
void build_dev() {
  const std::string dev = in_new("/dev");
  detach_host_mount(dev);
  mount_or_throw("tmpfs", dev.c_str(), "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755");
  for (const char* node : {"null", "zero", "full", "random", "urandom", "tty"}) {
    const std::string target = dev + "/" + node;
    make_file(target, 0666);
    mount_or_throw(in_old(std::string("/dev/") + node).c_str(), target.c_str(), nullptr, MS_BIND, nullptr);
    mount_or_throw(nullptr, target.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NOEXEC, nullptr);
  }
  make_dir(dev + "/pts", 0755);
  mount_or_throw("devpts", (dev + "/pts").c_str(), "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620");
  make_dir(dev + "/shm", 01777);
  struct Link {
    const char* name;
    const char* to;
  };
  for (const Link& l : {Link{"ptmx", "pts/ptmx"}, Link{"fd", "/proc/self/fd"}, Link{"stdin", "/proc/self/fd/0"},
                        Link{"stdout", "/proc/self/fd/1"}, Link{"stderr", "/proc/self/fd/2"}})
    if (::symlink(l.to, (dev + "/" + l.name).c_str()) != 0) fail(std::string("symlink /dev/") + l.name);
}

void finish_dev() {
  const std::string dev = in_new("/dev");
  mount_or_throw(nullptr, dev.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC, nullptr);
}

// hidepid=2: the agent's user sees only its own processes, not the init (whose memory
// is a copy of the launcher's) nor anything else running as root. Then Docker's
// defaults: kernel knobs read-only, kernel memory, keys and scheduler internals masked.
void build_proc() {
  const std::string proc = in_new("/proc");
  detach_host_mount(proc);
  mount_or_throw("proc", proc.c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2");
  for (const char* p : {"/sys", "/sysrq-trigger", "/irq", "/bus"}) {
    const std::string target = proc + p;
    if (!exists(target)) continue;
    mount_or_throw(target.c_str(), target.c_str(), nullptr, MS_BIND | MS_REC, nullptr);
    mount_or_throw(nullptr, target.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                   nullptr);
  }
  const std::string null = in_new("/dev/null");
  for (const char* p : {"/kcore", "/keys", "/timer_list", "/sched_debug"}) {
    const std::string target = proc + p;
    if (exists(target)) mount_or_throw(null.c_str(), target.c_str(), nullptr, MS_BIND, nullptr);
  }
}

// One budget for every place an agent writes to memory: /tmp, /var/tmp, /dev/shm and
// HOME are folders of one sized tmpfs.
void build_shared_tmp(const AgentMounts& m) {
  make_dir(kShared, 0755);
  mount_or_throw("tmpfs", kShared, "tmpfs", MS_NOSUID | MS_NODEV, tmpfs_options(m.tmp_bytes, "0755").c_str());
  auto bind_shared = [](const char* sub, const std::string& path) {
    const std::string target = in_new(path);
    // A symlink (e.g. /var/tmp -> /tmp on some systems) is covered by its target.
    if (!is_real_directory(target)) return;
    detach_host_mount(target);
    const std::string source = std::string(kShared) + "/" + sub;
    make_dir(source, 01777);
    mount_or_throw(source.c_str(), target.c_str(), nullptr, MS_BIND, nullptr);
  };
  bind_shared("tmp", "/tmp");
  bind_shared("var-tmp", "/var/tmp");
  bind_shared("shm", "/dev/shm");
  if (!m.home.empty() && is_real_directory(in_new(m.home))) {
    const std::string home = std::string(kShared) + "/home";
    make_dir(home, 0700);
    if (::chown(home.c_str(), m.home_uid, m.home_gid) != 0) fail("chown " + home);
    mount_or_throw(home.c_str(), in_new(m.home).c_str(), nullptr, MS_BIND, nullptr);
  }
}

void build_run() {
  const std::string run = tmpfs_options(kRunTmpfsBytes, "0755");
  for (const char* path : {"/run", "/var/run"}) {
    // On most systems /var/run is a symlink to /run, already covered.
    const std::string target = in_new(path);
    if (!is_real_directory(target)) continue;
    detach_host_mount(target);
    mount_or_throw("tmpfs", target.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, run.c_str());
  }
}

// A file netbox wrote into the assembly tmpfs (root's, private to this namespace),
// shown read-only over `path` of the view: over the file itself, or over what its
// symlink leads to. A missing target on the fresh /run is made there (systemd-resolved's
// stub file); elsewhere a missing one is an error unless `optional`.
void show_read_only(const std::string& file, std::string path, bool optional) {
  const std::string asked = path;
  for (int hops = 0; hops < 8; ++hops) {
    struct stat st {};
    if (::lstat(in_new(path).c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) break;
    char buf[4096];
    const ssize_t n = ::readlink(in_new(path).c_str(), buf, sizeof buf - 1);
    if (n <= 0) fail("readlink " + path);
    const std::string to(buf, static_cast<std::size_t>(n));
    path = to.starts_with("/") ? to : path.substr(0, path.rfind('/') + 1) + to;
  }
  const std::string target = in_new(path);
  if (!exists(target)) {
    if (optional) return;
    if (!path.starts_with("/run/") && !path.starts_with("/var/run/"))
      throw std::runtime_error("the agent's " + path + " (where " + asked + " leads) does not exist and is not on "
                               "its fresh /run, so netbox's own cannot be shown there");
    make_mount_point(target, false, 0, 0);
  }
  mount_or_throw(file.c_str(), target.c_str(), nullptr, MS_BIND, nullptr);
  mount_or_throw(nullptr, target.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                 nullptr);
}

void write_file(const std::string& file, const std::string& text) {
  {
    std::ofstream out(file, std::ios::binary);
    out << text;
    if (!out.flush()) throw std::runtime_error("writing the agent's " + file + " failed");
  }
  if (::chmod(file.c_str(), 0444) != 0) fail("chmod " + file);
}

// The agent's resolv.conf, bound read-only over the view's /etc/resolv.conf.
void place_resolv_conf(const std::string& text) {
  write_file("/resolv.conf", text);
  show_read_only("/resolv.conf", "/etc/resolv.conf", false);
}

// The trust of an inspected launch (agent_trust.hpp): written into a root-owned folder
// of the assembly tmpfs, which is bound read-only as the agent's kAgentTrustFolder (on
// its fresh /run), and the bundle bound over the system bundle's path. The agent can
// read every byte (certificates only) and replace none: another launch has its own.
void place_trust(const AgentTrustFiles& trust) {
  const std::string folder = "/trust";
  make_dir(folder, 0755);
  write_file(folder + "/ca-certificates.crt", trust.bundle);
  write_file(folder + "/netbox-ca.pem", trust.netbox_ca);
  write_file(folder + "/cacerts.p12", trust.java_store);
  const std::string shown = in_new(kAgentTrustFolder);
  make_mount_point(shown, true, 0, 0);
  mount_or_throw(folder.c_str(), shown.c_str(), nullptr, MS_BIND, nullptr);
  mount_or_throw(nullptr, shown.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                 nullptr);
  show_read_only(folder + "/ca-certificates.crt", kSystemTrustBundle, false);
  show_read_only(folder + "/cacerts.p12", kJavaSystemTrustStore, true);
}

}  // namespace

WorkdirOverlay setup_agent_mounts(const AgentMounts& m) {
  // Nothing done here may propagate back to the host's mounts.
  mount_or_throw(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr);
  // Room for the files netbox shows the agent: its resolv.conf and, when it inspects,
  // the trust bundle and the JVM's store (each about the size of the host's roots).
  mount_or_throw("tmpfs", kBase, "tmpfs", MS_NOSUID | MS_NODEV, "size=8m,mode=0700");
  make_dir(std::string(kBase) + kNewRoot, 0755);
  make_dir(std::string(kBase) + kOldRoot, 0755);
  if (::syscall(SYS_pivot_root, kBase, (std::string(kBase) + kOldRoot).c_str()) != 0) fail("pivot_root");
  if (::chdir("/") != 0) fail("chdir /");

  // The host's tree, read-only, nosuid and nodev on every submount.
  mount_or_throw(kOldRoot, kNewRoot, nullptr, MS_BIND | MS_REC, nullptr);
  set_tree_flags(kNewRoot, true);

  build_dev();
  build_proc();
  // A sysfs mounted here belongs to this network namespace: /sys/class/net lists only
  // lo and eth0, not the host's interfaces and every other agent's veth.
  detach_host_mount(in_new("/sys"));
  mount_or_throw("sysfs", in_new("/sys").c_str(), "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
  build_shared_tmp(m);
  build_run();
  finish_dev();

  WorkdirOverlay overlay;
  for (const auto& bind : m.binds) bind_from_host(bind, m, overlay);
  if (!m.resolv_conf.empty()) place_resolv_conf(m.resolv_conf);
  if (!m.trust.bundle.empty()) place_trust(m.trust);
  if (!m.hidden.empty()) {
    make_file(kEmptyFile, 0444);
    for (const auto& path : m.hidden) hide(path);
  }

  // The host's root goes; the assembled tree becomes the root (pivot_root with both
  // arguments ".", then the old root, stacked on top, is detached).
  if (::umount2(kOldRoot, MNT_DETACH) != 0) fail("umount the host's root");
  if (::chdir(kNewRoot) != 0) fail("chdir to the new root");
  if (::syscall(SYS_pivot_root, ".", ".") != 0) fail("pivot_root to the new root");
  if (::umount2(".", MNT_DETACH) != 0) fail("umount the assembly root");
  if (::chdir("/") != 0) fail("chdir /");
  return overlay;
}

namespace {

// A folder covered by a tmpfs of its owner and mode, its entries but the hidden ones
// shown again: each bound (recursively, so what is mounted below it, such as the
// workdir, keeps its mounts and their flags) from a descriptor of the covered folder
// opened before; each symlink made again. Then the tmpfs is made read-only.
void cover_sharing(const SharedFolder& shared) {
  const std::string& folder = shared.folder;
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) {
    if (errno == ENOENT) return;
    fail("open " + folder);
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{dir};
  struct stat st {};
  if (::fstat(dir, &st) != 0) fail("stat " + folder);
  std::vector<std::string> names;
  {
    const int listing = ::dup(dir);
    DIR* d = listing < 0 ? nullptr : ::fdopendir(listing);
    if (!d) fail("listing " + folder);
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == ".." ||
          std::find(shared.hidden_names.begin(), shared.hidden_names.end(), name) != shared.hidden_names.end())
        continue;
      names.push_back(name);
    }
    ::closedir(d);
  }
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  mount_or_throw("tmpfs", folder.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, (std::string("size=1m,mode=") + mode).c_str());
  if (::chown(folder.c_str(), st.st_uid, st.st_gid) != 0) fail("chown " + folder);
  const std::string from = "/proc/self/fd/" + std::to_string(dir) + "/";
  for (const auto& name : names) {
    struct stat e {};
    if (::fstatat(dir, name.c_str(), &e, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone meanwhile
    const std::string target = folder + "/" + name;
    if (S_ISLNK(e.st_mode)) {
      char buf[4096];
      const ssize_t n = ::readlinkat(dir, name.c_str(), buf, sizeof buf - 1);
      if (n < 0 || ::symlink(std::string(buf, static_cast<std::size_t>(n)).c_str(), target.c_str()) != 0)
        fail("symlink " + target);
      if (::lchown(target.c_str(), e.st_uid, e.st_gid) != 0) fail("chown " + target);
      continue;
    }
    if (S_ISDIR(e.st_mode))
      make_dir(target, 0755);
    else
      make_file(target, 0444);
    mount_or_throw((from + name).c_str(), target.c_str(), nullptr, MS_BIND | MS_REC, nullptr);
  }
  mount_or_throw(nullptr, folder.c_str(), nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr);
}

}  // namespace

void hide_paths(const HiddenPaths& hidden) {
  for (const auto& folder : hidden.folders)
    mount_or_throw("tmpfs", folder.c_str(), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                   "size=4k,mode=0555");
  for (const auto& shared : hidden.shared) cover_sharing(shared);
  if (hidden.files.empty()) return;
  // The empty file lives on /run's fresh tmpfs only until it is bound everywhere:
  // the mounts keep it alive after the unlink.
  const char* empty = "/run/.netbox-empty";
  int fd = ::open(empty, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0444);
  if (fd < 0) throw std::runtime_error(std::string("creating ") + empty + ": " + std::strerror(errno));
  ::close(fd);
  try {
    for (const auto& file : hidden.files) {
      struct stat st {};
      if (::lstat(file.c_str(), &st) != 0 && errno == ENOENT) continue;
      mount_or_throw(empty, file.c_str(), nullptr, MS_BIND, nullptr);
      mount_or_throw(nullptr, file.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                     nullptr);
    }
  } catch (...) {
    ::unlink(empty);
    throw;
  }
  ::unlink(empty);
}

}  // namespace netbox::launcher
