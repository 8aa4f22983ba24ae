#include "openssl_text.hpp"

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include <array>
#include <memory>

namespace netbox::tls::detail {

void fail(const std::string& what) {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) throw CaError(what);
  std::array<char, 256> buf{};
  ERR_error_string_n(code, buf.data(), buf.size());
  throw CaError(what + ": " + buf.data());
}

CertHandle new_certificate(std::chrono::system_clock::time_point not_before,
                           std::chrono::system_clock::time_point not_after) {
  CertHandle cert(X509_new());
  if (!cert || X509_set_version(cert.get(), X509_VERSION_3) != 1) fail("creating a certificate");
  std::array<unsigned char, 16> serial{};
  if (RAND_bytes(serial.data(), static_cast<int>(serial.size())) != 1) fail("random serial");
  serial[0] &= 0x7f;  // positive, as RFC 5280 asks
  serial[0] |= 0x40;  // and never shorter than 16 bytes
  std::unique_ptr<BIGNUM, decltype(&BN_free)> bn(BN_bin2bn(serial.data(), static_cast<int>(serial.size()), nullptr),
                                                 BN_free);
  if (!bn || !BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert.get()))) fail("setting the serial");
  auto as_time_t = [](std::chrono::system_clock::time_point t) { return std::chrono::system_clock::to_time_t(t); };
  if (!ASN1_TIME_set(X509_getm_notBefore(cert.get()), as_time_t(not_before)) ||
      !ASN1_TIME_set(X509_getm_notAfter(cert.get()), as_time_t(not_after)))
    fail("setting the validity");
  return cert;
}

void add_extension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (!ext) fail(std::string("extension ") + OBJ_nid2sn(nid));
  int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  if (ok != 1) fail(std::string("adding extension ") + OBJ_nid2sn(nid));
}

void set_common_name(X509_NAME* name, const std::string& cn) {
  if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(cn.data()),
                                 static_cast<int>(cn.size()), -1, 0) != 1)
    fail("setting the common name");
}

}  // namespace netbox::tls::detail
