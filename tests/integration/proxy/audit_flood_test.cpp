// A hostile agent against the audit store (issue 22).
// - Events it can cause by the thousand (item 2): it floods pipelined requests carrying a
//   credential's placeholder to a host the credential does not list. Each is refused (403)
//   and counted, but the `events` rows are folded per agent, credential, host and place a
//   minute (SUM(count) is every attempt) and the log lines are limited: before, 5,000
//   attempts gave 5,000 rows and 5,001 lines in 0.1 s.
// - Back pressure inside an inspected tunnel: with the writer's queue full, the next inner
//   request is not read until there is room; before, its row went past the queue and was
//   refused once past the overflow.
// Real sockets, real TLS with a test CA, a real SQLite store and a real log file, the
// credentials tests' setup.
#include "low_fd_proxy.hpp"
#include "credentials_fixture.hpp"

#include "support/curl.hpp"
#include "support/sqlite_query.hpp"
#include "support/tls_upstream_server.hpp"

#include "netbox/audit/writer.hpp"
#include "netbox/tls/certificate_authority.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

namespace netbox::test {
namespace {

// Writes every request back to back on one connection while reading the answers; the
// number of answers whose status line is `status`.
std::size_t pipelined(unsigned short port, const std::vector<std::string>& requests, int status) {
  const int fd = connect_from("127.0.0.1", port);
  if (fd < 0) return 0;
  std::thread writer([&] {
    for (const auto& r : requests)
      if (::send(fd, r.data(), r.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(r.size())) break;
  });
  const std::string line = "HTTP/1.1 " + std::to_string(status) + " ";
  std::string got;
  std::size_t answers = 0, scanned = 0;
  char buf[65536];
  while (answers < requests.size()) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20000) != 1) break;
    const auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
    for (std::size_t at; (at = got.find(line, scanned)) != std::string::npos;) {
      ++answers;
      scanned = at + line.size();
    }
    if (scanned > 4096) {  // keep the tail only: an answer may straddle two reads
      got.erase(0, scanned);
      scanned = 0;
    }
  }
  writer.join();
  ::close(fd);
  return answers;
}

std::string file_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class AuditFloodTest : public CredentialsFixture {
 protected:
  std::string request(const std::string& header) const {
    return "GET http://other.test:" + std::to_string(upstream.port()) + "/x HTTP/1.1\r\nHost: other.test\r\n" + header +
           ": " + kPlaceholder + "\r\n\r\n";
  }
  std::int64_t number(const std::string& sql) { return std::stoll(query_column(db_path, sql).at(0)); }

};

TEST_F(AuditFloodTest, AFloodOfPlaceholderRequestsCostsBoundedRowsAndLinesAndEveryOneIsCounted) {
  start();
  constexpr std::size_t kFlood = 5000;
  // 4,000 the same attempt, and 1,000 spread over 100 header names (100 keys: past the
  // agent's own rows, they fold into one row whose particulars vary).
  std::vector<std::string> requests;
  for (std::size_t i = 0; i < kFlood; ++i)
    requests.push_back(request(i % 5 == 4 ? "X-Trace-" + std::to_string(i / 5 % 100) : "X-Trace"));
  EXPECT_EQ(pipelined(port, requests, 403), kFlood);
  EXPECT_EQ(upstream.requests(), 0u);
  stop_proxy();

  const std::string kind = "FROM events WHERE kind = 'exfiltration_attempt'";
  EXPECT_EQ(number("SELECT SUM(count) " + kind), static_cast<std::int64_t>(kFlood)) << "every attempt is counted";
  // Per agent and minute: 32 rows of their own, a counted row for each key that repeated,
  // and one row per kind for the rest.
  EXPECT_LE(number("SELECT COUNT(*) " + kind), 65);
  EXPECT_EQ(number("SELECT count " + kind + " AND json_extract(detail, '$.where') = 'the header X-Trace' "
                   "ORDER BY count DESC LIMIT 1"),
            4000 - 1);
  EXPECT_EQ(number("SELECT COUNT(*) " + kind + " AND json_extract(detail, '$.where') = '*' AND "
                   "json_extract(detail, '$.agent') = 'coder' AND json_extract(detail, '$.host') = '*'"),
            1);
  EXPECT_EQ(number("SELECT COUNT(*) " + kind + " AND instr(detail || message, '" + kPlaceholder + "') > 0"), 0);
  // The requests keep their rows (refusals folded per second, counted exactly; past the
  // agent's rows of a second, in a row whose destinations vary, without a rule).
  EXPECT_EQ(number("SELECT SUM(count) FROM requests WHERE agent = 'coder' AND decision = 'deny'"),
            static_cast<std::int64_t>(kFlood));
  // The log: the first line of each key a minute, at most 16 an agent, the rest counted.
  const auto lines = count_lines(file_text(log_path), "exfiltration_attempt");
  EXPECT_GE(lines, 1u);
  EXPECT_LE(lines, 16u) << file_text(log_path).substr(0, 4000);
}

TEST_F(AuditFloodTest, AFullAuditQueueHoldsTheNextInspectedRequestBackAndLosesNoRow) {
  // A tiny queue that a session ignoring back pressure overruns at once.
  tune = [](proxy::ProxyOptions& o) {
    o.audit_queue = 4;
    o.audit_overflow = 1;
    o.audit_fold_refusals = false;
  };
  start();
  server->audit().flush();
  // Another process holds the store's write lock: the writer's commit waits (up to its busy
  // timeout) and the queue stays full.
  StoreWriteLock lock(db_path);
  ASSERT_TRUE(lock.held());
  constexpr int kRequests = 20;
  RunResult got;
  std::thread agent([&] {
    std::vector<std::string> args{"-x", "http://127.0.0.1:" + std::to_string(port), "--cacert", ca_pem.string()};
    for (int i = 0; i < kRequests; ++i)  // one connection, one tunnel, one request after another
      args.push_back("https://upstream.test:" + std::to_string(tls_upstream.port()) + "/r" + std::to_string(i));
    got = curl_with_status(args);
  });
  const bool waited = eventually([&] {
    const auto s = server->audit().stats();
    return s.room_waits > 0 || s.rejected > 0;
  });
  lock.release();
  agent.join();
  EXPECT_TRUE(waited) << "the queue never filled: the test did not test back pressure";
  std::size_t ok = 0;
  for (std::size_t at = 0; (at = got.out.find("\n200", at)) != std::string::npos; ++at) ++ok;
  EXPECT_EQ(ok, static_cast<std::size_t>(kRequests)) << got.out << got.err;
  EXPECT_EQ(server->audit().stats().rejected, 0u) << "a row went past the queue";
  stop_proxy();
  EXPECT_EQ(number("SELECT SUM(count) FROM requests WHERE parent_id IS NOT NULL"), kRequests);
}

}  // namespace
}  // namespace netbox::test
