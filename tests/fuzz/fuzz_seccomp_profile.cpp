// The launcher's Docker/OCI seccomp profile loader (launcher/src/seccomp_profile.cpp):
// seccomp_filter_from_json builds a libseccomp context and compile() exports its BPF
// program to a memfd. Neither installs anything: install_seccomp_program is never called
// here, so the fuzzer process itself stays unfiltered.
// Contract: a profile loads, or LaunchError with exit status 2 (usage) or 125 (libseccomp
// failed) naming the source. Any other exception or a sanitizer report is a bug.
#include "netbox/launcher/launch.hpp"
#include "netbox/launcher/seccomp_profile.hpp"


#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto filter = netbox::launcher::seccomp_filter_from_json(text, "fuzz.json");
    if (filter.empty()) std::abort();  // a loaded profile always has a context
    (void)filter.compile();
  } catch (const netbox::launcher::LaunchError& e) {
    const bool named = std::string_view(e.what()).find("fuzz.json") != std::string_view::npos;
    if (e.exit_code() == netbox::launcher::kExitUsage && !named) {
      std::fprintf(stderr, "fuzz_seccomp_profile: usage error without the file name: %s\n", e.what());
      std::abort();
    }
    if (e.exit_code() != netbox::launcher::kExitUsage && e.exit_code() != netbox::launcher::kExitLauncherFailure) {
      std::fprintf(stderr, "fuzz_seccomp_profile: unexpected exit status %d: %s\n", e.exit_code(), e.what());
      std::abort();
    }
  }
  return 0;
}
