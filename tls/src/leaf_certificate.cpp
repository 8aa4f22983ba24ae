#include "netbox/tls/leaf_certificate.hpp"

#include "openssl_text.hpp"

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <memory>

namespace netbox::tls {
namespace {

using Clock = std::chrono::system_clock;

// A name fit for a certificate: what the policy's target parser lets through (lower-case
// letters, digits, '-', '_' and '.' labels, at most 253 bytes). Anything else is refused
// here too, so no text of a request can shape a certificate's fields.
bool certifiable_name(std::string_view host) {
  if (host.empty() || host.size() > 253 || host.front() == '.' || host.back() == '.') return false;
  return std::all_of(host.begin(), host.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
  });
}

struct NamesFree {
  void operator()(GENERAL_NAMES* n) const { GENERAL_NAMES_free(n); }
};

void add_subject_alt_name(X509* cert, std::string_view host) {
  std::unique_ptr<GENERAL_NAMES, NamesFree> names(sk_GENERAL_NAME_new_null());
  GENERAL_NAME* name = GENERAL_NAME_new();
  if (!names || !name) detail::fail("subjectAltName");
  const std::string text(host);
  // An IP literal is certified as an iPAddress, which is what clients match it against.
  if (ASN1_OCTET_STRING* ip = a2i_IPADDRESS(text.c_str())) {
    GENERAL_NAME_set0_value(name, GEN_IPADD, ip);
  } else {
    ERR_clear_error();
    if (!certifiable_name(host)) {
      GENERAL_NAME_free(name);
      throw CaError("cannot mint a certificate for '" + text + "': not a host name");
    }
    ASN1_IA5STRING* dns = ASN1_IA5STRING_new();
    if (!dns || ASN1_STRING_set(dns, text.data(), static_cast<int>(text.size())) != 1) {
      ASN1_IA5STRING_free(dns);
      GENERAL_NAME_free(name);
      detail::fail("subjectAltName");
    }
    GENERAL_NAME_set0_value(name, GEN_DNS, dns);
  }
  if (sk_GENERAL_NAME_push(names.get(), name) == 0) {
    GENERAL_NAME_free(name);
    detail::fail("subjectAltName");
  }
  if (X509_add1_ext_i2d(cert, NID_subject_alt_name, names.get(), 0, X509V3_ADD_DEFAULT) != 1)
    detail::fail("subjectAltName");
}

}  // namespace

LeafMinter::LeafMinter(const CertificateAuthority& ca) : ca_(ca), key_(EVP_EC_gen("P-256")) {
  if (!key_) detail::fail("generating the leaf key");
}

Leaf LeafMinter::mint(std::string_view host) const {
  const auto now = Clock::now();
  const auto not_after = now + kLeafLifetime;
  CertHandle cert = detail::new_certificate(now - std::chrono::hours(1), not_after);
  // The subject is informative only (clients match the SAN); a CN holds 64 bytes at most.
  if (host.size() <= 64) detail::set_common_name(X509_get_subject_name(cert.get()), std::string(host));
  add_subject_alt_name(cert.get(), host);
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_.certificate())) != 1 ||
      X509_set_pubkey(cert.get(), key_.get()) != 1)
    detail::fail("filling in a leaf certificate");
  detail::add_extension(cert.get(), ca_.certificate(), NID_basic_constraints, "critical,CA:FALSE");
  detail::add_extension(cert.get(), ca_.certificate(), NID_key_usage, "critical,digitalSignature");
  detail::add_extension(cert.get(), ca_.certificate(), NID_ext_key_usage, "serverAuth");
  detail::add_extension(cert.get(), ca_.certificate(), NID_authority_key_identifier, "keyid:always");
  if (X509_sign(cert.get(), ca_.key(), EVP_sha256()) <= 0) detail::fail("signing a leaf certificate");
  if (EVP_PKEY_up_ref(key_.get()) != 1) detail::fail("leaf key reference");
  return Leaf{std::move(cert), KeyHandle(key_.get()), not_after};
}

}  // namespace netbox::tls
