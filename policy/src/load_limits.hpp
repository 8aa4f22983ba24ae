#pragma once
// Reading `limits` (top level or agents.NAME.limits) and the values its keys and the
// guardian's share: positive counts, durations, sizes.
#include "load_context.hpp"
#include "netbox/policy/policy.hpp"

#include <chrono>
#include <cstdint>
#include <optional>

namespace netbox::policy::detail {

// Replaces in `limits` the keys `object` names; the others stay (an agent's entry starts
// from the top level's). `list_prefix` is "" or "agents.NAME."; destination entries cite it.
void read_limits(const LoadContext& ctx, const nlohmann::json& object, const std::string& pointer,
                 const std::string& list_prefix, Limits& limits);

// A positive integer up to 2147483647.
std::uint64_t positive(const LoadContext& ctx, const nlohmann::json& v, const std::string& pointer);
// A duration in the one grammar (netbox/policy/duration.hpp) or a number of seconds; > 0.
std::chrono::milliseconds positive_duration(const LoadContext& ctx, const nlohmann::json& v,
                                            const std::string& pointer);
// A size in the flags' grammar ("64M", "1G") or a whole number of bytes, >= 1; with
// `unlimited_ok`, "unlimited" is nullopt (lifts an inherited budget).
std::optional<std::uint64_t> byte_size(const LoadContext& ctx, const nlohmann::json& v, const std::string& pointer,
                                       bool unlimited_ok);

}  // namespace netbox::policy::detail
