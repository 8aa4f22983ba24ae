#include "netbox/tls/certificate_authority.hpp"

#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

namespace netbox::tls {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

// Seconds from now until the certificate's notAfter.
long long seconds_left(X509* cert) {
  int days = 0, secs = 0;
  EXPECT_EQ(ASN1_TIME_diff(&days, &secs, nullptr, X509_get0_notAfter(cert)), 1);
  return days * 86400LL + secs;
}

TEST(CertificateAuthority, InitWritesAKeyOnlyItsOwnerReadsAndACaCertificateThatLoadsBack) {
  test::TempDir tmp;
  const fs::path dir = tmp.path() / "var" / "ca";  // parents made too
  auto made = CertificateAuthority::create(dir);
  EXPECT_EQ(mode_of(dir), 0700u);
  EXPECT_EQ(mode_of(dir / "ca.key"), 0600u);
  EXPECT_EQ(mode_of(dir / "ca.crt"), 0644u);

  auto loaded = CertificateAuthority::load(dir);
  EXPECT_EQ(loaded.fingerprint_sha256(), made.fingerprint_sha256());
  EXPECT_EQ(loaded.fingerprint_sha256().size(), 32u * 3 - 1);
  EXPECT_THAT(loaded.subject(), HasSubstr("CN=netbox CA "));
  EXPECT_THAT(loaded.subject(), HasSubstr("O=netbox"));
  X509* cert = loaded.certificate();
  EXPECT_EQ(X509_check_ca(cert), 1);
  EXPECT_EQ(X509_get_pathlen(cert), 0);
  EXPECT_TRUE(X509_get_key_usage(cert) & KU_KEY_CERT_SIGN);
  EXPECT_EQ(EVP_PKEY_get_base_id(loaded.key()), EVP_PKEY_EC);
  EXPECT_EQ(EVP_PKEY_get_bits(loaded.key()), 256);
  // Ten years, give or take the leap days.
  EXPECT_GT(seconds_left(cert), 3650LL * 86400 - 3600);
  EXPECT_LT(seconds_left(cert), 3654LL * 86400);
  EXPECT_THAT(loaded.not_after(), ::testing::MatchesRegex("20[0-9][0-9]-[01][0-9]-[0-3][0-9]T.*Z"));
  // Self-signed: its own signature checks out with its own key.
  EXPECT_EQ(X509_verify(cert, loaded.key()), 1);
  // The PEM agents get is the certificate alone, never the key.
  EXPECT_THAT(loaded.certificate_pem(), HasSubstr("BEGIN CERTIFICATE"));
  EXPECT_THAT(loaded.certificate_pem(), ::testing::Not(HasSubstr("PRIVATE")));
}

TEST(CertificateAuthority, InitNeverReplacesAnExistingCa) {
  test::TempDir tmp;
  auto first = CertificateAuthority::create(tmp.path() / "ca");
  try {
    CertificateAuthority::create(tmp.path() / "ca");
    FAIL() << "a second init replaced the CA";
  } catch (const CaError& e) {
    EXPECT_THAT(e.what(), HasSubstr("already exists"));
  }
  EXPECT_EQ(CertificateAuthority::load(tmp.path() / "ca").fingerprint_sha256(), first.fingerprint_sha256());
}

TEST(CertificateAuthority, AKeyOthersCanReadOrChangeIsRefused) {
  test::TempDir tmp;
  const fs::path dir = tmp.path() / "ca";
  CertificateAuthority::create(dir);
  for (mode_t bad : {0640, 0604, 0620}) {
    ASSERT_EQ(::chmod((dir / "ca.key").c_str(), bad), 0);
    try {
      CertificateAuthority::load(dir);
      ADD_FAILURE() << "loaded a key of mode " << std::oct << bad;
    } catch (const CaError& e) {
      EXPECT_THAT(e.what(), HasSubstr((dir / "ca.key").string()));
      EXPECT_THAT(e.what(), HasSubstr("lets other users read or change the CA key"));
    }
  }
  ASSERT_EQ(::chmod((dir / "ca.key").c_str(), 0600), 0);
  if (::geteuid() == 0) {
    // A key someone else owns could be swapped under the proxy by that user.
    ASSERT_EQ(::chown((dir / "ca.key").c_str(), 65534, 65534), 0);
    EXPECT_THROW(CertificateAuthority::load(dir), CaError);
    ASSERT_EQ(::chown((dir / "ca.key").c_str(), 0, 0), 0);
  }
  // Nor a folder where others can replace the files.
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  EXPECT_THROW(CertificateAuthority::load(dir), CaError);
  ASSERT_EQ(::chmod(dir.c_str(), 0700), 0);
  EXPECT_NO_THROW(CertificateAuthority::load(dir));
}

TEST(CertificateAuthority, ASymlinkedKeyAMismatchedPairAndNonsenseAreRefusedByName) {
  test::TempDir tmp;
  const fs::path a = tmp.path() / "a", b = tmp.path() / "b";
  CertificateAuthority::create(a);
  CertificateAuthority::create(b);
  // b's certificate with a's key: whoever could write the certificate would choose the CA.
  fs::remove(b / "ca.crt");
  fs::copy_file(a / "ca.crt", b / "ca.crt");
  try {
    CertificateAuthority::load(b);
    FAIL() << "a key and a certificate of two CAs were taken as one";
  } catch (const CaError& e) {
    EXPECT_THAT(e.what(), HasSubstr("does not belong to"));
  }
  // A link could point the proxy at any key on the machine.
  fs::remove(b / "ca.key");
  fs::create_symlink(a / "ca.key", b / "ca.key");
  EXPECT_THROW(CertificateAuthority::load(b), CaError);
  fs::remove(b / "ca.key");
  {
    std::ofstream(b / "ca.key") << "not a key\n";
  }
  ::chmod((b / "ca.key").c_str(), 0600);
  try {
    CertificateAuthority::load(b);
    FAIL() << "nonsense loaded as a key";
  } catch (const CaError& e) {
    EXPECT_THAT(e.what(), HasSubstr("not a PEM private key"));
  }
  EXPECT_THROW(CertificateAuthority::load(tmp.path() / "missing"), CaError);
}

}  // namespace
}  // namespace netbox::tls
