#include "netbox/tls/trust_store.hpp"

#include "netbox/tls/openssl_handles.hpp"

#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>

#include <memory>
#include <stdexcept>
#include <vector>

namespace netbox::tls {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct ObjectFree {
  void operator()(ASN1_OBJECT* o) const { ASN1_OBJECT_free(o); }
};
struct Pkcs12Free {
  void operator()(PKCS12* p) const { PKCS12_free(p); }
};
struct BagsFree {
  void operator()(STACK_OF(PKCS12_SAFEBAG)* s) const { sk_PKCS12_SAFEBAG_pop_free(s, PKCS12_SAFEBAG_free); }
};
struct SafesFree {
  void operator()(STACK_OF(PKCS7)* s) const { sk_PKCS7_pop_free(s, PKCS7_free); }
};

// The JDK's "trusted key usage" bag attribute, and the usage it names (any).
constexpr const char* kJdkTrustedKeyUsage = "2.16.840.1.113894.746875.1.1";
constexpr const char* kAnyExtendedKeyUsage = "2.5.29.37.0";

[[noreturn]] void fail(const std::string& what, const std::string& step) {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  char reason[256] = "unknown error";
  if (e != 0) ERR_error_string_n(e, reason, sizeof reason);
  throw std::runtime_error(what + ": " + step + ": " + reason);
}

std::vector<CertHandle> read_certificates(std::string_view pem, const std::string& what) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) fail(what, "out of memory");
  std::vector<CertHandle> certs;
  while (X509* c = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) certs.emplace_back(c);
  // The loop ends on "no start line" at the end of the text; any other error is a broken block.
  const unsigned long e = ERR_peek_last_error();
  if (e != 0 && !(ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE))
    fail(what, "a certificate does not parse");
  ERR_clear_error();
  if (certs.empty()) throw std::runtime_error(what + ": holds no PEM certificate");
  return certs;
}

}  // namespace

std::string certificates_pem(std::string_view pem, const std::string& what) {
  std::unique_ptr<BIO, BioFree> out(BIO_new(BIO_s_mem()));
  if (!out) fail(what, "out of memory");
  for (const auto& c : read_certificates(pem, what))
    if (PEM_write_bio_X509(out.get(), c.get()) != 1) fail(what, "writing PEM");
  char* data = nullptr;
  const long n = BIO_get_mem_data(out.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

std::string java_trust_store(std::string_view pem, const std::string& what) {
  const auto certs = read_certificates(pem, what);
  std::unique_ptr<ASN1_OBJECT, ObjectFree> any(OBJ_txt2obj(kAnyExtendedKeyUsage, 1));
  if (!any) fail(what, "anyExtendedKeyUsage");
  std::unique_ptr<STACK_OF(PKCS12_SAFEBAG), BagsFree> bags(sk_PKCS12_SAFEBAG_new_null());
  if (!bags) fail(what, "out of memory");
  for (std::size_t i = 0; i < certs.size(); ++i) {
    STACK_OF(PKCS12_SAFEBAG)* raw = bags.get();
    PKCS12_SAFEBAG* bag = PKCS12_add_cert(&raw, certs[i].get());
    if (!bag) fail(what, "adding a certificate");
    // The JDK takes an entry's alias from friendlyName; unique, or entries would replace each other.
    const std::string alias = "netbox-trust-" + std::to_string(i);
    if (PKCS12_add_friendlyname_asc(bag, alias.c_str(), static_cast<int>(alias.size())) != 1)
      fail(what, "naming a certificate");
    // len -1: the value is the ASN1_OBJECT itself (an OBJECT IDENTIFIER attribute value).
    if (PKCS12_add1_attr_by_txt(bag, kJdkTrustedKeyUsage, V_ASN1_OBJECT,
                                reinterpret_cast<const unsigned char*>(any.get()), -1) != 1)
      fail(what, "marking a certificate trusted for the JDK");
  }
  std::unique_ptr<STACK_OF(PKCS7), SafesFree> safes(sk_PKCS7_new_null());
  if (!safes) fail(what, "out of memory");
  STACK_OF(PKCS7)* raw_safes = safes.get();
  // nid -1: a plain (unencrypted) safe; certificates are public.
  if (!PKCS12_add_safe(&raw_safes, bags.get(), -1, 0, nullptr)) fail(what, "building the safe");
  std::unique_ptr<PKCS12, Pkcs12Free> p12(PKCS12_add_safes(safes.get(), 0));
  if (!p12) fail(what, "building the PKCS#12");
  unsigned char* der = nullptr;
  const int n = i2d_PKCS12(p12.get(), &der);
  if (n <= 0) fail(what, "encoding the PKCS#12");
  std::string out(reinterpret_cast<const char*>(der), static_cast<std::size_t>(n));
  OPENSSL_free(der);
  return out;
}

}  // namespace netbox::tls
