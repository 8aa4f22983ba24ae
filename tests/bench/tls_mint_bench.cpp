// Leaf minting rate (issue 16's target: >= 2,000 leaves/s): a throwaway CA in a temp
// folder, then COUNT leaves for distinct host names through LeafMinter (no cache), timed
// on one thread. Prints one JSON line for the harness.
#include "netbox/tls/leaf_certificate.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

int main(int argc, char** argv) {
  const long count = argc > 1 ? std::atol(argv[1]) : 5000;
  char templ[] = "/tmp/netbox-mint-XXXXXX";
  if (!::mkdtemp(templ)) return 1;
  const std::filesystem::path dir(templ);
  int rc = 0;
  try {
    auto ca = netbox::tls::CertificateAuthority::create(dir / "ca");
    netbox::tls::LeafMinter minter(ca);
    const auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < count; ++i) minter.mint("host-" + std::to_string(i) + ".bench.test");
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("{\"leaves\":%ld,\"seconds\":%.3f,\"leaves_per_s\":%.0f}\n", count, secs, count / secs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tls_mint_bench: %s\n", e.what());
    rc = 1;
  }
  std::filesystem::remove_all(dir);
  return rc;
}
