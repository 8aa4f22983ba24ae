// Client certificates on the proxy's TLS listener (issue 26 item 5, smokescreen's model):
// `--listen-cert/--listen-key` make the HTTP listener an HTTPS proxy, `--client-ca` and
// `--client-certs` make each client show a certificate whose subject (CN or URI SAN) the
// certificate book maps to an agent and profile. Real curl (`--proxy https://`,
// `--proxy-cert`), certificates from test CAs made with the openssl tool: a mapped
// certificate is its agent with its profile, forwarded and through CONNECT; none, one
// from another CA, an expired one and an unmapped subject each get 407 and a row (rule
// `client_cert`); --allow-anonymous serves only the client that showed none.
#include "proxy_fixture.hpp"

#include "support/curl.hpp"
#include "support/process.hpp"

#include <gmock/gmock.h>

#include <openssl/pem.h>
#include <openssl/x509.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <thread>

namespace netbox::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

struct Pem {
  fs::path crt, key;
};

void openssl(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"openssl"};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto r = run(argv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// A CA of its own (EC P-256, a day).
Pem make_ca(const fs::path& dir, const std::string& name) {
  Pem ca{dir / (name + ".crt"), dir / (name + ".key")};
  openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", ca.key.string(),
           "-out", ca.crt.string(), "-subj", "/CN=" + name, "-days", "1", "-addext", "basicConstraints=critical,CA:TRUE",
           "-addext", "keyUsage=critical,keyCertSign"});
  return ca;
}

// A certificate for `subject` signed by `ca`, with the extensions `ext` (openssl x509 -extfile).
Pem make_cert(const fs::path& dir, const Pem& ca, const std::string& name, const std::string& subject,
              const std::string& ext) {
  Pem c{dir / (name + ".crt"), dir / (name + ".key")};
  const auto csr = dir / (name + ".csr"), extfile = dir / (name + ".ext");
  std::ofstream(extfile) << ext;
  openssl({"req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", c.key.string(),
           "-out", csr.string(), "-subj", subject});
  openssl({"x509", "-req", "-in", csr.string(), "-CA", ca.crt.string(), "-CAkey", ca.key.string(), "-out",
           c.crt.string(), "-days", "1", "-extfile", extfile.string()});
  return c;
}

// Re-signs `c` by `ca` with a validity that ended yesterday: only its dates are wrong.
void expire(const Pem& c, const Pem& ca) {
  FILE* f = std::fopen(c.crt.c_str(), "r");
  X509* cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  f = std::fopen(ca.key.c_str(), "r");
  EVP_PKEY* key = PEM_read_PrivateKey(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  ASSERT_TRUE(cert && key);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3 * 86400);
  X509_gmtime_adj(X509_getm_notAfter(cert), -86400);
  ASSERT_GT(X509_sign(cert, key, EVP_sha256()), 0);
  f = std::fopen(c.crt.c_str(), "w");
  PEM_write_X509(f, cert);
  std::fclose(f);
  X509_free(cert);
  EVP_PKEY_free(key);
}

