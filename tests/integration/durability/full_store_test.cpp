// The audit store runs out of space (a small tmpfs): once the writer holds --audit-hold
// rows, new requests are refused with 503 and a reason instead of going out unaudited, nothing crashes, service returns when space
// does, rows accepted before the failure are kept, and `events` records both transitions.
#include "durability_fixture.hpp"

#include "support/proxy_client.hpp"
#include "support/sqlite_query.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>

namespace netbox::test {
namespace {

using namespace std::chrono_literals;

// A tmpfs mounted for the test and detached at scope exit.
class SmallTmpfs {
 public:
  SmallTmpfs(const std::filesystem::path& where, const std::string& size) : path_(where) {
    std::filesystem::create_directories(path_);
    // mode=0700: a tmpfs root is 1777 by default, a place netbox refuses for its store.
    ok_ = ::mount("tmpfs", path_.c_str(), "tmpfs", 0, ("size=" + size + ",mode=0700").c_str()) == 0;
  }
  ~SmallTmpfs() {
    if (ok_) ::umount2(path_.c_str(), MNT_DETACH);
  }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;
  bool mounted() const { return ok_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  bool ok_ = false;
};

// Writes to `file` until the file system says it is full.
void fill(const std::filesystem::path& file) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  const std::string block(64 * 1024, 'x');
  for (;;) {
    const auto n = ::write(fd, block.data(), block.size());
    if (n <= 0) break;
  }
  // Whatever is left is smaller than a block: take it byte by byte.
  while (::write(fd, "x", 1) == 1) {
  }
  ::close(fd);
}

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = 30s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

TEST_F(DurabilityTest, FullAuditStoreRefusesWith503AndRecoversWhenSpaceReturns) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root (CI runs as root)";
  SmallTmpfs fs(dir.path() / "small", "4m");
  ASSERT_TRUE(fs.mounted()) << "mount tmpfs: " << std::strerror(errno);
  start_proxy({"--audit-hold", "8"}, fs.path() / "audit.db");
  ASSERT_EQ(proxy_get(port, url("/before")).status, 200);

  fill(fs.path() / "filler");
  // Requests are queued and answered until the failing writer holds 8 rows; then new ones
  // are refused.
  std::vector<std::string> accepted_while_full;
  int n = 0;
  Reply refused;
  ASSERT_TRUE(eventually([&] {
    const std::string path = "/while-full/" + std::to_string(n++);
    auto r = proxy_get(port, url(path));
    if (r.status == 200) accepted_while_full.push_back(path);
    if (r.status != 503) return false;
    refused = r;
    return true;
  })) << "the proxy never noticed the full store: " << proxy->log();
  EXPECT_EQ(refused.header("x-netbox-decision"), "error");
  EXPECT_NE(refused.body.find("audit"), std::string::npos) << refused.body;

  const auto forwarded = upstream.requests();
  EXPECT_EQ(proxy_get(port, url("/refused")).status, 503);
  EXPECT_EQ(upstream.requests(), forwarded) << "a request that cannot be audited went out";
  EXPECT_TRUE(proxy->running()) << proxy->log();

  std::filesystem::remove(fs.path() / "filler");
  EXPECT_TRUE(eventually([&] { return proxy_get(port, url("/after")).status == 200; }))
      << "service did not return with space: " << proxy->log();
  EXPECT_EQ(proxy->stop(SIGTERM), 0) << proxy->log();

  EXPECT_EQ(query_column(db_path, "PRAGMA integrity_check"), std::vector<std::string>{"ok"});
  const auto paths = row_paths();
  const auto has = [&](const std::string& p) { return std::find(paths.begin(), paths.end(), p) != paths.end(); };
  EXPECT_TRUE(has("/before"));
  EXPECT_TRUE(has("/after"));
  EXPECT_FALSE(has("/refused"));
  for (const auto& p : accepted_while_full) EXPECT_TRUE(has(p)) << p << " was answered but its row was lost";
  const auto kinds = query_column(db_path, "SELECT kind FROM events ORDER BY id");
  const auto error_at = std::find(kinds.begin(), kinds.end(), "audit_error");
  ASSERT_NE(error_at, kinds.end()) << "no event for the store failing";
  EXPECT_NE(std::find(error_at, kinds.end(), "audit_recovered"), kinds.end()) << "no event for the recovery";
  const auto detail = query_column(db_path, "SELECT message FROM events WHERE kind = 'audit_error'");
  ASSERT_FALSE(detail.empty());
  EXPECT_NE(detail.front().find("full"), std::string::npos) << detail.front();
}

}  // namespace
}  // namespace netbox::test
