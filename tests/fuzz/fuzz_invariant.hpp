#pragma once
// What every fuzzer does when one of its invariants breaks: say which, and abort so that
// libFuzzer keeps the input as a finding.
#include <cstdio>
#include <cstdlib>

namespace netbox::fuzz {

inline void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "invariant broken: %s\n", what);
    std::abort();
  }
}

}  // namespace netbox::fuzz
