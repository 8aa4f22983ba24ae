// policy::normalize_request_path on arbitrary bytes, as an agent's request target would be,
// then path_matches on what it returned. Invariants (a violation aborts):
//  - an accepted path is canonical: it starts with '/', has no empty, "." or ".."
//    segment, no escape of an unreserved character, no lower-case hex, and normalising it
//    again gives itself (what is matched is what is forwarded, and stays so);
//  - no accepted path holds a byte a path may not, an encoded slash, backslash or NUL;
//  - a refusal always says why and gives no path;
//  - a canonical path matches itself as a pattern, and "/*" matches every path.
#include "fuzz_invariant.hpp"
#include "netbox/policy/request_path.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using netbox::fuzz::check;

bool unreserved(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace netbox::policy;
  const std::string target(reinterpret_cast<const char*>(data), size);
  RequestPath r = normalize_request_path(target);
  if (!r.ok()) {
    check(r.path.empty(), "a refused target still has a path");
    return 0;
  }
  const std::string& p = r.path;
  check(!p.empty() && p.front() == '/', "the path does not start with '/'");
  check(p.find("//") == std::string::npos, "an empty segment was kept");
  for (const char* dot : {"/./", "/../"}) check(p.find(dot) == std::string::npos, "a dot segment was kept");
  check(!(p.size() >= 2 && p.compare(p.size() - 2, 2, "/.") == 0), "a trailing '.' segment was kept");
  check(!(p.size() >= 3 && p.compare(p.size() - 3, 3, "/..") == 0), "a trailing '..' segment was kept");
  for (std::size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    check(c != '\\' && c != '?' && c != '#' && static_cast<unsigned char>(c) > 0x20 &&
              static_cast<unsigned char>(c) < 0x7f,
          "a byte no path may hold");
    if (c != '%') continue;
    check(i + 2 < p.size(), "a cut escape");
    const std::string hex = p.substr(i + 1, 2);
    for (char h : hex) check((h >= '0' && h <= '9') || (h >= 'A' && h <= 'F'), "hex not upper-case");
    const char decoded = static_cast<char>(std::stoi(hex, nullptr, 16));
    check(!unreserved(decoded), "an escaped unreserved character was kept");
    check(decoded != '/' && decoded != '\\' && decoded != '\0', "an encoded slash, backslash or NUL was accepted");
  }
  RequestPath again = normalize_request_path(p);
  check(again.ok() && again.path == p, "normalising twice changed the path");
  check(path_matches(p, p) || p.find('*') != std::string::npos, "a path does not match itself");
  check(path_matches("/*", p), "'/*' did not match a path");
  return 0;
}
