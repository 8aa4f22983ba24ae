// The SIEM export (issue 26 item 3): a real proxy with TLS inspection and a credential
// (CredentialsFixture), a DNS view, real upstreams and an OTLP/HTTP receiver (python's
// http.server) on loopback. What the export writes is validated against the OCSF schema's
// own class files (tests/data/ocsf, check_ocsf.py), grepped for the credential's secret and
// placeholder, and compared with what the receiver got; a receiver that is down or that
// never answers must cost the proxy nothing but counted drops.
#include "credentials_fixture.hpp"
#include "export_files.hpp"

#include "support/background_process.hpp"
#include "support/curl.hpp"
#include "support/process.hpp"

#include "netbox/audit/writer.hpp"
#include "netbox/export/exporter.hpp"

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

namespace netbox::test {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

// Up to 20 s: a wait, not a timing claim.
bool eventually(const std::function<bool()>& pred) {
  for (int i = 0; i < 800; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return false;
}

// Loopback addresses of this process for the DNS view's agent (0: the host side, 1: the
// agent); ctest runs test processes in parallel and each view binds port 53 of its own.
const char* dns_loopback(int which) {
  static const std::array<std::string, 2> addresses = [] {
    const unsigned n = static_cast<unsigned>(::getpid());
    std::array<std::string, 2> out;
    for (unsigned i = 0; i < 2; ++i)
      out[i] = "127." + std::to_string(230 + i) + "." + std::to_string((n / 254) % 256) + "." + std::to_string(n % 254 + 1);
    return out;
  }();
  return addresses[static_cast<std::size_t>(which)].c_str();
}

// One A query for `name` from the DNS agent's address; the answer's rcode, or -1.
int ask_dns(const std::string& name) {
  std::vector<std::uint8_t> q{0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
  std::size_t start = 0;
  while (start <= name.size()) {
    const auto dot = std::min(name.find('.', start), name.size());
    q.push_back(static_cast<std::uint8_t>(dot - start));
    q.insert(q.end(), name.begin() + static_cast<std::ptrdiff_t>(start), name.begin() + static_cast<std::ptrdiff_t>(dot));
    start = dot + 1;
  }
  q.insert(q.end(), {0, 0, 1, 0, 1});
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in me{}, to{};
  me.sin_family = to.sin_family = AF_INET;
  ::inet_pton(AF_INET, dns_loopback(1), &me.sin_addr);
  ::inet_pton(AF_INET, dns_loopback(0), &to.sin_addr);
  to.sin_port = htons(53);
  ::bind(fd, reinterpret_cast<sockaddr*>(&me), sizeof me);
  ::sendto(fd, q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
  pollfd p{fd, POLLIN, 0};
  std::uint8_t buf[1500];
  int rcode = -1;
  if (::poll(&p, 1, 5000) == 1 && ::recv(fd, buf, sizeof buf, 0) >= 12) rcode = buf[3] & 0xf;
  ::close(fd);
  return rcode;
}

class ExportTest : public CredentialsFixture {
 protected:
  ExportTest() {
    jsonl = dir.path() / "export.jsonl";
    tune = [this](proxy::ProxyOptions& o) {
      std::vector<siem::SinkSpec> sinks{siem::parse_sink("ocsf-jsonl:" + jsonl.string())};
      for (const auto& s : extra_sinks) sinks.push_back(siem::parse_sink(s));
      exporter = std::make_shared<siem::Exporter>(sinks, export_options);
      o.exporter = exporter;
    };
  }

  // The proxy, its agent "coder" and a DNS view for the agent "dns-agent".
  void start_all() {
    start();
    proxy::AgentAttachment a;
    a.addr = boost::asio::ip::make_address(dns_loopback(1));
    a.name = "dns-agent";
    a.listen = boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address(dns_loopback(0)), 0);
    a.dns_pool = policy::Cidr::parse("198.18.0.0/15");
    a.credentials.push_back({"openai", kPlaceholder, proxy::Secret(kSecret)});  // the policy's credential
    dns_agent = server->attach_agent(a);
  }
  // Every row is complete, the proxy stopped and the exporter drained (its destructor).
  void stop_all() {
    rows();
    if (dns_agent) server->detach_agent(*dns_agent);
    dns_agent.reset();
    stop_proxy();
    exporter.reset();
  }

  RunResult curl(std::vector<std::string> args) const {
    args.insert(args.begin(), {"-x", "http://127.0.0.1:" + std::to_string(port), "--cacert", ca_pem.string()});
    return curl_with_status(args);
  }
  std::string plain(const std::string& host, const std::string& path) const {
    return "http://" + host + ":" + std::to_string(upstream.port()) + path;
  }

  // Every kind of exchange the export maps, each answered as the policy says.
  void exercise() {
    EXPECT_EQ(proxy_get(port, plain("plain.test", "/allowed")).status, 200);
    EXPECT_EQ(proxy_get(port, "http://denied.test/refused").status, 403);
    {
      ProxyConnection tunnel(port);  // a blind CONNECT tunnel, one request through it
      ASSERT_EQ(tunnel.send("CONNECT plain.test:" + std::to_string(upstream.port()) + " HTTP/1.1\r\nHost: plain.test\r\n\r\n",
                            true).status, 200);
      tunnel.write("GET /through HTTP/1.1\r\nHost: plain.test\r\nConnection: close\r\n\r\n");
      EXPECT_EQ(tunnel.read_exactly(12), "HTTP/1.1 200");
    }
    auto inspected = curl({"-H", std::string("Authorization: Bearer ") + kPlaceholder,
                           "https://upstream.test:" + std::to_string(tls_upstream.port()) + "/v1/inspected"});
    EXPECT_EQ(status_of(inspected), 200) << inspected.err;
    // The tripwire: the placeholder sent to another host, in a header and in the path.
    EXPECT_EQ(proxy_get(port, plain("other.test", "/x"), std::string("X-Trace: ") + kPlaceholder + "\r\n").status, 403);
    EXPECT_EQ(proxy_get(port, plain("other.test", std::string("/k/") + kPlaceholder)).status, 403);
    EXPECT_EQ(ask_dns("refused.evil.test"), 3);  // NXDOMAIN, and a dns row
    EXPECT_EQ(ask_dns("upstream.test"), 0);
  }

  // What netbox_export_dropped_total{sink} says (the proxy's counters, which /metrics
  // renders; export_flags_test reads the metric itself), -1 for no such sink.
  double dropped(const std::string& sink) {
    for (const auto& x : server->counters().exports)
      if (x.sink == sink) return static_cast<double>(x.dropped);
    return -1;
  }
  std::string metrics() {
    std::string out;
    for (const auto& x : server->counters().exports)
      out += x.sink + " exported " + std::to_string(x.exported) + " dropped " + std::to_string(x.dropped) + "\n";
    return out;
  }

  std::filesystem::path jsonl;
  std::vector<std::string> extra_sinks;
  siem::ExporterOptions export_options;
  std::shared_ptr<siem::Exporter> exporter;
  std::optional<proxy::AttachedAgent> dns_agent;
};

json attribute(const json& log_record, const std::string& key) {
  for (const auto& a : log_record["attributes"])
    if (a["key"] == key) return a["value"];
  return nullptr;
}

TEST_F(ExportTest, EveryKindOfExchangeIsAnOcsfRecordOfItsClassThatValidatesAgainstTheSchema) {
  start_all();
  exercise();
  stop_all();

  const auto records = json_lines(jsonl);
  std::map<int, int> classes;
  for (const auto& r : records) ++classes[r["class_uid"].get<int>()];
  EXPECT_GE(classes[4002], 4) << "HTTP Activity: the allowed, refused, inspected and tripped requests";
  EXPECT_GE(classes[4001], 2) << "Network Activity: the CONNECT tunnel and the inspected one";
  EXPECT_EQ(classes[4003], 1) << "DNS Activity: the refused query";
  // Findings: the refused request, the two tripped ones with their two exfiltration events, the DNS refusal.
  EXPECT_GE(classes[2004], 6);

  bool inspected = false, tunnel = false, tripwire = false;
  for (const auto& r : records) {
    const auto& n = r["unmapped"]["netbox"];
    EXPECT_EQ(r["metadata"]["version"], siem::kOcsfVersion);
    EXPECT_TRUE(n.contains("agent")) << r.dump();
    if (r["class_uid"] == 4002 && n["inspected"] == true && n.value("path", "") == "/v1/inspected") {
      inspected = true;
      EXPECT_EQ(r["http_request"]["url"]["scheme"], "https");
      EXPECT_EQ(r["http_response"]["code"], 200);
    }
    if (r["class_uid"] == 4001 && n["kind"] == "connect" && n["host"] == "plain.test") {
      tunnel = true;
      EXPECT_EQ(r["activity_id"], 2);  // Close: the row is exported when the tunnel ends
      EXPECT_GT(r["traffic"]["bytes_in"].get<int>(), 0);
    }
    if (r["class_uid"] == 2004 && n.value("event", "") == "exfiltration_attempt") {
      tripwire = true;
      EXPECT_EQ(r["finding_info"]["analytic"]["name"], "credentials.openai");
      EXPECT_EQ(r["severity_id"], 4);
    }
  }
  EXPECT_TRUE(inspected);
  EXPECT_TRUE(tunnel);
  EXPECT_TRUE(tripwire);

  const auto check = check_ocsf(jsonl);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_THAT(check.out, HasSubstr("detection_finding"));
  EXPECT_THAT(check.out, HasSubstr("dns_activity"));
  EXPECT_THAT(check.out, HasSubstr("http_activity"));
  EXPECT_THAT(check.out, HasSubstr("network_activity"));

  // The checker can fail: the same records with a required attribute gone, an enum id
  // the class does not have, a number as a string.
  auto broken = records.front();
  broken.erase("time");
  auto bad_enum = records.front();
  bad_enum["activity_id"] = 77;
  bad_enum["type_uid"] = bad_enum["class_uid"].get<int>() * 100 + 77;
  auto bad_type = records.front();
  bad_type["severity_id"] = "1";
  const auto bad_file = dir.path() / "bad.jsonl";
  std::ofstream(bad_file) << broken.dump() << "\n" << bad_enum.dump() << "\n" << bad_type.dump() << "\n";
  const auto bad = check_ocsf(bad_file);
  EXPECT_EQ(bad.exit_code, 1) << bad.out;
  EXPECT_THAT(bad.out, HasSubstr("required attribute time is missing"));
  EXPECT_THAT(bad.out, HasSubstr("activity_id = 77 is not one of"));
  EXPECT_THAT(bad.out, HasSubstr("severity_id = '1' is not a integer_t"));

  // Neither the secret nor the placeholder, nor the placeholder's random part alone.
  const auto bytes = file_bytes(jsonl);
  EXPECT_EQ(bytes.find(kSecret), std::string::npos);
  EXPECT_EQ(bytes.find(kPlaceholder), std::string::npos);
  EXPECT_EQ(bytes.find("00112233445566778899aabbccddeeff"), std::string::npos);
  EXPECT_THAT(bytes, HasSubstr("[withheld: holds a credential's placeholder]"));  // the tripped path

  // Created like the audit store: nothing for others.
  struct stat st {};
  ASSERT_EQ(::stat(jsonl.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07, 0u);
  EXPECT_EQ(st.st_mode & 022, 0u);
}

TEST_F(ExportTest, AnOtlpReceiverGetsEveryRecordTheFileGets) {
  Receiver receiver(dir.path(), "ok");
  extra_sinks = {receiver.sink()};
  start_all();
  exercise();
  stop_all();

  const auto records = json_lines(jsonl);
  const auto received = receiver.log_records();
  ASSERT_FALSE(records.empty());
  ASSERT_EQ(received.size(), records.size());
  std::multiset<std::int64_t> file_classes, otlp_classes;
  for (const auto& r : records) file_classes.insert(r["class_uid"].get<std::int64_t>());
  for (const auto& lr : received) {
    otlp_classes.insert(std::stoll(attribute(lr, "ocsf.class_uid")["intValue"].get<std::string>()));
    EXPECT_EQ(attribute(lr, "ocsf.version")["stringValue"], siem::kOcsfVersion);
    EXPECT_FALSE(attribute(lr, "netbox.agent").is_null()) << lr.dump();
    EXPECT_TRUE(lr["body"].contains("kvlistValue"));
  }
  EXPECT_EQ(otlp_classes, file_classes);
  const auto bytes = file_bytes(receiver.out);
  EXPECT_EQ(bytes.find(kSecret), std::string::npos);
  EXPECT_EQ(bytes.find(kPlaceholder), std::string::npos);
}

TEST_F(ExportTest, WithTheReceiverDownTheProxyServesAndTheDropsAreCounted) {
  const auto down = "otlp-http://127.0.0.1:" + std::to_string(free_port());  // nothing listens
  extra_sinks = {down};
  export_options.otlp_backoff_first = std::chrono::milliseconds(20);
  start_all();
  exercise();
  EXPECT_TRUE(eventually([&] { return dropped(down) > 0; })) << metrics();
  EXPECT_EQ(dropped("ocsf-jsonl:" + jsonl.string()), 0);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(proxy_get(port, plain("plain.test", "/still")).status, 200);
  stop_all();
  EXPECT_GE(json_lines(jsonl).size(), 30u);  // the file got every record all the same
}

// A receiver that accepts and never answers holds one POST until the timeout; records
// pile up in the sink's bounded buffer and past it are dropped. Requests never wait.
TEST_F(ExportTest, AHostileSlowReceiverNeverStallsRequests) {
  Receiver receiver(dir.path(), "slow");
  extra_sinks = {receiver.sink()};
  export_options.otlp_timeout = std::chrono::seconds(60);
  export_options.otlp_buffer = 16;
  export_options.otlp_batch = 4;
  export_options.shutdown_wait = std::chrono::milliseconds(200);
  start_all();
  ProxyConnection agent(port);
  for (int i = 0; i < 200; ++i) {
    const auto r = agent.send("GET " + plain("plain.test", "/n" + std::to_string(i)) +
                              " HTTP/1.1\r\nHost: plain.test\r\n\r\n");
    ASSERT_EQ(r.status, 200) << i << " " << r.error;
  }
  EXPECT_TRUE(eventually([&] { return dropped(receiver.sink()) > 0; })) << metrics();
  stop_all();
  EXPECT_GE(json_lines(jsonl).size(), 200u);
}

}  // namespace
}  // namespace netbox::test
