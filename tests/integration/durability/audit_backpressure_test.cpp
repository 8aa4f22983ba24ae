// Audit rows dropped under load (issue 12, item 14): a flood of pipelined denied requests
// filled the writer's queue; rows were dropped and other clients' allowed requests got
// 503. Now a full queue is back pressure: the proxy reads no further from its clients
// until the writer has room. Here the queue is tiny and folding is off, so every denied
// request needs a queue slot: the flood is slowed down, never a row is lost, and another
// client is still answered 200 meanwhile.
#include "pipelined_flood.hpp"

#include "netbox/audit/writer.hpp"
#include "netbox/proxy/server.hpp"
#include "support/proxy_client.hpp"
#include "support/sqlite_query.hpp"
#include "support/temp_dir.hpp"
#include "support/upstream_server.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace netbox::test {
namespace {

constexpr std::size_t kFlood = 20000;

TEST(AuditBackPressure, AFloodOfPipelinedDeniedRequestsLosesNoRowAndOthersAreStillServed) {
  TempDir dir;
  UpstreamServer upstream;
  const auto policy = dir.write("policy.json", R"({"version": 1, "allow": ["upstream.test"], "ports": [)" +
                                                   std::to_string(upstream.port()) +
                                                   R"(], "internal": {"allow": ["127.0.0.1/32"]},
      "resolve": {"upstream.test": ["127.0.0.1"]}})");
  const auto db = dir.path() / "audit.db";
  proxy::ProxyOptions o;
  o.listen.emplace_back(boost::asio::ip::make_address("127.0.0.1"), 0);
  o.policy_file = policy;
  o.audit_db = db;
  o.threads = 2;
  o.audit_queue = 16;             // full in a blink
  o.audit_fold_refusals = false;  // every denied request needs a row, and so a slot
  auto server = std::make_unique<proxy::Server>(std::move(o));
  server->start();
  const auto port = server->local_endpoints().at(0).port();

  std::atomic<bool> flooding{true};
  std::atomic<std::size_t> served{0}, other{0};
  std::thread neighbour([&] {
    ProxyConnection conn(port, std::chrono::seconds(60));
    const auto url = "http://upstream.test:" + std::to_string(upstream.port()) + "/neighbour";
    // Through the flood, and at least once whatever the timing.
    while (flooding || served + other == 0) {
      const auto r = conn.send("GET " + url + " HTTP/1.1\r\nHost: upstream.test\r\n\r\n");
      if (r.status == 200) ++served;
      else ++other;
      if (r.status == 0) break;
    }
  });
  const auto flood = pipelined_flood(port, kFlood, [](std::size_t i) {
    return "GET http://denied.test/" + std::to_string(i) + " HTTP/1.1\r\nHost: denied.test\r\n\r\n";
  });
  flooding = false;
  neighbour.join();

  EXPECT_EQ(flood.answers, kFlood) << flood.error;
  EXPECT_EQ(flood.statuses.count(403) ? flood.statuses.at(403) : 0, kFlood) << "no 503 for a full queue";
  EXPECT_GT(served.load(), 0u) << "the other client was not served during the flood";
  EXPECT_EQ(other.load(), 0u) << "the other client got something else than 200";
  const auto stats = server->audit().stats();
  EXPECT_GT(stats.room_waits, 0u) << "the queue never filled: the test did not test back pressure";
  EXPECT_EQ(stats.rejected, 0u);
  server->stop();
  server.reset();

  EXPECT_EQ(query_column(db, "SELECT COUNT(*) FROM requests WHERE host = 'denied.test'"),
            std::vector<std::string>{std::to_string(kFlood)});
  EXPECT_EQ(query_column(db, "SELECT COUNT(*) FROM requests WHERE host = 'upstream.test'"),
            std::vector<std::string>{std::to_string(served.load())});
}

}  // namespace
}  // namespace netbox::test