class ClientCertsTest : public ProxyTest {
 protected:
  void start(bool allow_anonymous = false, std::size_t max_clients = 0) {
    const auto d = dir.path();
    listener_ca = make_ca(d, "listener-ca");
    listener = make_cert(d, listener_ca, "listener", "/CN=netbox-proxy",
                         "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
    client_ca = make_ca(d, "client-ca");
    const std::string client_ext = "extendedKeyUsage=clientAuth\n";
    good = make_cert(d, client_ca, "good", "/CN=ci-runner-01", client_ext);
    spiffe = make_cert(d, client_ca, "spiffe", "/O=corp", client_ext + "subjectAltName=URI:spiffe://corp/ci\n");
    unmapped = make_cert(d, client_ca, "unmapped", "/CN=stranger", client_ext);
    expired = make_cert(d, client_ca, "expired", "/CN=ci-runner-01", client_ext);
    expire(expired, client_ca);
    const auto other_ca = make_ca(d, "other-ca");
    foreign = make_cert(d, other_ca, "foreign", "/CN=ci-runner-01", client_ext);  // the right name, the wrong CA
    book = d / "client-certs.json";
    std::ofstream(book) << R"({"version": 1, "certificates": [
      {"cn": "ci-runner-01", "agent": "ci-runner", "profile": "builders"},
      {"uri": "spiffe://corp/ci", "agent": "spiffe-runner", "profile": "builders"}]})";
    fs::permissions(book, fs::perms::owner_read | fs::perms::owner_write);
    configure = [this, allow_anonymous, max_clients](proxy::ProxyOptions& o) {
      o.listen_tls = proxy::ListenerTlsFiles{listener.crt, listener.key, client_ca.crt, book};
      o.allow_anonymous = allow_anonymous;
      o.max_client_connections = max_clients;
    };
    start_proxy(base_policy(R"("allow": ["nothing.test"], "agents": {"builders": {"allow": ["upstream.test"]}})"));
  }

  // curl through the TLS listener, showing `cert` (none when its paths are empty).
  RunResult get(const Pem& cert, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"--proxy", "https://127.0.0.1:" + std::to_string(port), "--proxy-cacert",
                                  listener_ca.crt.string()};
    if (!cert.crt.empty()) args.insert(args.end(), {"--proxy-cert", cert.crt.string(), "--proxy-key", cert.key.string()});
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(upstream_url("/echo"));
    return curl_with_status(args);
  }

  void expect_refused(const RunResult& r, const std::string& reason) {
    EXPECT_EQ(status_of(r), 407) << reason << ": " << r.out << r.err;
    EXPECT_THAT(body_of(r), HasSubstr(reason));
    const auto row = last_row();
    EXPECT_EQ(row.decision, "deny") << reason;
    EXPECT_EQ(row.rule, "client_cert") << reason;
    EXPECT_EQ(row.status, 407) << reason;
    EXPECT_EQ(row.agent, "anonymous") << reason;
    EXPECT_THAT(row.reason, HasSubstr(reason));
  }

  Pem listener_ca, listener, client_ca, good, spiffe, unmapped, expired, foreign;
  fs::path book;
};

TEST_F(ClientCertsTest, AMappedCertificateIsItsAgentWithItsProfileForwardedAndThroughConnect) {
  start();
  auto r = get(good);
  EXPECT_EQ(status_of(r), 200) << r.out << r.err;
  auto row = last_row();
  EXPECT_EQ(row.agent, "ci-runner");
  EXPECT_EQ(row.decision, "allow");
  EXPECT_EQ(row.method, "GET");

  auto t = get(good, {"--proxytunnel"});
  EXPECT_EQ(status_of(t), 200) << t.out << t.err;
  row = last_row();
  EXPECT_EQ(row.agent, "ci-runner");
  EXPECT_EQ(row.method, "CONNECT");
  EXPECT_EQ(row.decision, "allow");

  auto s = get(spiffe);  // a URI subject alternative name
  EXPECT_EQ(status_of(s), 200) << s.out << s.err;
  EXPECT_EQ(last_row().agent, "spiffe-runner");
  EXPECT_EQ(upstream.requests(), 3u);
}

TEST_F(ClientCertsTest, NoForeignExpiredOrUnmappedCertificateGetsThroughAndEachIsRecorded) {
  start();
  expect_refused(get({}), "needs a client certificate");
  expect_refused(get(foreign), "is not trusted");
  expect_refused(get(expired), "certificate has expired");
  expect_refused(get(unmapped), "CN=stranger is not in the certificate book");
  // CONNECT too: the tunnel is never opened.
  auto t = get(unmapped, {"--proxytunnel"});
  EXPECT_NE(status_of(t), 200) << t.out << t.err;
  EXPECT_EQ(last_row().rule, "client_cert");
  EXPECT_EQ(last_row().method, "CONNECT");
  EXPECT_EQ(upstream.requests(), 0u);
}

// A certificate taken out of the book stops a connection already open with it at its
// next request (407), as a revoked token does: keep-alive is no way to outlast revocation.
TEST_F(ClientCertsTest, ACertificateTakenOutOfTheBookStopsItsOpenConnection) {
  start();
  const auto first = dir.path() / "first-done", go = dir.path() / "go";
  // One TLS connection to the listener with the certificate, two requests on it; between
  // them the test edits the book.
  const std::string script = R"(
import os, socket, ssl, sys, time
port, ca, crt, key, url, first, go = sys.argv[1:8]
ctx = ssl.create_default_context(cafile=ca)
ctx.load_cert_chain(crt, key)
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(port))), server_hostname="127.0.0.1")
f = s.makefile("rb")
def ask():
    s.sendall(("GET " + url + " HTTP/1.1\r\nHost: upstream.test\r\n\r\n").encode())
    status = f.readline().split()[1].decode()
    length = 0
    while True:
        line = f.readline()
        if line in (b"\r\n", b""): break
        if line.lower().startswith(b"content-length:"): length = int(line.split(b":")[1])
    f.read(length)
    return status
