// What an agent sends, searched for known secret formats and its host name for labels that
// carry data (content/secret_formats.hpp), as content rules will search them. Invariants (a
// violation aborts):
//  - a finding names a kind of the versioned list and a 12-digit digest, never the value;
//  - a finding is stable: the same text gives the same finding;
//  - a secret found in a text is found in it again with anything appended (appending never
//    hides one; the scan is bounded, so only below that bound);
//  - an encoded label is a label of the name and says why.
#include "fuzz_invariant.hpp"
#include "netbox/content/secret_formats.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

using netbox::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace netbox::content;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto f = find_secret(text);
  if (f) {
    const auto formats = secret_formats();
    check(std::any_of(formats.begin(), formats.end(), [&](const SecretFormat& s) { return s.kind == f->kind; }),
          "a finding names a listed kind");
    check(f->digest.size() == 12 && f->digest.find_first_not_of("0123456789abcdef") == std::string::npos,
          "a finding's digest is 12 hex digits");
    const auto again = find_secret(text);
    check(again && again->kind == f->kind && again->digest == f->digest && again->encoding == f->encoding,
          "a finding is stable");
    if (size + 8 < kMaxSecretScan) check(find_secret(std::string(text) + " \n\"}%zz==").has_value(),
                                         "appending never hides a secret");
  }
  std::string host(text.substr(0, 253));
  std::transform(host.begin(), host.end(), host.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (const auto e = encoded_label(host)) {
    check(host.find(e->label) != std::string::npos, "an encoded label is a label of the name");
    check(!e->why.empty(), "an encoded label says why");
  }
  return 0;
}
