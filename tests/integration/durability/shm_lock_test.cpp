// A process that can open the database's -shm takes a POSIX read lock on its WAL lock
// bytes, so the writer's commits fail with "database is locked" (issue 12, item 1). The
// store's location keeps agents from doing this (audit_location_test); here a hostile
// process does it anyway (the test itself, as root), and the writer must lose nothing:
// requests taken while the lock is held are answered, their rows kept in memory, and
// written, with the agent's end, once the lock goes, even when it goes during shutdown.
#include "durability_fixture.hpp"

#include "support/proxy_client.hpp"
#include "support/sqlite_query.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <thread>

namespace netbox::test {
namespace {

namespace asio = boost::asio;
using json = nlohmann::json;
using namespace std::chrono_literals;

// SQLite's WAL-index lock bytes in the -shm (WALINDEX_LOCK_OFFSET, eight of them: the
// write lock, the checkpoint lock, the recovery lock and the read marks).
constexpr off_t kWalLockOffset = 120;
constexpr off_t kWalLockBytes = 8;

// What an agent did with `netbox-audit.db-shm` when it could open it: read-only, and a
// read lock is all it needs to hold the writer off.
class ShmReadLock {
 public:
  explicit ShmReadLock(const std::filesystem::path& shm) : fd_(::open(shm.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) return;
    struct flock lk {};
    lk.l_type = F_RDLCK;
    lk.l_whence = SEEK_SET;
    lk.l_start = kWalLockOffset;
    lk.l_len = kWalLockBytes;
    locked_ = ::fcntl(fd_, F_SETLK, &lk) == 0;
  }
  ~ShmReadLock() { release(); }
  ShmReadLock(const ShmReadLock&) = delete;
  ShmReadLock& operator=(const ShmReadLock&) = delete;
  bool locked() const { return locked_; }
  void release() {
    if (fd_ >= 0) ::close(fd_);  // closing drops the lock
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  bool locked_ = false;
};

json control_call(asio::local::stream_protocol::socket& s, const json& req) {
  const auto line = req.dump() + "\n";
  asio::write(s, asio::buffer(line));
  asio::streambuf buf;
  asio::read_until(s, buf, '\n');
  std::istream is(&buf);
  std::string reply;
  std::getline(is, reply);
  return json::parse(reply);
}

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = 60s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

TEST_F(DurabilityTest, AReadLockOnTheShmLosesNoRowAndTheAgentsRowIsEnded) {
  const auto sock = dir.path() / "control.sock";
  start_proxy({"--control", sock.string(), "--audit-shutdown-wait", "120"});
  asio::io_context ioc;
  asio::local::stream_protocol::socket control(ioc);
  control.connect(asio::local::stream_protocol::endpoint(sock.string()));
  ASSERT_EQ(control_call(control,
                         {{"op", "register"}, {"addr", "127.0.0.1"}, {"agent", "victim"},
                          {"launch", {{"pid", 0}, {"command_line", "agent"}, {"address", "127.0.0.1"}}}})["ok"],
            true);
  ASSERT_EQ(proxy_get(port, url("/before")).status, 200);
  ASSERT_TRUE(eventually([&] { return query_column(db_path, "SELECT COUNT(*) FROM agents")[0] == "1"; }))
      << proxy->log();

  ShmReadLock hostile(db_path.string() + "-shm");
  ASSERT_TRUE(hostile.locked()) << std::strerror(errno);
  // The next commit waits out the busy timeout, then fails: the writer says so once.
  ASSERT_EQ(proxy_get(port, url("/first-under-lock")).status, 200);
  ASSERT_TRUE(eventually([&] { return proxy->log().find("cannot write") != std::string::npos; }))
      << "the lock never stopped the writer: " << proxy->log();

  // Meanwhile requests are still answered, allowed and denied alike, and nothing is lost.
  std::vector<std::string> sent = {"/before", "/first-under-lock"};
  for (int i = 0; i < 30; ++i) {
    const std::string path = "/under-lock/" + std::to_string(i);
    EXPECT_EQ(proxy_get(port, url(path)).status, 200) << proxy->log();
    sent.push_back(path);
  }
  for (int i = 0; i < 30; ++i)
    EXPECT_EQ(proxy_get(port, "http://denied.test/under-lock/" + std::to_string(i)).status, 403);
  ASSERT_EQ(control_call(control, {{"op", "unregister"}, {"addr", "127.0.0.1"}, {"exit_status", 0}})["ok"],
            true);

  // Shutdown waits for the store; the lock goes while it does.
  std::thread release([&] {
    std::this_thread::sleep_for(1s);
    hostile.release();
  });
  const int status = proxy->stop(SIGTERM, 120s);
  release.join();
  EXPECT_EQ(status, 0) << proxy->log();
  EXPECT_EQ(proxy->log().find("are lost"), std::string::npos) << proxy->log();

  EXPECT_EQ(query_column(db_path, "PRAGMA integrity_check"), std::vector<std::string>{"ok"});
  const auto paths = row_paths();
  for (const auto& p : sent)
    EXPECT_NE(std::find(paths.begin(), paths.end(), p), paths.end()) << p << " was answered but has no row";
  EXPECT_EQ(query_column(db_path, "SELECT SUM(count) FROM requests WHERE decision = 'deny'"),
            std::vector<std::string>{"30"});
  EXPECT_EQ(query_column(db_path, "SELECT COUNT(*) FROM agents WHERE name = 'victim' AND ended IS NOT NULL"),
            std::vector<std::string>{"1"})
      << "the agent's end was lost";
  const auto kinds = query_column(db_path, "SELECT kind FROM events ORDER BY id");
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "audit_error"), kinds.end());
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "audit_recovered"), kinds.end());
}

}  // namespace
}  // namespace netbox::test
