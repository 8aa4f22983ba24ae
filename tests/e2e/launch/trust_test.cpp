// The agent of an inspecting launch trusts the netbox CA with no configuration (issue 16
// item 5): curl, Python (urllib and requests), Node, git and the JVM inside `netbox launch --ca-dir`, given no
// flag and no certificate, each complete an inspected GET to a real TLS upstream on
// loopback, and the audit has each inner request. The agent cannot replace the bundle it
// is shown, and a launch that does not inspect leaves the system bundle as it is.
#include "launch_fixture.hpp"

#include "support/sqlite_query.hpp"
#include "support/temp_dir.hpp"
#include "support/tls_upstream_server.hpp"

#include "netbox/tls/certificate_authority.hpp"

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include <signal.h>

#include <fstream>
#include <sstream>

namespace netbox::launch_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string file_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

constexpr const char* kBundle = "/etc/ssl/certs/ca-certificates.crt";

TEST(LaunchTrust, CurlPythonNodeGitAndJavaTrustTheNetboxCaWithNoConfiguration) {
  NETBOX_REQUIRE_ROOT();
  const bool java = std::filesystem::exists("/usr/bin/java");
  const bool node = std::filesystem::exists("/usr/bin/node");
  const bool requests = std::filesystem::exists("/usr/lib/python3/dist-packages/requests");
  // scripts/install-deps.sh installs all three: a missing one is a broken machine, not a skip.
  ASSERT_TRUE(java && node && requests) << "java " << java << ", node " << node << ", python3-requests " << requests;
  const auto subnet = test_subnet(57);
  test::TlsUpstreamServer upstream("allowed.test");
  test::TempDir dir;
  const auto ca = tls::CertificateAuthority::create(dir.path() / "ca");
  HostDir host;
  const auto src = host.java_get();
  const std::string host_bundle = file_text(kBundle);

  auto j = nlohmann::json::parse(policy_json(upstream.port()));
  j["inspect"] = {"allowed.test"};
  auto policy = dir.write("policy.json", j.dump());
  auto db = dir.path() / "audit.db";
  const std::string url = "https://allowed.test:" + std::to_string(upstream.port());
  // Node 20's fetch reads no proxy variable; its https module through the proxy's
  // CONNECT is what a proxy-aware Node program does, and it verifies with Node's own
  // roots plus NODE_EXTRA_CA_CERTS.
  const std::string node_get =
      "const u = new URL(process.argv[1]); const p = new URL(process.env.HTTPS_PROXY);"
      "require('http').request({host: p.hostname, port: p.port, method: 'CONNECT', path: u.host})"
      ".on('connect', (res, socket) => require('https').get({host: u.hostname, path: u.pathname, socket,"
      " agent: false, servername: u.hostname}, r => { console.log('node=' + r.statusCode); r.resume(); })"
      ".on('error', e => console.log('node error ' + e.message))).end();";
  std::string script =
      std::string(kCurl) + " -sS -o /dev/null -w 'curl=%{http_code}\\n' " + url + "/curl; " + kPython +
      " -c 'import sys, urllib.request; print(\"python=%d\" % urllib.request.urlopen(sys.argv[1]).status)' " + url +
      "/python; git ls-remote " + url + "/repo.git >/dev/null 2>git.err; sed 's/^/git: /' git.err | grep -i 'certificate\\|ssl'; echo git done; ";
  if (requests)
    script += std::string(kPython) + " -c 'import sys, requests; print(\"requests=%d\" % requests.get(sys.argv[1]).status_code)' " +
              url + "/requests; ";
  if (node) script += "node -e \"" + node_get + "\" " + url + "/node; ";
  // Node's fetch ignores the proxy variables: captured, and inspected like a CONNECT.
  if (node)
    script += "node -e \"fetch(process.argv[1]).then(r => console.log('fetch=' + r.status))"
              ".catch(e => console.log('fetch error ' + (e.cause || e).message))\" " + url + "/fetch; ";
  if (java) script += "java " + src.string() + " " + url + "/java; ";
  // The hostile part: replace the bundle, add a root beside it, read the CA key.
  script += std::string("echo evil >> ") + kBundle + " 2>/dev/null; echo append=$?; cp /dev/null /run/netbox-trust/x " +
            "2>/dev/null; echo add=$?; cat " + (dir.path() / "ca" / "ca.key").string() +
            " >/dev/null 2>&1; echo key=$?; grep -c 'PRIVATE KEY' " + kBundle + " /run/netbox-trust/netbox-ca.pem";
  auto r = launch(subnet,
                  {"--policy", policy.string(), "--audit-db", db.string(), "--ca-dir", (dir.path() / "ca").string(),
                   "--upstream-ca", upstream.ca_pem().string(), "--workdir", host.folder("work", std::filesystem::perms(0777)).string(),
                   "--", kSh, "-c", script},
                  std::chrono::seconds(180));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;  // grep -c counted 0 keys (status 1)
  EXPECT_THAT(r.out, HasSubstr("curl=200")) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("python=200")) << r.out << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("git: ")));  // git's complaints about TLS, if any
  if (requests) {
    EXPECT_THAT(r.out, HasSubstr("requests=200")) << r.out << r.err;
  }
  if (node) {
    EXPECT_THAT(r.out, HasSubstr("node=200")) << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr("fetch=200")) << r.out << r.err;
  }
  if (java) {
    EXPECT_THAT(r.out, HasSubstr("java: 200")) << r.out << r.err;
  }
  EXPECT_THAT(r.out, Not(HasSubstr("append=0")));
  EXPECT_THAT(r.out, Not(HasSubstr("add=0")));
  EXPECT_THAT(r.out, Not(HasSubstr("key=0"))) << "the CA key is not the agent's to read";
  EXPECT_THAT(r.out, HasSubstr(std::string(kBundle) + ":0"));
  EXPECT_THAT(r.out, HasSubstr("netbox-ca.pem:0"));
  EXPECT_EQ(file_text(kBundle), host_bundle) << "the host's own bundle is never changed";

  std::vector<std::vector<std::string>> want = {{"/curl", "200"}, {"/python", "200"}, {"/repo.git/info/refs", "200"},
                                                {"/repo.git/HEAD", "200"}};  // git's dumb-HTTP discovery
  if (requests) want.push_back({"/requests", "200"});
  if (node) want.push_back({"/node", "200"});
  if (java) want.push_back({"/java", "200"});
  EXPECT_EQ(test::query(db, "SELECT r.path, r.status FROM requests r JOIN requests t ON t.id = r.parent_id "
                            "WHERE t.kind = 'connect' ORDER BY r.id"),
            want);
  EXPECT_EQ(test::query(db, "SELECT r.path, r.status FROM requests r JOIN requests t ON t.id = r.parent_id "
                            "WHERE t.kind = 'transparent' ORDER BY r.id"),
            (std::vector<std::vector<std::string>>{{"/fetch", "200"}}));
  expect_nothing_left(subnet);
}

