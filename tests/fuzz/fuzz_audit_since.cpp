// audit::parse_since, what `netbox audit --since` hands its value to: it returns a time
// or throws std::invalid_argument naming the value. Other exceptions, sanitizer reports
// and broken invariants are bugs:
//  - a relative form ("15m") never lies after `now`;
//  - a timestamp netbox prints (format_timestamp) reads back as the same timestamp.
#include "netbox/audit/query.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

namespace {

using netbox::audit::Clock;

[[noreturn]] void violated(const char* what, std::string_view raw, const std::string& detail) {
  std::fprintf(stderr, "fuzz_audit_since invariant: %s\n  input: '%.*s'\n  %s\n", what,
               static_cast<int>(raw.size()), raw.data(), detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // A fixed "now" keeps runs reproducible; the store's date range is 1970..2262.
  const Clock::time_point now{std::chrono::seconds(1795000000)};  // 2026-11-18
  Clock::time_point tp;
  try {
    tp = netbox::audit::parse_since(text, now);
  } catch (const std::invalid_argument& e) {
    // (what() is a C string, so only values without NUL can be looked for in it.)
    if (text.find('\0') == std::string_view::npos && std::string_view(e.what()).find(text) == std::string_view::npos)
      violated("the message does not name the value", text, e.what());
    return 0;
  }
  const bool relative = !text.empty() && std::string_view("smhdw").find(text.back()) != std::string_view::npos &&
                        text.find('-') == std::string_view::npos;
  if (relative && tp > now) violated("a relative time lies in the future", text, netbox::audit::format_timestamp(tp));

  const std::string printed = netbox::audit::format_timestamp(tp);
  Clock::time_point back;
  try {
    back = netbox::audit::parse_since(printed, now);
  } catch (const std::invalid_argument& e) {
    violated("a printed timestamp does not read back", text, e.what());
  }
  if (netbox::audit::format_timestamp(back) != printed)
    violated("a printed timestamp reads back as another", text, printed + " -> " + netbox::audit::format_timestamp(back));
  return 0;
}
