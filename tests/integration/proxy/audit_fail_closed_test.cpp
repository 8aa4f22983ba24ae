// Fail closed: while the audit store cannot write and already holds --audit-hold rows
// (here one), new requests get 503 and are not forwarded; once it writes again, requests
// flow and nothing queued was lost.
#include "proxy_fixture.hpp"

#include "netbox/audit/writer.hpp"

#include <sqlite3.h>

#include <thread>

namespace netbox::test {
namespace {

TEST_F(ProxyTest, RequestsAreRefusedWith503WhileTheAuditStoreCannotWrite) {
  audit_hold = 1;
  start_proxy(base_policy());
  ASSERT_EQ(proxy_get(port, upstream_url("/before")).status, 200);
  server->audit().flush();

  // Another process holds the write lock: the writer's commits fail after its busy timeout.
  StoreWriteLock lock(db_path);
  ASSERT_TRUE(lock.held());
  EXPECT_EQ(proxy_get(port, upstream_url("/during-lock")).status, 200);  // accepted into the queue
  ASSERT_TRUE(audit_turns_unhealthy()) << "the audit writer never reported the lock";
  const auto before = upstream.requests();
  auto refused = proxy_get(port, upstream_url("/refused"));
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.header("x-netbox-decision"), "error");
  EXPECT_NE(refused.body.find("audit"), std::string::npos) << refused.body;
  EXPECT_EQ(upstream.requests(), before) << "a request that cannot be audited must not be forwarded";

  lock.release();
  bool recovered = false;
  for (int i = 0; i < 600 && !recovered; ++i) {
    recovered = proxy_get(port, upstream_url("/after")).status == 200;
    if (!recovered) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(recovered);
  std::vector<std::string> paths;
  for (const auto& r : rows()) paths.push_back(r.path);
  EXPECT_NE(std::find(paths.begin(), paths.end(), "/during-lock"), paths.end()) << "the queued row was kept";
  EXPECT_EQ(std::find(paths.begin(), paths.end(), "/refused"), paths.end());
}

}  // namespace
}  // namespace netbox::test
