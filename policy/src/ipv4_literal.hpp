#pragma once
// Strict reading of every IPv4 form inet_aton(3) accepts, so that a numeric host can
// never pass as a name: "127.1", "2130706433", "0x7f000001", "0177.0.0.1", "0x7f.1".
#include <cstdint>
#include <optional>
#include <string_view>

namespace netbox::policy::detail {

enum class NumericHost {
  not_numeric,   // the last label has a letter beyond hex notation: a name
  address,       // understood; `value` holds the address in host byte order
  malformed,     // looks numeric but is no valid address (e.g. 1.2.3.256, 08.0.0.1)
};

struct Ipv4Reading {
  NumericHost kind = NumericHost::not_numeric;
  uint32_t value = 0;
};

// `text` is already lowercased and has no trailing dot.
Ipv4Reading read_ipv4_literal(std::string_view text);

}  // namespace netbox::policy::detail