print(ask(), flush=True)
open(first, "w").close()
while not os.path.exists(go): time.sleep(0.05)
print(ask(), flush=True)
)";
  RunResult r;
  std::thread client([&] {
    r = run({"python3", "-c", script, std::to_string(port), listener_ca.crt.string(), good.crt.string(),
             good.key.string(), upstream_url("/echo"), first.string(), go.string()});
  });
  for (int i = 0; i < 400 && !fs::exists(first); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  EXPECT_TRUE(fs::exists(first));
  std::ofstream(book) << R"({"version": 1, "certificates": [
    {"uri": "spiffe://corp/ci", "agent": "spiffe-runner", "profile": "builders"}]})";
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the book is looked at once a second
  std::ofstream(go).close();
  client.join();
  EXPECT_EQ(r.out, "200\n407\n") << r.err;
  const auto row = last_row();
  EXPECT_EQ(row.rule, "client_cert");
  EXPECT_EQ(row.status, 407);
  EXPECT_THAT(row.reason, HasSubstr("CN=ci-runner-01 is no longer in the certificate book"));
  EXPECT_EQ(upstream.requests(), 1u);
}

TEST_F(ClientCertsTest, AllowAnonymousServesOnlyTheClientThatShowedNoCertificate) {
  start(true);
  auto none = get({});
  EXPECT_EQ(status_of(none), 403) << "served as anonymous: the top level does not allow upstream.test";
  EXPECT_EQ(last_row().agent, "anonymous");
  EXPECT_NE(last_row().rule, "client_cert");
  EXPECT_EQ(status_of(get(foreign)), 407) << "a bad certificate is never downgraded to anonymous";
  EXPECT_EQ(status_of(get(good)), 200);
}

// Over the connection caps, the TLS listener answers in TLS: a fatal alert the client's
// TLS reports (never an HTTP 503 in plaintext where the client reads a TLS record, which
// it would report as a broken record), and the proxy serves again once there is room.
TEST_F(ClientCertsTest, AClientOverTheCapsGetsATlsAlertNotPlaintext) {
  start(false, 1);
  const int held = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(held, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);  // the one slot, mid-handshake
  auto r = get(good);
  EXPECT_EQ(status_of(r), 0) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("alert internal error")) << r.err;
  EXPECT_THAT(r.out + r.err, Not(HasSubstr("503")));
  ::close(held);
  int status = 0;  // the slot is freed when the proxy sees the close: polled, bounded
  for (int i = 0; i < 100 && (status = status_of(get(good))) != 200; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(status, 200) << "the slot was never freed";
  EXPECT_EQ(upstream.requests(), 1u);
}

TEST_F(ClientCertsTest, BadListenerFilesStopTheProxyNamingTheFlag) {
  const auto d = dir.path();
  const auto ca = make_ca(d, "ca");
  const auto leaf = make_cert(d, ca, "leaf", "/CN=x", "extendedKeyUsage=serverAuth\n");
  std::ofstream(d / "policy.json") << R"({"allow": ["upstream.test"]})";
  fs::permissions(d / "policy.json", fs::perms::owner_read | fs::perms::owner_write);
  const auto start_with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"proxy", "--policy", (d / "policy.json").string(), "--listen", "127.0.0.1:0",
                                  "--audit-db", (d / "audit.db").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_netbox(args, std::chrono::seconds(20));
  };
  auto r = start_with({"--listen-cert", (d / "missing.crt").string(), "--listen-key", leaf.key.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--listen-cert " + (d / "missing.crt").string()));
  r = start_with({"--listen-cert", leaf.crt.string(), "--listen-key", ca.key.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("not the key of --listen-cert"));
  r = start_with({"--listen-cert", leaf.crt.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--listen-cert needs --listen-key"));
  r = start_with({"--listen-cert", leaf.crt.string(), "--listen-key", leaf.key.string(), "--client-ca", ca.crt.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--client-ca needs --client-certs"));
  std::ofstream(d / "book.json") << R"({"version": 1, "certificates": [{"cn": "x"}]})";
  fs::permissions(d / "book.json", fs::perms::owner_read | fs::perms::owner_write);
  r = start_with({"--listen-cert", leaf.crt.string(), "--listen-key", leaf.key.string(), "--client-ca", ca.crt.string(),
                  "--client-certs", (d / "book.json").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("book.json: certificates[0].agent: missing"));
  r = start_with({"--listen-cert", leaf.crt.string(), "--listen-key", leaf.key.string(), "--client-ca",
                  (d / "missing-ca.pem").string(), "--client-certs", (d / "book.json").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--client-ca " + (d / "missing-ca.pem").string()));
}

}  // namespace
}  // namespace netbox::test
