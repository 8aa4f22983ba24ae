#include "netbox/launcher/rlimits.hpp"

#include "netbox/launcher/launch.hpp"
#include "netbox/policy/duration.hpp"
#include "netbox/policy/size.hpp"

#include <cerrno>

namespace netbox::launcher {
namespace {

// Defaults meant for agents (language runtimes, package managers, compilers): generous
// enough for real work, tight enough that a runaway loop cannot take the host down.
// The address-space limit is large because JIT runtimes (V8, the JVM, Go) reserve far
// more virtual memory than they touch.
constexpr rlim_t kGiB = 1024ULL * 1024 * 1024;
constexpr rlim_t kDefaultAs = 16 * kGiB;
constexpr rlim_t kDefaultNofile = 4096;
constexpr rlim_t kDefaultNproc = 1024;
constexpr rlim_t kDefaultFsize = 16 * kGiB;

}  // namespace

// The grammar lives in the policy module: the policy's `sandbox` key takes the same text.
static_assert(RLIM_INFINITY == policy::kUnlimited, "\"unlimited\" must mean RLIM_INFINITY");

std::optional<rlim_t> parse_size(const std::string& text) { return policy::parse_size(text); }

std::optional<rlim_t> parse_count(const std::string& text) { return policy::parse_count(text); }

// CPU time in the one duration grammar ("90", "30m", "1h30m"), rounded up to whole
// seconds (RLIMIT_CPU's unit), or "unlimited".
std::optional<rlim_t> cpu_seconds(const std::string& text) {
  if (parse_count(text) == policy::kUnlimited) return policy::kUnlimited;
  const auto d = policy::try_parse_duration(text);
  if (!d) return std::nullopt;
  return static_cast<rlim_t>((d.value.count() + 999) / 1000);
}

std::vector<RlimitSetting> agent_rlimits(const RlimitFlags& flags, bool pids_cgroup) {
  enum class Grammar { size, count, duration };
  auto pick = [](const std::optional<std::string>& flag, const char* flag_name, Grammar grammar,
                 std::optional<rlim_t> fallback) -> std::optional<rlim_t> {
    if (!flag) return fallback;
    auto v = grammar == Grammar::size ? parse_size(*flag) : grammar == Grammar::count ? parse_count(*flag)
                                                                                       : cpu_seconds(*flag);
    if (!v && grammar == Grammar::duration)
      throw LaunchError(kExitUsage, std::string("--") + flag_name + " '" + *flag + "' is not a duration: " +
                                        policy::try_parse_duration(*flag).why + " (" +
                                        std::string(policy::kDurationExamples) + "), nor 'unlimited'");
    if (!v)
      throw LaunchError(kExitUsage, std::string("--") + flag_name + " '" + *flag + "': expected " +
                                        (grammar == Grammar::size ? "a size such as 512M, 4G or 'unlimited'"
                                                                     : "a whole number or 'unlimited'"));
    return v;
  };
  std::vector<RlimitSetting> out;
  out.push_back({RLIMIT_CORE, 0, "core"});  // never core dumps: they may hold secrets
  if (auto v = pick(flags.as, "rlimit-as", Grammar::size, kDefaultAs)) out.push_back({RLIMIT_AS, *v, "as"});
  if (auto v = pick(flags.cpu, "rlimit-cpu", Grammar::duration, std::nullopt)) out.push_back({RLIMIT_CPU, *v, "cpu"});
  if (auto v = pick(flags.nofile, "rlimit-nofile", Grammar::count, kDefaultNofile))
    out.push_back({RLIMIT_NOFILE, *v, "nofile"});
  if (auto v = pick(flags.nproc, "rlimit-nproc", Grammar::count, pids_cgroup ? RLIM_INFINITY : kDefaultNproc))
    out.push_back({RLIMIT_NPROC, *v, "nproc"});
  if (auto v = pick(flags.fsize, "rlimit-fsize", Grammar::size, kDefaultFsize))
    out.push_back({RLIMIT_FSIZE, *v, "fsize"});
  return out;
}

int apply_rlimits(const std::vector<RlimitSetting>& limits) {
  for (const auto& l : limits) {
    struct rlimit current {};
    if (getrlimit(l.resource, &current) != 0) return errno;
    // Raising a hard limit needs CAP_SYS_RESOURCE; the launcher only ever tightens.
    rlim_t v = l.value;
    if (current.rlim_max != RLIM_INFINITY && (v == RLIM_INFINITY || v > current.rlim_max)) v = current.rlim_max;
    struct rlimit next {v, v};
    if (setrlimit(l.resource, &next) != 0) return errno;
  }
  return 0;
}

}  // namespace netbox::launcher
