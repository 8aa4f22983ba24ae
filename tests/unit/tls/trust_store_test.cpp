// The agent's trust material: PEM re-encoded certificate by certificate (nothing else
// passes), and the JVM's PKCS#12 store, read back with OpenSSL as the JDK reads it: one
// certificate bag per certificate, each marked trusted for any use, no key anywhere.
#include "netbox/tls/trust_store.hpp"

#include "support/temp_dir.hpp"

#include "netbox/tls/certificate_authority.hpp"

#include <gtest/gtest.h>
#include <openssl/pkcs12.h>

namespace netbox::tls {
namespace {

TEST(TrustStore, OnlyCertificatesPassAndABrokenBlockIsRefused) {
  test::TempDir dir;
  const std::string ca = CertificateAuthority::create(dir.path() / "ca").certificate_pem();
  const std::string mixed = "# a comment\n" + ca + "-----BEGIN PRIVATE KEY-----\nMIGH\n-----END PRIVATE KEY-----\n" + ca;
  const std::string out = certificates_pem(mixed, "bundle");
  EXPECT_EQ(out, ca + ca);
  EXPECT_EQ(out.find("PRIVATE KEY"), std::string::npos);
  EXPECT_THROW(certificates_pem("no certificate here\n", "bundle"), std::runtime_error);
  EXPECT_THROW(certificates_pem("-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n", "bundle"),
               std::runtime_error);
}

TEST(TrustStore, TheJavaStoreHoldsEachCertificateAsATrustedBagAndNoKey) {
  test::TempDir dir;
  const std::string a = CertificateAuthority::create(dir.path() / "a").certificate_pem();
  const std::string b = CertificateAuthority::create(dir.path() / "b").certificate_pem();
  const std::string der = java_trust_store(a + b, "store");
  const unsigned char* p = reinterpret_cast<const unsigned char*>(der.data());
  PKCS12* p12 = d2i_PKCS12(nullptr, &p, static_cast<long>(der.size()));
  ASSERT_NE(p12, nullptr);
  STACK_OF(PKCS7)* safes = PKCS12_unpack_authsafes(p12);
  ASSERT_NE(safes, nullptr);
  ASSERT_EQ(sk_PKCS7_num(safes), 1);
  STACK_OF(PKCS12_SAFEBAG)* bags = PKCS12_unpack_p7data(sk_PKCS7_value(safes, 0));
  ASSERT_NE(bags, nullptr);
  ASSERT_EQ(sk_PKCS12_SAFEBAG_num(bags), 2);
  ASSERT_NE(OBJ_create("2.16.840.1.113894.746875.1.1", "nbxJdkTrust", "netbox test JDK trust"), NID_undef);
  for (int i = 0; i < 2; ++i) {
    const PKCS12_SAFEBAG* bag = sk_PKCS12_SAFEBAG_value(bags, i);
    EXPECT_EQ(PKCS12_SAFEBAG_get_nid(bag), NID_certBag);
    const ASN1_TYPE* trust = PKCS12_SAFEBAG_get0_attr(bag, OBJ_txt2nid("2.16.840.1.113894.746875.1.1"));
    ASSERT_NE(trust, nullptr) << "bag " << i << " is not marked trusted for the JDK";
    ASSERT_EQ(trust->type, V_ASN1_OBJECT);
    EXPECT_EQ(OBJ_obj2nid(trust->value.object), NID_anyExtendedKeyUsage);
    char* alias = PKCS12_get_friendlyname(const_cast<PKCS12_SAFEBAG*>(bag));
    ASSERT_NE(alias, nullptr);
    EXPECT_EQ(std::string(alias), "netbox-trust-" + std::to_string(i));
    OPENSSL_free(alias);
  }
  sk_PKCS12_SAFEBAG_pop_free(bags, PKCS12_SAFEBAG_free);
  sk_PKCS7_pop_free(safes, PKCS7_free);
  EXPECT_EQ(PKCS12_mac_present(p12), 0) << "no MAC: the JVM needs no password";
  PKCS12_free(p12);
  EXPECT_THROW(java_trust_store("", "store"), std::runtime_error);
}

}  // namespace
}  // namespace netbox::tls
