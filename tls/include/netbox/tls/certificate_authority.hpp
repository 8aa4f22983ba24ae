#pragma once
// The netbox CA: an EC P-256 key and a self-signed certificate (CA:true, pathlen 0, ten
// years) in a folder only root reads, by default /var/lib/netbox/ca. `netbox ca init`
// creates it once; the proxy loads it to mint leaf certificates for inspected hosts.
//
// Files: ca.key (PKCS#8 PEM, mode 0600, never readable by anyone else: a key others can
// read is refused at load, since whoever holds it can impersonate every host to every
// agent that trusts the CA) and ca.crt (PEM, 0644, what agents trust).
#include "netbox/tls/openssl_handles.hpp"

#include <filesystem>
#include <stdexcept>
#include <string>

namespace netbox::tls {

// What went wrong with the CA, worded for the user (the file and the reason).
class CaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr const char* kDefaultCaDir = "/var/lib/netbox/ca";

class CertificateAuthority {
 public:
  // Creates the folder (0700) if missing and writes a new CA into it. Refuses when a
  // ca.key or ca.crt is already there: replacing a CA silently would break every agent
  // and bundle that trusts the old one.
  static CertificateAuthority create(const std::filesystem::path& dir);
  // Loads and checks: key file owned by this user and not readable by group or others,
  // certificate a CA (basicConstraints CA:true) matching the key, and valid now.
  static CertificateAuthority load(const std::filesystem::path& dir);

  X509* certificate() const { return cert_.get(); }
  EVP_PKEY* key() const { return key_.get(); }
  std::string certificate_pem() const;
  // SHA-256 of the DER certificate, as colon-separated upper-case hex (what `openssl
  // x509 -fingerprint -sha256` prints), for checking a bundle by eye.
  std::string fingerprint_sha256() const;
  std::string subject() const;
  std::string not_after() const;  // ISO 8601 UTC

 private:
  CertificateAuthority(CertHandle cert, KeyHandle key) : cert_(std::move(cert)), key_(std::move(key)) {}
  CertHandle cert_;
  KeyHandle key_;
};

}  // namespace netbox::tls
