#pragma once
// The grammar of sizes and counts shared by `netbox launch`'s flags (--memory, --tmp-size,
// --rlimit-as, ...) and the policy's `sandbox` key, so both accept exactly the same text.
#include <cstdint>
#include <optional>
#include <string>

namespace netbox::policy {

// What "unlimited" parses to.
inline constexpr std::uint64_t kUnlimited = UINT64_MAX;

// "4G", "512M", "64k", "1024", "4GiB", "4gb", "unlimited" (binary units, any case).
// nullopt when malformed or too large.
std::optional<std::uint64_t> parse_size(const std::string& text);
// A plain whole number or "unlimited".
std::optional<std::uint64_t> parse_count(const std::string& text);

}  // namespace netbox::policy
