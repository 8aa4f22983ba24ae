#pragma once
// Leaf certificates for inspected hosts, minted from the CA in memory and never written
// to disk: EC P-256, valid 7 days (from an hour ago, for agents whose clock is behind),
// subjectAltName the host (a DNS name, or an IP address for a literal), serverAuth only.
#include "netbox/tls/certificate_authority.hpp"

#include <chrono>
#include <string>
#include <string_view>

namespace netbox::tls {

inline constexpr std::chrono::hours kLeafLifetime{24 * 7};

struct Leaf {
  CertHandle cert;
  KeyHandle key;  // shared by every leaf of one LeafMinter (see there)
  std::chrono::system_clock::time_point not_after;
};

class LeafMinter {
 public:
  // One EC key for all the leaves this minter signs, made here and held only in memory:
  // a key per leaf would cost a key generation per host for no protection (every leaf
  // is equally in the proxy's memory either way).
  explicit LeafMinter(const CertificateAuthority& ca);
  // `host` is a lower-case DNS name or an IP literal (IPv6 without brackets), as the
  // policy's target parser gives it. Throws CaError when OpenSSL refuses.
  Leaf mint(std::string_view host) const;

 private:
  const CertificateAuthority& ca_;
  KeyHandle key_;
};

}  // namespace netbox::tls
