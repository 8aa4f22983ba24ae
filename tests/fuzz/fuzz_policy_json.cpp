// policy::parse_policy on arbitrary bytes: it either returns a whole Policy or throws
// PolicyError. Anything else (another exception, a sanitizer report) is a bug.
#include "netbox/policy/decide.hpp"
#include "netbox/policy/host.hpp"
#include "netbox/policy/load.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

// A loaded policy must be usable: summarising it and deciding a few names and
// addresses through every profile touches each rule the loader produced.
void exercise(const netbox::policy::Policy& p) {
  using namespace netbox::policy;
  (void)summarize(p);
  static const char* const kHosts[] = {"example.com", "api.example.com", "127.0.0.1", "[::1]", "10.1.2.3"};
  auto check = [](const Profile& profile) {
    for (const char* raw : kHosts) {
      auto parsed = parse_host(raw);
      if (!parsed) std::abort();  // fixed, valid hosts
      for (std::uint16_t port : {std::uint16_t{80}, std::uint16_t{443}, std::uint16_t{22}}) {
        auto d = decide_name(profile, *parsed.host, port);
        // A refusal the agent cannot act on is a bug: every deny carries a reason.
        if (d.verdict == Verdict::deny && d.reason.empty()) std::abort();
        if (parsed.host->is_ip()) (void)decide_address(profile, *parsed.host, port, *parsed.host->ip);
      }
    }
  };
  check(p.base);
  for (const auto& [name, profile] : p.agents) {
    check(profile);
    if (&p.profile_for(name) != &profile) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto policy = netbox::policy::parse_policy(text, "fuzz.json");
    exercise(policy);
  } catch (const netbox::policy::PolicyError& e) {
    // The message must name the file it is about.
    if (std::string_view(e.what()).find("fuzz.json") == std::string_view::npos) std::abort();
  }
  return 0;
}
