// `netbox ca init` / `netbox ca show`, checked with the openssl tool a user would use.
#include "support/process.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

namespace {

using netbox::test::run;
using netbox::test::run_netbox;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

TEST(CaCli, InitMakesACaThatOpensslReadsAsOneAndShowPrintsIt) {
  netbox::test::TempDir tmp;
  const std::string dir = (tmp.path() / "ca").string();
  auto made = run_netbox({"ca", "init", "--dir", dir});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_THAT(made.out, HasSubstr("created the netbox CA in " + dir));
  EXPECT_THAT(made.out, HasSubstr("sha256 fingerprint: "));

  auto pem = run_netbox({"ca", "show", "--dir", dir, "--pem"});
  ASSERT_EQ(pem.exit_code, 0) << pem.err;
  EXPECT_EQ(pem.out.rfind("-----BEGIN CERTIFICATE-----", 0), 0u) << "--pem prints the certificate alone";
  tmp.write("shown.pem", pem.out);
  auto x509 = run({"openssl", "x509", "-in", (tmp.path() / "shown.pem").string(), "-noout", "-fingerprint", "-sha256",
                   "-ext", "basicConstraints,keyUsage"});
  ASSERT_EQ(x509.exit_code, 0) << x509.err;
  EXPECT_THAT(x509.out, HasSubstr("CA:TRUE, pathlen:0"));
  EXPECT_THAT(x509.out, HasSubstr("Certificate Sign"));
  // The fingerprint init and show print is the one openssl computes.
  const auto at = x509.out.find('=');
  const std::string fingerprint = x509.out.substr(at + 1, x509.out.find('\n') - at - 1);
  EXPECT_THAT(made.out, HasSubstr(fingerprint));
  auto shown = run_netbox({"ca", "show", "--dir", dir});
  EXPECT_EQ(shown.exit_code, 0);
  EXPECT_THAT(shown.out, HasSubstr(fingerprint));
  EXPECT_THAT(shown.out, HasSubstr("-----BEGIN CERTIFICATE-----"));
  EXPECT_THAT(shown.out + made.out, ::testing::Not(HasSubstr("PRIVATE KEY")));
  // --format json: the same fields, for scripts.
  auto json = run_netbox({"ca", "show", "--dir", dir, "--format", "json"});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  const auto shown_json = nlohmann::json::parse(json.out);
  EXPECT_EQ(shown_json.at("sha256_fingerprint"), fingerprint);
  EXPECT_THAT(shown_json.at("pem").get<std::string>(), HasSubstr("-----BEGIN CERTIFICATE-----"));
  // The key is the owner's alone and parses as an EC P-256 key.
  struct stat st {};
  ASSERT_EQ(::stat((fs::path(dir) / "ca.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto key = run({"openssl", "pkey", "-in", dir + "/ca.key", "-noout", "-text"});
  EXPECT_THAT(key.out, HasSubstr("prime256v1"));
}

TEST(CaCli, ASecondInitAndAnExposedKeyExitTwoNamingTheFile) {
  netbox::test::TempDir tmp;
  const std::string dir = (tmp.path() / "ca").string();
  ASSERT_EQ(run_netbox({"ca", "init", "--dir", dir}).exit_code, 0);
  auto again = run_netbox({"ca", "init", "--dir", dir});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_THAT(again.err, HasSubstr(dir + "/ca.key: already exists"));
  ASSERT_EQ(::chmod((dir + "/ca.key").c_str(), 0644), 0);
  auto exposed = run_netbox({"ca", "show", "--dir", dir});
  EXPECT_EQ(exposed.exit_code, 2);
  EXPECT_THAT(exposed.err, HasSubstr("netbox ca show: " + dir + "/ca.key: mode 0644"));
  EXPECT_EQ(exposed.out, "") << "nothing of a CA that does not load is printed";
  auto missing = run_netbox({"ca", "show", "--dir", (tmp.path() / "none").string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("cannot open the CA folder"));
  auto bare = run_netbox({"ca"});
  EXPECT_EQ(bare.exit_code, 2);
  EXPECT_THAT(bare.err, HasSubstr("netbox ca --help"));
}

}  // namespace
