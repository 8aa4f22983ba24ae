#include "netbox/launcher/seccomp_profile.hpp"

#include "netbox/launcher/launch.hpp"

#include <seccomp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <sys/socket.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

namespace netbox::launcher {
namespace {

scmp_filter_ctx as_ctx(void* p) { return static_cast<scmp_filter_ctx>(p); }

scmp_arg_cmp arg_cmp(unsigned index, scmp_compare op, scmp_datum_t a, scmp_datum_t b = 0) {
  scmp_arg_cmp c{};
  c.arg = index;
  c.op = op;
  c.datum_a = a;
  c.datum_b = b;
  return c;
}

// Syscalls an agent has no business making: they escape or inspect the sandbox,
// change the kernel, or reach past the network namespace.
constexpr const char* kDeniedSyscalls[] = {
    "unshare", "setns", "mount", "umount", "umount2", "pivot_root", "chroot",
    "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    "ptrace", "process_vm_readv", "process_vm_writev", "bpf", "perf_event_open",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "keyctl", "add_key", "request_key",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
    "swapon", "swapoff", "acct", "userfaultfd", "open_by_handle_at", "name_to_handle_at",
};

void add_or_throw(scmp_filter_ctx ctx, std::uint32_t action, int nr, std::vector<scmp_arg_cmp> args,
                  const std::string& what) {
  int rc = seccomp_rule_add_array(ctx, action, nr, static_cast<unsigned>(args.size()), args.data());
  if (rc != 0) throw LaunchError(kExitLauncherFailure, "seccomp: cannot add rule for " + what + ": " + std::strerror(-rc));
}

// The socket families an agent may open, in ascending order. AF_NETLINK is further held to
// NETLINK_ROUTE, which glibc needs (getaddrinfo's AI_ADDRCONFIG, if_nameindex, getifaddrs) and
// which, without CAP_NET_ADMIN, only reads the agent's own namespace. Everything else (vsock,
// which the network namespace does not separate; packet; uevents; bluetooth; AF_ALG; AF_KEY;
// families a later kernel adds) is out of reach.
constexpr scmp_datum_t kSocketFamilies[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};
static_assert(std::is_sorted(std::begin(kSocketFamilies), std::end(kSocketFamilies)));

// The kernel reads socket's and socketpair's domain and protocol as 32-bit ints, so a
// deny-list compared on 64 bits is passed by setting an upper bit (AF_PACKET | 1 << 32). The
// filter therefore denies the complement of the allow-list: every value below the largest
// allowed family that is not allowed (64-bit EQ, so exact), and everything above it (64-bit
// GT, so also any value with an upper bit set, whatever its low bits). A call passes only
// when the whole 64-bit argument is an allowed family. EAFNOSUPPORT is what a kernel without
// the family says, so libraries fall back as they would there.
void refuse_other_socket_families(scmp_filter_ctx ctx, int nr, const std::string& what) {
  const std::uint32_t refuse = SCMP_ACT_ERRNO(EAFNOSUPPORT);
  scmp_datum_t next = 0;
  for (scmp_datum_t allowed : kSocketFamilies) {
    for (; next < allowed; ++next) add_or_throw(ctx, refuse, nr, {arg_cmp(0, SCMP_CMP_EQ, next)}, what);
    next = allowed + 1;
  }
  add_or_throw(ctx, refuse, nr, {arg_cmp(0, SCMP_CMP_GT, kSocketFamilies[std::size(kSocketFamilies) - 1])}, what);
  // The protocol is an int too: NETLINK_ROUTE | 1 << 32 is not NETLINK_ROUTE here, and refused.
  add_or_throw(ctx, refuse, nr, {arg_cmp(0, SCMP_CMP_EQ, AF_NETLINK), arg_cmp(2, SCMP_CMP_NE, NETLINK_ROUTE)}, what);
}

std::string line_col(const std::string& text, std::size_t byte) {
  int line = 1, col = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') ++line, col = 1;
    else ++col;
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

std::string native_arch_name() {
  switch (seccomp_arch_native()) {
    case SCMP_ARCH_X86_64: return "x86_64";
    case SCMP_ARCH_AARCH64: return "aarch64";
    case SCMP_ARCH_X86: return "x86";
    default: return "other";
  }
}

// Docker's `includes.arches` uses Go names (amd64, arm64) as well as kernel ones.
bool names_native_arch(const nlohmann::json& arches) {
  const std::string native = native_arch_name();
  for (const auto& a : arches) {
    if (!a.is_string()) continue;
    std::string s = a.get<std::string>();
    if (s == native || (native == "x86_64" && s == "amd64") || (native == "aarch64" && s == "arm64") ||
        (native == "x86" && s == "386"))
      return true;
  }
  return false;
}

class ProfileReader {
 public:
  ProfileReader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw LaunchError(kExitUsage, "--seccomp " + source_ + ": " + key + ": " + what);
  }

  std::uint32_t action(const nlohmann::json& value, const std::string& key, const nlohmann::json& errno_ret,
                       int default_errno) const {
    if (!value.is_string()) fail(key, "expected a string such as \"SCMP_ACT_ALLOW\"");
    const std::string a = value.get<std::string>();
    int err = default_errno;
    if (!errno_ret.is_null()) {
      if (!errno_ret.is_number_integer() || errno_ret.get<long>() < 0 || errno_ret.get<long>() > 4095)
        fail(key + " errnoRet", "expected an errno number (0-4095)");
      err = errno_ret.get<int>();
    }
    if (a == "SCMP_ACT_ALLOW") return SCMP_ACT_ALLOW;
    if (a == "SCMP_ACT_ERRNO") return SCMP_ACT_ERRNO(static_cast<unsigned>(err));
    if (a == "SCMP_ACT_KILL" || a == "SCMP_ACT_KILL_THREAD") return SCMP_ACT_KILL_THREAD;
    if (a == "SCMP_ACT_KILL_PROCESS") return SCMP_ACT_KILL_PROCESS;
    if (a == "SCMP_ACT_TRAP") return SCMP_ACT_TRAP;
    if (a == "SCMP_ACT_LOG") return SCMP_ACT_LOG;
    if (a == "SCMP_ACT_TRACE") return SCMP_ACT_TRACE(static_cast<unsigned>(err));
    fail(key, "unknown action '" + a +
                  "' (expected SCMP_ACT_ALLOW, SCMP_ACT_ERRNO, SCMP_ACT_KILL, SCMP_ACT_KILL_PROCESS, "
                  "SCMP_ACT_KILL_THREAD, SCMP_ACT_TRAP, SCMP_ACT_TRACE or SCMP_ACT_LOG)");
  }

  scmp_compare op(const nlohmann::json& value, const std::string& key) const {
    static const std::pair<const char*, scmp_compare> ops[] = {
        {"SCMP_CMP_NE", SCMP_CMP_NE}, {"SCMP_CMP_LT", SCMP_CMP_LT}, {"SCMP_CMP_LE", SCMP_CMP_LE},
        {"SCMP_CMP_EQ", SCMP_CMP_EQ}, {"SCMP_CMP_GE", SCMP_CMP_GE}, {"SCMP_CMP_GT", SCMP_CMP_GT},
        {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ}};
    if (value.is_string())
      for (const auto& [name, o] : ops)
        if (value.get<std::string>() == name) return o;
    fail(key, "unknown comparison " + value.dump() + " (expected SCMP_CMP_EQ, SCMP_CMP_NE, ...)");
  }

  SeccompFilter build(const nlohmann::json& doc) const {
    if (!doc.is_object()) fail("(top level)", "expected a JSON object");
    if (!doc.contains("defaultAction")) fail("defaultAction", "missing");
    int default_errno = EPERM;
    if (doc.contains("defaultErrnoRet")) {
      if (!doc["defaultErrnoRet"].is_number_integer()) fail("defaultErrnoRet", "expected an errno number");
      default_errno = doc["defaultErrnoRet"].get<int>();
    }
    std::uint32_t def = action(doc["defaultAction"], "defaultAction", nullptr, default_errno);
    SeccompFilter filter(seccomp_init(def));
    if (filter.empty()) fail("defaultAction", "libseccomp refused it");
    auto ctx = as_ctx(filter.native());
    if (doc.contains("architectures")) {
      const auto& arches = doc["architectures"];
      if (!arches.is_array()) fail("architectures", "expected an array of names such as \"SCMP_ARCH_X86_64\"");
      for (std::size_t i = 0; i < arches.size(); ++i) {
        const std::string key = "architectures[" + std::to_string(i) + "]";
        if (!arches[i].is_string()) fail(key, "expected a string");
        std::string name = arches[i].get<std::string>();
        std::string bare = name.starts_with("SCMP_ARCH_") ? name.substr(10) : name;
        std::transform(bare.begin(), bare.end(), bare.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        std::uint32_t arch = seccomp_arch_resolve_name(bare.c_str());
        if (arch == 0) fail(key, "unknown architecture '" + name + "'");
        int rc = seccomp_arch_add(ctx, arch);
        if (rc != 0 && rc != -EEXIST) fail(key, std::string("cannot add architecture: ") + std::strerror(-rc));
      }
    }
    if (!doc.contains("syscalls")) return filter;
    const auto& syscalls = doc["syscalls"];
    if (!syscalls.is_array()) fail("syscalls", "expected an array");
    for (std::size_t i = 0; i < syscalls.size(); ++i) add_entry(ctx, syscalls[i], "syscalls[" + std::to_string(i) + "]", def, default_errno);
    return filter;
  }

 private:
  void add_entry(scmp_filter_ctx ctx, const nlohmann::json& entry, const std::string& key, std::uint32_t def,
                 int default_errno) const {
    if (!entry.is_object()) fail(key, "expected an object");
    // The agent holds no capabilities, so entries for holders of a capability never apply.
    if (entry.contains("includes") && entry["includes"].is_object()) {
      const auto& inc = entry["includes"];
      if (inc.contains("caps") && inc["caps"].is_array() && !inc["caps"].empty()) return;
      if (inc.contains("arches") && inc["arches"].is_array() && !names_native_arch(inc["arches"])) return;
    }
    if (entry.contains("excludes") && entry["excludes"].is_object()) {
      const auto& exc = entry["excludes"];
      if (exc.contains("arches") && exc["arches"].is_array() && names_native_arch(exc["arches"])) return;
    }
    std::vector<std::string> names;
    if (entry.contains("names")) {
      if (!entry["names"].is_array()) fail(key + ".names", "expected an array of syscall names");
      for (const auto& n : entry["names"]) {
        if (!n.is_string()) fail(key + ".names", "expected strings");
        names.push_back(n.get<std::string>());
      }
    } else if (entry.contains("name") && entry["name"].is_string()) {
      names.push_back(entry["name"].get<std::string>());
    } else {
      fail(key, "missing names");
    }
    if (!entry.contains("action")) fail(key + ".action", "missing");
    std::uint32_t act = action(entry["action"], key + ".action",
                               entry.contains("errnoRet") ? entry["errnoRet"] : nlohmann::json(), default_errno);
    std::vector<scmp_arg_cmp> args;
    if (entry.contains("args") && !entry["args"].is_null()) {
      if (!entry["args"].is_array()) fail(key + ".args", "expected an array");
      for (std::size_t j = 0; j < entry["args"].size(); ++j) {
        const auto& a = entry["args"][j];
        const std::string akey = key + ".args[" + std::to_string(j) + "]";
        if (!a.is_object()) fail(akey, "expected an object");
        if (!a.contains("index") || !a["index"].is_number_unsigned() || a["index"].get<unsigned>() > 5)
          fail(akey + ".index", "expected 0-5");
        if (!a.contains("value") || !a["value"].is_number_integer()) fail(akey + ".value", "expected a number");
        scmp_datum_t two = 0;
        if (a.contains("valueTwo")) {
          if (!a["valueTwo"].is_number_integer()) fail(akey + ".valueTwo", "expected a number");
          two = a["valueTwo"].get<scmp_datum_t>();
        }
        scmp_compare o = op(a.contains("op") ? a["op"] : nlohmann::json(), akey + ".op");
        scmp_datum_t value = a["value"].get<scmp_datum_t>();
        // Docker's layout matches libseccomp's: for MASKED_EQ, value is the mask.
        args.push_back(arg_cmp(a["index"].get<unsigned>(), o, value, two));
      }
    }
    if (act == def) return;  // libseccomp refuses rules that repeat the default
    for (const auto& name : names) {
      int nr = seccomp_syscall_resolve_name(name.c_str());
      if (nr == __NR_SCMP_ERROR) continue;  // unknown on this kernel/arch: Docker skips these too
      int rc = seccomp_rule_add_array(ctx, act, nr, static_cast<unsigned>(args.size()), args.data());
      if (rc != 0) fail(key, "cannot add a rule for '" + name + "': " + std::strerror(-rc));
    }
  }

  std::string source_;
};

}  // namespace

SeccompFilter::SeccompFilter() = default;
SeccompFilter::~SeccompFilter() {
  if (ctx_) seccomp_release(as_ctx(ctx_));
}
SeccompFilter::SeccompFilter(SeccompFilter&& o) noexcept : ctx_(std::exchange(o.ctx_, nullptr)) {}
SeccompFilter& SeccompFilter::operator=(SeccompFilter&& o) noexcept {
  if (this != &o) {
    if (ctx_) seccomp_release(as_ctx(ctx_));
    ctx_ = std::exchange(o.ctx_, nullptr);
  }
  return *this;
}
bool SeccompFilter::empty() const { return ctx_ == nullptr; }
std::vector<sock_filter> SeccompFilter::compile() const {
  if (!ctx_) return {};
  int fd = memfd_create("netbox-seccomp", MFD_CLOEXEC);
  if (fd < 0) throw LaunchError(kExitLauncherFailure, std::string("seccomp: memfd_create: ") + std::strerror(errno));
  int rc = seccomp_export_bpf(as_ctx(ctx_), fd);
  off_t size = lseek(fd, 0, SEEK_END);
  std::vector<sock_filter> program;
  if (rc == 0 && size > 0 && size % static_cast<off_t>(sizeof(sock_filter)) == 0) {
    program.resize(static_cast<std::size_t>(size) / sizeof(sock_filter));
    if (pread(fd, program.data(), static_cast<std::size_t>(size), 0) != size) program.clear();
  }
  ::close(fd);
  if (program.empty()) throw LaunchError(kExitLauncherFailure, "seccomp: cannot compile the filter");
  return program;
}

int install_seccomp_program(const std::vector<sock_filter>& program) {
  if (program.empty()) return 0;
  sock_fprog prog{static_cast<unsigned short>(program.size()), const_cast<sock_filter*>(program.data())};
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == 0 ? 0 : errno;
}

SeccompFilter default_seccomp_filter() {
  SeccompFilter filter(seccomp_init(SCMP_ACT_ALLOW));
  if (filter.empty()) throw LaunchError(kExitLauncherFailure, "seccomp: cannot create a filter");
  auto ctx = as_ctx(filter.native());
  const std::uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  for (const char* name : kDeniedSyscalls) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;
    add_or_throw(ctx, eperm, nr, {}, name);
  }
  // clone's first argument carries the flags; any namespace flag is refused. (The low
  // byte is the exit signal, so CLONE_NEWTIME, which lives there, is unshare-only.) The
  // kernel keeps only the low 32 bits of the flags; a masked test of one low bit ignores the
  // upper ones, so setting them changes nothing.
  const scmp_datum_t ns_flags[] = {CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
                                   CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP};
  const int clone_nr = seccomp_syscall_resolve_name("clone");
  for (auto flag : ns_flags) add_or_throw(ctx, eperm, clone_nr, {arg_cmp(0, SCMP_CMP_MASKED_EQ, flag, flag)}, "clone");
  // clone3 passes its flags in memory, out of seccomp's sight: ENOSYS makes libc fall back to clone.
  if (int nr = seccomp_syscall_resolve_name("clone3"); nr != __NR_SCMP_ERROR)
    add_or_throw(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, {}, "clone3");
  // ioctl's request is an unsigned int in the kernel: compared on its low 32 bits only.
  const int ioctl_nr = seccomp_syscall_resolve_name("ioctl");
  for (scmp_datum_t req : {scmp_datum_t{TIOCSTI}, scmp_datum_t{TIOCLINUX}})
    add_or_throw(ctx, eperm, ioctl_nr, {arg_cmp(1, SCMP_CMP_MASKED_EQ, 0xffffffffULL, req)}, "ioctl");
  for (const char* name : {"socket", "socketpair"}) refuse_other_socket_families(ctx, seccomp_syscall_resolve_name(name), name);
  return filter;
}

SeccompFilter seccomp_filter_from_json(const std::string& text, const std::string& source) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw LaunchError(kExitUsage, "--seccomp " + source + ":" + line_col(text, e.byte == 0 ? 0 : e.byte - 1) +
                                      ": not valid JSON: " + e.what());
  } catch (const nlohmann::json::exception& e) {
    // e.g. a number too large for a double (out_of_range 406): still the user's file at fault.
    throw LaunchError(kExitUsage, "--seccomp " + source + ": not a usable JSON document: " + e.what());
  }
  return ProfileReader(source).build(doc);
}

SeccompFilter seccomp_filter_from_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw LaunchError(kExitUsage, "--seccomp " + file.string() + ": cannot read: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return seccomp_filter_from_json(text.str(), file.string());
}

SeccompFilter seccomp_filter_for(const std::string& flag) {
  if (flag == "default") return default_seccomp_filter();
  if (flag == "off") return SeccompFilter();
  return seccomp_filter_from_file(flag);
}

}  // namespace netbox::launcher