// A shared `netbox proxy --control --ca-dir` names its CA certificate in its "info" reply;
// the launch shows the agent that one, and curl trusts it with no flag.
TEST(LaunchTrust, AnAgentOfARunningInspectingProxyTrustsThatProxysCa) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(59);
  test::TlsUpstreamServer upstream("allowed.test");
  test::TempDir dir;
  tls::CertificateAuthority::create(dir.path() / "ca");
  HostDir host;
  auto j = nlohmann::json::parse(policy_json(upstream.port()));
  j["inspect"] = {"allowed.test"};
  auto policy = dir.write("policy.json", j.dump());
  SharedProxy proxy(host, policy,
                    {"--ca-dir", (dir.path() / "ca").string(), "--upstream-ca", upstream.ca_pem().string()});
  ASSERT_TRUE(proxy.ready()) << proxy.err();
  const std::string url = "https://allowed.test:" + std::to_string(upstream.port()) + "/shared";
  auto r = launch(subnet, {"--proxy-control", proxy.socket().string(), "--", kSh, "-c",
                           std::string(kCurl) + " -sS -o /dev/null -w 'curl=%{http_code}\\n' " + url});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("curl=200")) << r.err;
  EXPECT_EQ(upstream.requests(), 1u);
  EXPECT_EQ(proxy.stop(), 0) << proxy.err();
  expect_nothing_left(subnet);
}

TEST(LaunchTrust, ALaunchThatDoesNotInspectLeavesTheSystemBundleAndTheVariablesAlone) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(58);
  test::TempDir dir;
  auto policy = dir.write("policy.json", policy_json(1));
  auto r = launch(subnet, {"--policy", policy.string(), "--audit-db", (dir.path() / "audit.db").string(), "--", kSh,
                           "-c", std::string("echo bytes=$(wc -c < ") + kBundle + "); ls /run/netbox-trust 2>&1; env"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("bytes=" + std::to_string(file_text(kBundle).size()) + "\n")) << "the host's bundle";
  EXPECT_THAT(r.out, HasSubstr("No such file or directory"));
  for (const char* var : {"SSL_CERT_FILE=", "REQUESTS_CA_BUNDLE=", "CURL_CA_BUNDLE=", "NODE_EXTRA_CA_CERTS=",
                          "GIT_SSL_CAINFO=", "PIP_CERT=", "javax.net.ssl"})
    EXPECT_THAT(r.out, Not(HasSubstr(var)));
  expect_nothing_left(subnet);
}

TEST(LaunchTrust, ExplainSaysWhatTheAgentTrusts) {
  NETBOX_REQUIRE_ROOT();
  const auto subnet = test_subnet(109);
  test::TempDir dir;
  tls::CertificateAuthority::create(dir.path() / "ca");
  auto with_ca = launch(subnet, {"--explain", "--ca-dir", (dir.path() / "ca").string(), "--", kSh, "-c", "true"});
  EXPECT_EQ(with_ca.exit_code, 0) << with_ca.err;
  EXPECT_THAT(with_ca.out, HasSubstr("trust: the host's roots and the netbox CA (--ca-dir " +
                                     (dir.path() / "ca").string() + ") in " + kBundle));
  auto without = launch(subnet, {"--explain", "--", kSh, "-c", "true"});
  EXPECT_THAT(without.out, HasSubstr("trust: the host's roots, unchanged\n"));
}

}  // namespace
}  // namespace netbox::launch_test
