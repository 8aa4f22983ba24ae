// The audit chain (docs/audit.md "Integrity") on real stores, an SQLite file and a real
// PostgreSQL server: rows written by the writer verify; a row deleted, edited or inserted
// behind netbox's back is named by `netbox audit verify`; pruning keeps the chain
// verifiable; two proxies sharing one database each keep their own chain; a store rebuilt
// and signed with another key fails the signature check.
#include "netbox/audit/prune.hpp"
#include "netbox/audit/query.hpp"
#include "netbox/audit/verify.hpp"
#include "netbox/audit/writer.hpp"
#include "support/postgres_server.hpp"
#include "support/process.hpp"
#include "support/sample_records.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <map>
#include <openssl/evp.h>
#include <sqlite3.h>

#include <atomic>
#include <memory>
#include <thread>

namespace netbox::test {
namespace {

using audit::Clock;
using namespace std::chrono_literals;

// One store under test and raw SQL on it, as an attacker with write access has.
class Store {
 public:
  virtual ~Store() = default;
  virtual std::string db() const = 0;
  virtual std::string scalar(const std::string& sql) = 0;  // first column of the first row
  virtual void exec(const std::string& sql) = 0;
};

class SqliteStore final : public Store {
 public:
  std::string db() const override { return (dir_.path() / "audit.db").string(); }
  std::string scalar(const std::string& sql) override {
    std::string out;
    run(sql, &out);
    return out;
  }
  void exec(const std::string& sql) override { run(sql, nullptr); }

 private:
  void run(const std::string& sql, std::string* out) {
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open(db().c_str(), &h), SQLITE_OK);
    char* err = nullptr;
    const int rc = sqlite3_exec(
        h, sql.c_str(),
        [](void* o, int, char** values, char**) {
          auto* s = static_cast<std::string*>(o);
          if (s && s->empty() && values[0]) *s = values[0];
          return 0;
        },
        out, &err);
    const std::string message = err ? err : "";
    sqlite3_free(err);
    sqlite3_close(h);
    ASSERT_EQ(rc, SQLITE_OK) << sql << ": " << message;
  }
  TempDir dir_;
};

class PgStore final : public Store {
 public:
  PgStore() : db_(server_.create_database("chain")) {}
  std::string db() const override { return db_; }
  std::string scalar(const std::string& sql) override {
    const auto rows = server_.query("chain", sql);
    return rows.empty() ? std::string() : rows[0][0];
  }
  void exec(const std::string& sql) override { server_.query("chain", sql); }

 private:
  PostgresServer server_;
  std::string db_;
};

// Requests (half completed in a later batch than their insert, so their rows are updated),
// an event, an agent started and exited, `ts` old.
void write_rows(const std::string& db, const std::string& proxy, int n, Clock::time_point ts = Clock::now(),
                const std::filesystem::path& key = {}) {
  audit::WriterOptions o;
  o.db_path = db;
  o.proxy_id = proxy;
  o.signing_key = key;
  audit::Writer w(o);
  w.agent_started(audit::AgentRecord{"agent-" + proxy, 4242, "sh -c work", "digest", "", ts, ""});
  for (int i = 0; i < n; ++i) {
    const auto h = w.insert(audit::testing::request("agent-" + proxy, "h" + std::to_string(i) + ".test", "allow", ts));
    if (i % 2) w.flush();  // the row is committed open, then completed: an UPDATE
    w.complete(h, audit::Completion{200, 10, 20, 5, {}, {}, {}, {}, {}});
  }
  w.event(audit::Event{ts, "test_event", "written by " + proxy});
  w.agent_exited(audit::AgentExit{"agent-" + proxy, 4242, ts + 1s, 0, ""});
  w.flush();
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

enum class Backend { sqlite, postgresql };

class AuditChain : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::sqlite) store = std::make_unique<SqliteStore>();
    else store = std::make_unique<PgStore>();
  }
  // The id of the n-th request row (1-based), in id order.
  std::string request_id(int n) {
    return store->scalar("SELECT id FROM requests ORDER BY id LIMIT 1 OFFSET " + std::to_string(n - 1));
  }
  std::unique_ptr<Store> store;
};

TEST_P(AuditChain, AFreshStoreVerifiesOnTheCommandLine) {
  write_rows(store->db(), "p1", 10);
  const auto report = audit::verify_chain(store->db());
  EXPECT_TRUE(report.ok()) << joined(report.problems);
  EXPECT_EQ(report.rows, 10u + 1 + 1) << "every request, event and agent row is checked";
  const auto r = run_netbox({"audit", "verify", "--db", store->db()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("audit chain verified"), std::string::npos) << r.out;
}

TEST_P(AuditChain, ADeletedMiddleRowIsNamed) {
  write_rows(store->db(), "p1", 10);
  const std::string id = request_id(5);
  store->exec("DELETE FROM requests WHERE id = " + id);
  const auto r = run_netbox({"audit", "verify", "--db", store->db()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("FIRST MISMATCH: requests row " + id + " "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("deleted"), std::string::npos) << r.out;
}

TEST_P(AuditChain, AnEditedColumnIsNamed) {
  write_rows(store->db(), "p1", 10);
  const std::string id = request_id(4);  // completed in a later batch: its latest link is the update's
  store->exec("UPDATE requests SET host = 'innocent.test' WHERE id = " + id);
  const auto report = audit::verify_chain(store->db());
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.problems[0].find("requests row " + id + " "), std::string::npos) << joined(report.problems);
  EXPECT_NE(report.problems[0].find("edited"), std::string::npos) << joined(report.problems);
  EXPECT_EQ(report.problems.size(), 1u) << joined(report.problems);
}

// Row tag v2 (schema 11): the process that opened a request's connection (client_pid,
// client_exe, client_argv) is in the row's digest, so an attacker who rewrites which
// program sent a request (to blame another, or hide a tool) is named at that row.
TEST_P(AuditChain, AnEditedClientProcessIsNamed) {
  {
    audit::WriterOptions o;
    o.db_path = store->db();
    o.proxy_id = "p1";
    audit::Writer w(o);
    for (int i = 0; i < 6; ++i) {
      auto r = audit::testing::request("a", "h" + std::to_string(i) + ".test", "allow");
      r.origin = audit::ProcessOrigin{100 + i, "/usr/bin/curl", "curl https://h" + std::to_string(i) + ".test/"};
      const auto h = w.insert(r);
      if (i % 2) w.flush();  // completed in a later batch: the row's latest link is the update's
      w.complete(h, audit::Completion{200, 10, 20, 5, {}, {}, {}, {}, {}});
    }
    w.flush();
  }
  ASSERT_TRUE(audit::verify_chain(store->db()).ok());
  const std::string exe = request_id(2), pid = request_id(3), argv = request_id(5);
  store->exec("UPDATE requests SET client_exe = '/usr/bin/git' WHERE id = " + exe);
  store->exec("UPDATE requests SET client_pid = 1 WHERE id = " + pid);
  store->exec("UPDATE requests SET client_argv = 'git fetch' WHERE id = " + argv);
  const auto report = audit::verify_chain(store->db());
  ASSERT_EQ(report.problems.size(), 3u) << joined(report.problems);
  const auto all = joined(report.problems);
  for (const auto& id : {exe, pid, argv})
    EXPECT_NE(all.find("requests row " + id + " (proxy 'p1', batch link"), std::string::npos) << id << ": " << all;
  EXPECT_NE(report.problems[0].find("edited"), std::string::npos) << all;
  const auto r = run_netbox({"audit", "verify", "--db", store->db()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("FIRST MISMATCH: requests row " + exe + " "), std::string::npos) << r.out;
}

// A request linked before schema 11 (row tag v1: its member's table byte 0, its digest over
// the columns without client_*) still verifies beside v2 rows. The v1 link is made here from
// the format docs/audit.md gives, independently of the writer's code: the row's v1 digest,
// its member rewritten, the batch hash and the head recomputed.
std::string sha256_of(const std::string& data) {
  unsigned char md[32];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), md, &n, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<const char*>(md), n);
}
std::string to_hex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) out += {kDigits[c >> 4], kDigits[c & 15]};
  return out;
}
std::string from_hex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}
std::string be32(std::size_t n) {
  return {static_cast<char>(n >> 24 & 0xff), static_cast<char>(n >> 16 & 0xff), static_cast<char>(n >> 8 & 0xff),
          static_cast<char>(n & 0xff)};
}

TEST(AuditChainV1, ARequestLinkedUnderRowTagV1StillVerifiesAndAnEditOfItIsStillNamed) {
  SqliteStore store;
  {
    audit::WriterOptions o;
    o.db_path = store.db();
    o.proxy_id = "p1";
    audit::Writer w(o);
    w.insert_complete(audit::testing::request("a", "old.test", "allow"));
    w.flush();
  }
  ASSERT_EQ(store.scalar("SELECT COUNT(*) FROM audit_chain_batches"), "1");
  ASSERT_EQ(store.scalar("SELECT seq FROM audit_chain_heads"), "1");
  // The row's v1 digest: its 21 schema-8 columns, NULL or empty as 'N', else 'V' + length + text.
  const char* kV1Columns[] = {"id", "ts", "agent", "client_addr", "kind", "method", "host", "port", "path",
                              "resolved_addr", "decision", "rule", "reason", "status", "bytes_up", "bytes_down",
                              "duration_ms", "error", "count", "parent_id", "proxy_id"};
  std::string encoded = std::string("netbox-audit-row-v1") + '\0' + "requests" + '\0';
  for (const char* c : kV1Columns) {
    const std::string v = store.scalar(std::string("SELECT COALESCE(CAST(") + c + " AS TEXT), '') FROM requests");
    encoded += v.empty() ? std::string("N") : "V" + be32(v.size()) + v;
  }
  const std::string digest = sha256_of(encoded);
  // The member as written (table byte 3: requests under v2), rewritten as a v1 writer made it.
  std::string members = from_hex(store.scalar("SELECT hex(members) FROM audit_chain_batches"));
  ASSERT_EQ(static_cast<int>(members[0]), 3) << "the writer links requests under row tag v2";
  members[0] = 0;
  members.replace(members.size() - 32, 32, digest);
  const std::string previous(32, '\0');
  const std::string hash = sha256_of(std::string("netbox-audit-batch-link-v2") + '\0' + previous + be32(2) + "p1" +
                                     be32(1) + "1" + members);
  store.exec("UPDATE audit_chain_batches SET members = X'" + to_hex(members) + "', hash = X'" + to_hex(hash) + "'");
  store.exec("UPDATE audit_chain_heads SET hash = '" + to_hex(hash) + "'");
  auto report = audit::verify_chain(store.db());
  EXPECT_TRUE(report.ok()) << joined(report.problems);
  EXPECT_EQ(report.rows, 1u);
  // A v2 row after it, in the same chain.
  write_rows(store.db(), "p1", 2);
  report = audit::verify_chain(store.db());
  EXPECT_TRUE(report.ok()) << joined(report.problems);
  store.exec("UPDATE requests SET host = 'other.test' WHERE host = 'old.test'");
  report = audit::verify_chain(store.db());
  ASSERT_EQ(report.problems.size(), 1u) << joined(report.problems);
  EXPECT_NE(report.problems[0].find("edited"), std::string::npos) << joined(report.problems);
}

TEST_P(AuditChain, AForgedRowIsNamed) {
  write_rows(store->db(), "p1", 4);
  store->exec(
      "INSERT INTO requests (id, ts, agent, kind, host, port, decision, bytes_up, bytes_down, count, proxy_id) "
      "SELECT MAX(id) + 7, MAX(ts), 'agent-p1', 'http', 'alibi.test', 80, 'allow', 0, 0, 1, 'p1' FROM requests");
  const std::string forged = store->scalar("SELECT MAX(id) FROM requests");
  const auto report = audit::verify_chain(store->db());
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.problems[0].find("requests row " + forged + " is in no chain"), std::string::npos)
      << joined(report.problems);
}

TEST_P(AuditChain, AnEditedEventAndAgentAreNamedToo) {
  write_rows(store->db(), "p1", 2);
  store->exec("UPDATE events SET message = 'nothing happened' WHERE kind = 'test_event'");
  store->exec("UPDATE agents SET exit_status = 1");
  const auto text = joined(audit::verify_chain(store->db()).problems);
  EXPECT_NE(text.find("events row"), std::string::npos) << text;
  EXPECT_NE(text.find("agents row"), std::string::npos) << text;
}

// The writer hashes the values it binds, verify the values it reads back: every value a
// store keeps differently from what was bound must encode alike (an agent's bytes that are
// not UTF-8 and a NUL, which PostgreSQL stores as \xNN; empty optional text stored NULL,
// empty required text stored ''; integers past INT64_MAX; an exit with no start row), in
// rows written final, rows completed in a later batch (an UPDATE) and agent rows.
TEST_P(AuditChain, ValuesAStoreKeepsDifferentlyStillVerify) {
  const std::string odd = std::string("caf\xc3\xa9 \xff\xfe raw ") + std::string(1, '\0') + "nul\t\\x41";
  {
    audit::WriterOptions o;
    o.db_path = store->db();
    o.proxy_id = "p1";
    audit::Writer w(o);
    w.agent_started(audit::AgentRecord{odd, 7, odd, "", "", Clock::now(), "{\"k\":\"" + odd + "\"}"});
    auto r = audit::testing::request(odd, "", "allow");
    r.path = "/" + odd;
    r.reason = odd;
    r.client_addr.clear();
    r.bytes_up = UINT64_MAX;
    r.count = 3;
    const auto final_row = w.insert(r);
    w.complete(final_row, audit::Completion{std::nullopt, UINT64_MAX - 1, 0, -5, odd, odd, "deny", {}, {}});
    const auto open_row = w.insert(r);
    w.flush();  // committed open, completed below by an UPDATE
    w.complete(open_row, audit::Completion{404, 1, 2, 3, {}, odd, {}, odd, odd});
    w.event(audit::Event{Clock::now(), "test_event", odd, odd});
    w.agent_exited(audit::AgentExit{odd, 7, Clock::now(), std::nullopt, odd});
    w.agent_exited(audit::AgentExit{"never-started", 8, Clock::now(), 3, ""});  // no start row
    w.flush();
  }
  const auto report = audit::verify_chain(store->db());
  EXPECT_TRUE(report.ok()) << joined(report.problems);
  EXPECT_EQ(report.rows, 2u + 1 + 2);
  // And such a row still cannot be edited unnoticed.
  store->exec("UPDATE requests SET bytes_down = bytes_down + 1 WHERE id = " + request_id(2));
  EXPECT_FALSE(audit::verify_chain(store->db()).ok());
}

TEST_P(AuditChain, PruningKeepsTheChainVerifiable) {
  const auto now = Clock::now();
  write_rows(store->db(), "p1", 6, now - std::chrono::days(10));
  write_rows(store->db(), "p1", 6, now);
  audit::prune(store->db(), now - std::chrono::days(7), false);
  ASSERT_EQ(store->scalar("SELECT COUNT(*) FROM requests"), "6") << "the old rows went";
  auto report = audit::verify_chain(store->db());
  EXPECT_TRUE(report.ok()) << joined(report.problems);
  EXPECT_NE(store->scalar("SELECT anchor_seq FROM audit_chain_heads WHERE proxy_id = 'p1'"), "0")
      << "the links of pruned rows went too, their last hash kept as the anchor";
  // Still checking: a recent row deleted after the prune is not taken for a pruned one.
  const std::string id = request_id(3);
  store->exec("DELETE FROM requests WHERE id = " + id);
  report = audit::verify_chain(store->db());
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.problems[0].find("requests row " + id + " "), std::string::npos) << joined(report.problems);
}

TEST_P(AuditChain, RemovedLinksAtTheEndAreNamed) {
  write_rows(store->db(), "p1", 4);
  const std::string last = store->scalar("SELECT MAX(seq) FROM audit_chain_batches");
  // The last batch (the event and the agent's exit) and its link removed, as if never written.
  store->exec("DELETE FROM agents");
  store->exec("DELETE FROM events");
  store->exec("DELETE FROM audit_chain_batches WHERE seq = " + last);
  const auto report = audit::verify_chain(store->db());
  ASSERT_FALSE(report.ok());
  EXPECT_NE(joined(report.problems).find("ends at link"), std::string::npos) << joined(report.problems);
}

TEST_P(AuditChain, ABatchSignedWithAnotherKeyFailsTheSignatureCheck) {
  TempDir keys;
  const auto key = keys.path() / "audit.key", pub = keys.path() / "audit.pub";
  const auto other = keys.path() / "other.key", other_pub = keys.path() / "other.pub";
  for (const auto& [k, p] : {std::pair{key, pub}, std::pair{other, other_pub}}) {
    ASSERT_EQ(run({"openssl", "genpkey", "-algorithm", "ed25519", "-out", k.string()}).exit_code, 0);
    ASSERT_EQ(run({"openssl", "pkey", "-in", k.string(), "-pubout", "-out", p.string()}).exit_code, 0);
  }
  write_rows(store->db(), "p1", 6, Clock::now(), key);
  auto r = run_netbox({"audit", "verify", "--db", store->db(), "--audit-verify-key", pub.string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // Someone with write access rewrites history and signs it with a key of their own: the
  // chain is consistent (verify without a key passes), the signatures are not ours.
  write_rows(store->db(), "p1", 2, Clock::now(), other);
  EXPECT_TRUE(audit::verify_chain(store->db()).ok());
  r = run_netbox({"audit", "verify", "--db", store->db(), "--audit-verify-key", pub.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("the batch signature does not verify"), std::string::npos) << r.out;
  // Rows written without any key after signed ones are named as unsigned.
  write_rows(store->db(), "p1", 1);
  const auto report = audit::verify_chain(store->db(), other_pub);
  EXPECT_NE(joined(report.problems).find("carry no batch signature"), std::string::npos) << joined(report.problems);
}

// A fleet's proxies each sign with a key of their own, and verify checks each chain with
// its proxy's key: one proxy's key (and its store role) re-signing another proxy's chain
// is named, which one key for every proxy cannot tell. A chain no key names, and a named
// proxy whose chain is gone whole, are problems too.
TEST_P(AuditChain, EachProxysChainIsCheckedWithItsOwnKey) {
  TempDir keys;
  std::map<std::string, std::pair<std::filesystem::path, std::filesystem::path>> pair;
  for (const std::string name : {"a", "b"}) {
    const auto k = keys.path() / (name + ".key"), p = keys.path() / (name + ".pub");
    ASSERT_EQ(run({"openssl", "genpkey", "-algorithm", "ed25519", "-out", k.string()}).exit_code, 0);
    ASSERT_EQ(run({"openssl", "pkey", "-in", k.string(), "-pubout", "-out", p.string()}).exit_code, 0);
    pair[name] = {k, p};
  }
  write_rows(store->db(), "proxy-a", 3, Clock::now(), pair["a"].first);
  write_rows(store->db(), "proxy-b", 3, Clock::now(), pair["b"].first);
  const std::string a = "proxy-a=" + pair["a"].second.string(), b = "proxy-b=" + pair["b"].second.string();
  auto r = run_netbox({"audit", "verify", "--db", store->db(), "--audit-verify-key", a, "--audit-verify-key", b});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // Proxy a, compromised, writes on in proxy b's name with its own key.
  write_rows(store->db(), "proxy-b", 2, Clock::now(), pair["a"].first);
  r = run_netbox({"audit", "verify", "--db", store->db(), "--audit-verify-key", a, "--audit-verify-key", b});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("the batch signature does not verify"), std::string::npos) << r.out;
  // A chain with no key of its own, once keys are per proxy; a named proxy with no chain.
  r = run_netbox({"audit", "verify", "--db", store->db(), "--audit-verify-key", a, "--audit-verify-key",
                  "proxy-c=" + pair["b"].second.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("no --audit-verify-key names proxy 'proxy-b'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("a key is named for proxy 'proxy-c' but the store holds no chain of it"), std::string::npos)
      << r.out;
  // Bad flags are usage errors.
  r = run_netbox({"audit", "verify", "--db", store->db(), "--audit-verify-key", "=" + pair["a"].second.string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  r = run_netbox({"audit", "verify", "--db", store->db(), "--audit-verify-key", a, "--audit-verify-key", a});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("named twice"), std::string::npos) << r.err;
}

TEST_P(AuditChain, ARowOpenAtTheUpgradeIsCoveredOnceCompleted) {
  audit::WriterOptions o;
  o.db_path = store->db();
  o.proxy_id = "p1";
  audit::Writer w(o);
  const auto open = w.insert(audit::testing::request("a", "tunnel.test", "allow"));
  w.flush();
  // As a store upgraded to schema 8 while that request was open: no chain yet, the row
  // counted as older than the chain.
  store->exec("DELETE FROM audit_chain_batches");
  store->exec("DELETE FROM audit_chain_heads");
  store->exec("UPDATE audit_chain_start SET last_id = (SELECT MAX(id) FROM requests) WHERE tbl = 'requests'");
  w.complete(open, audit::Completion{200, 1, 2, 3, {}, {}, {}, {}, {}});
  w.flush();
  auto report = audit::verify_chain(store->db());
  EXPECT_TRUE(report.ok()) << joined(report.problems);
  EXPECT_EQ(report.rows, 1u) << "covered by its completion's link";
  store->exec("UPDATE requests SET status = 204");
  report = audit::verify_chain(store->db());
  EXPECT_FALSE(report.ok()) << "an edit after its completion is seen";
}

// One link per written batch (schema 9): a batch of many rows still names the one row
// edited or deleted in it, and costs one link.
TEST_P(AuditChain, OneBatchOfManyRowsNamesTheRowEditedOrDeletedInIt) {
  {
    audit::WriterOptions o;
    o.db_path = store->db();
    o.proxy_id = "p1";
    audit::Writer w(o);
    for (int i = 0; i < 50; ++i) w.insert_complete(audit::testing::request("a", "h" + std::to_string(i) + ".test", "allow"));
    w.flush();
  }
  ASSERT_EQ(store->scalar("SELECT COUNT(*) FROM audit_chain_batches"), "1") << "the 50 rows were one batch";
  ASSERT_TRUE(audit::verify_chain(store->db()).ok());
  const std::string edited = request_id(30), deleted = request_id(40);
  store->exec("UPDATE requests SET host = 'h30.test' WHERE id = " + edited);
  store->exec("DELETE FROM requests WHERE id = " + deleted);
  const auto report = audit::verify_chain(store->db());
  ASSERT_EQ(report.problems.size(), 2u) << joined(report.problems);
  EXPECT_NE(report.problems[0].find("requests row " + edited + " (proxy 'p1', batch link 1): the row does not match"),
            std::string::npos)
      << joined(report.problems);
  EXPECT_NE(report.problems[1].find("requests row " + deleted + " (proxy 'p1', batch link 1): the row is missing"),
            std::string::npos)
      << joined(report.problems);
}

// The writer encodes every row into one buffer its thread keeps (RowEncoding): a row much
// longer than the rest, between short ones in one batch, leaves nothing of itself in the
// rows encoded after it, and a short row edited after it is still named.
TEST_P(AuditChain, ALongRowAmongShortOnesInOneBatchLeavesNothingInTheNext) {
  {
    audit::WriterOptions o;
    o.db_path = store->db();
    o.proxy_id = "p1";
    audit::Writer w(o);
    for (int i = 0; i < 6; ++i) {
      auto r = audit::testing::request("a", "h" + std::to_string(i) + ".test", "allow");
      if (i == 2) r.reason = std::string(3000, 'r');  // grows the buffer past its first size
      w.insert_complete(r);
    }
    w.flush();
  }
  ASSERT_EQ(store->scalar("SELECT COUNT(*) FROM audit_chain_batches"), "1") << "the 6 rows were one batch";
  const auto clean = audit::verify_chain(store->db());
  ASSERT_TRUE(clean.ok()) << joined(clean.problems);
  const std::string edited = request_id(4);
  store->exec("UPDATE requests SET host = 'h9.test' WHERE id = " + edited);
  const auto report = audit::verify_chain(store->db());
  ASSERT_EQ(report.problems.size(), 1u) << joined(report.problems);
  EXPECT_NE(report.problems[0].find("requests row " + edited + " (proxy 'p1', batch link 1): the row does not match"),
            std::string::npos)
      << joined(report.problems);
}

// The batch links themselves, one attack per proxy's chain: a list of rows replaced by
// another batch's (p1), two batches swapped (p2), a batch removed from the middle (p3).
TEST_P(AuditChain, EditedReorderedOrRemovedBatchLinksAreNamed) {
  for (const char* proxy : {"p1", "p2", "p3"}) write_rows(store->db(), proxy, 6);
  ASSERT_TRUE(audit::verify_chain(store->db()).ok());
  store->exec("UPDATE audit_chain_batches SET members = (SELECT members FROM audit_chain_batches WHERE proxy_id = 'p1' "
              "AND seq = 1) WHERE proxy_id = 'p1' AND seq = 2");
  for (const char* step : {"seq = -1 WHERE seq = 2", "seq = 2 WHERE seq = 3", "seq = 3 WHERE seq = -1"})
    store->exec(std::string("UPDATE audit_chain_batches SET ") + step + " AND proxy_id = 'p2'");
  store->exec("DELETE FROM audit_chain_batches WHERE proxy_id = 'p3' AND seq = 2");
  const auto report = audit::verify_chain(store->db());
  const std::string text = joined(report.problems);
  ASSERT_FALSE(report.problems.empty());
  EXPECT_NE(report.problems[0].find("batch link 2 of proxy 'p1': the link does not follow"), std::string::npos) << text;
  EXPECT_NE(text.find("batch link 2 of proxy 'p2': the link does not follow"), std::string::npos) << text;
  EXPECT_NE(text.find("links 2..2 of proxy 'p3' are missing"), std::string::npos) << text;
}

TEST_P(AuditChain, VerifyBesideALiveWriterSeesOneMomentOfTheStore) {
  write_rows(store->db(), "first", 1);  // the store exists before verify reads it
  std::atomic<bool> done{false};
  std::thread writer([&] {
    audit::WriterOptions o;
    o.db_path = store->db();
    o.proxy_id = "live";
    o.flush_interval = 1ms;
    audit::Writer w(o);
    for (int i = 0; i < 3000; ++i) {
      w.insert_complete(audit::testing::request("live", "h.test", "allow"));
      if (i % 50 == 0) w.flush();
    }
    w.flush();
    done = true;
  });
  int runs = 0;
  while (!done || runs == 0) {
    const auto report = audit::verify_chain(store->db());
    ++runs;
    if (!report.ok()) {
      ADD_FAILURE() << "verify run " << runs << ": " << report.problems[0];
      break;
    }
  }
  writer.join();
  EXPECT_GT(runs, 0);
}

// PostgreSQL's writer sends completions, the chain's link and the proxy id as SQL literals
// (pg_write_store.cpp: one round trip for many statements); texts an upstream or an agent
// chose, and a --proxy-id with a quote in it, must be stored as the text they are.
TEST_P(AuditChain, CompletionTextsThatAreSqlAreStoredAsText) {
  const std::string proxy = "o'brien\\'; DROP TABLE audit_chain_heads; --";
  const std::vector<std::string> hostile = {
      "x'); DROP TABLE requests; --",
      "\\'); DELETE FROM requests; --",
      "E'\\x41' || chr(39) $$ $q$",
      "\\\\' \\",
  };
  {
    audit::WriterOptions o;
    o.db_path = store->db();
    o.proxy_id = proxy;
    audit::Writer w(o);
    std::vector<audit::RowHandle> open;
    for (std::size_t i = 0; i < hostile.size(); ++i) open.push_back(w.insert(audit::testing::request("a", "h.test", "allow")));
    w.flush();  // committed open: each completion below is an UPDATE of an earlier batch's row
    for (std::size_t i = 0; i < hostile.size(); ++i) {
      const std::string& t = hostile[i];
      w.complete(open[i], audit::Completion{502, 1, 2, 3, t, t, "error", t, t});
    }
    w.flush();
  }
  EXPECT_EQ(store->scalar("SELECT COUNT(*) FROM requests"), std::to_string(hostile.size()));
  EXPECT_EQ(store->scalar("SELECT COUNT(*) FROM audit_chain_heads"), "1");
  EXPECT_EQ(store->scalar("SELECT proxy_id FROM audit_chain_heads"), proxy);
  for (std::size_t i = 0; i < hostile.size(); ++i) {
    const std::string id = request_id(static_cast<int>(i) + 1);
    for (const char* column : {"error", "resolved_addr", "rule", "reason"})
      EXPECT_EQ(store->scalar(std::string("SELECT ") + column + " FROM requests WHERE id = " + id), hostile[i]) << column;
    EXPECT_EQ(store->scalar("SELECT status FROM requests WHERE id = " + id), "502");
    EXPECT_EQ(store->scalar("SELECT proxy_id FROM requests WHERE id = " + id), proxy);
  }
  const auto report = audit::verify_chain(store->db());
  EXPECT_TRUE(report.ok()) << joined(report.problems);
  EXPECT_EQ(report.rows, hostile.size());
}


// The chain's starting point (docs/audit.md "Retention"): the ids older than the chain, each
// chain's anchor and the prune cutoff are what a chained audit_prune event records, not what
// the tables say. Each case below is a hand edit an older verify passed with exit 0.
class ChainStart : public AuditChain {
 protected:
  void SetUp() override {
    AuditChain::SetUp();
    key = keys.path() / "audit.key";
    pub = keys.path() / "audit.pub";
    ASSERT_EQ(run({"openssl", "genpkey", "-algorithm", "ed25519", "-out", key.string()}).exit_code, 0);
    ASSERT_EQ(run({"openssl", "pkey", "-in", key.string(), "-pubout", "-out", pub.string()}).exit_code, 0);
  }
  RunResult verify() { return run_netbox({"audit", "verify", "--db", store->db(), "--audit-verify-key", pub.string()}); }
  RunResult prune(const std::string& older_than) {
    return run_netbox({"audit", "prune", "--db", store->db(), "--older-than", older_than, "--audit-signing-key",
                       key.string()});
  }
  // A batch link's hash as the head keeps it (hex).
  std::string batch_hash(const std::string& seq) {
    const std::string hex = GetParam() == Backend::sqlite ? "lower(hex(hash))" : "encode(hash, 'hex')";
    return store->scalar("SELECT " + hex + " FROM audit_chain_batches WHERE proxy_id = 'p1' AND seq = " + seq);
  }
  // The attack of the review: the chain made to start after link `seq` (its links deleted,
  // the anchor moved there) and the ids those links covered declared older than the chain.
  void cut_chain_at(const std::string& seq) {
    store->exec("UPDATE audit_chain_heads SET anchor_seq = " + seq + ", anchor_hash = '" + batch_hash(seq) +
                "' WHERE proxy_id = 'p1'");
    store->exec("DELETE FROM audit_chain_batches WHERE proxy_id = 'p1' AND seq <= " + seq);
    store->exec("UPDATE audit_chain_start SET last_id = (SELECT MAX(id) FROM requests) WHERE tbl = 'requests'");
  }
  TempDir keys;
  std::filesystem::path key, pub;
};

TEST_P(ChainStart, ARowWithAnIdOfZeroOrBelowIsNamed) {
  write_rows(store->db(), "p1", 4, Clock::now(), key);
  for (const char* id : {"0", "-7"})
    store->exec(std::string("INSERT INTO requests (id, ts, agent, client_addr, kind, method, host, port, path, "
                            "decision, bytes_up, bytes_down, count) SELECT ") +
                id + ", ts, agent, client_addr, kind, method, 'forged.test', port, path, decision, bytes_up, "
                     "bytes_down, count FROM requests WHERE id = " + request_id(1));
  const auto r = verify();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("requests row 0 has an id no netbox writer gives"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("requests row -7 has an id no netbox writer gives"), std::string::npos) << r.out;
}

TEST_P(ChainStart, AnAnchorMovedByHandIsNamedBeforeAnyPrune) {
  write_rows(store->db(), "p1", 6, Clock::now(), key);
  write_rows(store->db(), "p1", 6, Clock::now(), key);
  const std::string first = request_id(1);
  cut_chain_at("3");
  store->exec("UPDATE requests SET host = 'elsewhere.test' WHERE id = " + first);
  const auto r = verify();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("starts after link 3 (its head's anchor), but no prune is recorded in the chain"),
            std::string::npos) << r.out;
}

TEST_P(ChainStart, AnAnchorAndStartMovedAfterARealPruneAreNamed) {
  const auto now = Clock::now();
  write_rows(store->db(), "p1", 4, now - std::chrono::days(30), key);
  write_rows(store->db(), "p1", 6, now, key);
  write_rows(store->db(), "p1", 6, now, key);
  ASSERT_EQ(prune("7d").exit_code, 0);
  ASSERT_EQ(verify().exit_code, 0) << verify().out;
  const std::string anchor = store->scalar("SELECT anchor_seq FROM audit_chain_heads WHERE proxy_id = 'p1'");
  ASSERT_NE(anchor, "0");
  const std::string first = request_id(1);
  cut_chain_at(std::to_string(std::stoll(anchor) + 2));
  store->exec("UPDATE requests SET host = 'elsewhere.test' WHERE id = " + first);
  const auto r = verify();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("audit_chain_start says requests rows up to id"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("but the prunes the chain records moved its start to link " + anchor), std::string::npos) << r.out;
}

TEST_P(ChainStart, ACutoffMovedByHandDoesNotCoverADeletedRow) {
  const auto now = Clock::now();
  write_rows(store->db(), "p1", 6, now - std::chrono::days(10), key);
  write_rows(store->db(), "p1", 6, now, key);
  // Never pruned: any cutoff in a head is a hand edit.
  const std::string id = request_id(2);
  store->exec("UPDATE audit_chain_heads SET pruned_before = (SELECT ts FROM requests WHERE id = " + id + ") || 'Z'");
  store->exec("DELETE FROM requests WHERE id = " + id);
  auto r = verify();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("but no prune is recorded in the chain: pruned_before was edited"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("requests row " + id + " "), std::string::npos) << r.out;
}

TEST_P(ChainStart, ARowDeletedBelowARealCutoffWhileOlderOnesRemainIsNamed) {
  const auto now = Clock::now();
  write_rows(store->db(), "p1", 3, now - std::chrono::days(30), key);
  write_rows(store->db(), "p1", 4, now, key);
  ASSERT_EQ(prune("7d").exit_code, 0);
  // Rows from before the cutoff written after the prune (a spool replayed, a clock behind):
  // a prune would take them all, oldest first; the attacker takes one (and moves the head's
  // cutoff on, for good measure).
  write_rows(store->db(), "p1", 6, now - std::chrono::days(10), key);
  ASSERT_EQ(verify().exit_code, 0) << verify().out;
  const std::string id = store->scalar("SELECT MAX(id) FROM requests WHERE ts < '" +
                                       audit::format_timestamp(now - std::chrono::days(7)) + "'");
  store->exec("DELETE FROM requests WHERE id = " + id);
  store->exec("UPDATE audit_chain_heads SET pruned_before = '" + audit::format_timestamp(now - std::chrono::days(1)) + "'");
  auto r = verify();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("pruned_before was edited"), std::string::npos) << r.out;
  // The head put back as the prune left it: the deletion alone is still named.
  store->exec("UPDATE audit_chain_heads SET pruned_before = '" + audit::format_timestamp(now - std::chrono::days(7)) + "'");
  r = verify();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("requests row " + id + " "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("as old or older, is still there"), std::string::npos) << r.out;
}

TEST_P(ChainStart, StoresPrunedForRealVerifyWithTheirStartRecorded) {
  const auto now = Clock::now();
  write_rows(store->db(), "p1", 5, now - std::chrono::days(30), key);
  write_rows(store->db(), "p1", 5, now - std::chrono::days(10), key);
  write_rows(store->db(), "p1", 5, now, key);
  ASSERT_EQ(prune("20d").exit_code, 0);
  // The proxy's own retention too: its audit_prune event records the same.
  {
    audit::WriterOptions o;
    o.db_path = store->db();
    o.proxy_id = "p1";
    o.signing_key = key;
    o.retention = std::chrono::days(7);
    audit::Writer w(o);
    for (int i = 0; i < 200 && w.stats().pruned == 0; ++i) std::this_thread::sleep_for(20ms);
    w.flush();
  }
  ASSERT_EQ(store->scalar("SELECT COUNT(*) FROM requests"), "5");
  const std::string retention = store->scalar("SELECT detail FROM events WHERE kind = 'audit_prune' AND message LIKE 'retention:%'");
  EXPECT_NE(retention.find("\"before\":\""), std::string::npos) << retention;
  EXPECT_NE(retention.find("\"anchors\":{\"p1\":["), std::string::npos) << retention;
  const auto r = verify();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("audit chain verified"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("note:"), std::string::npos) << r.out;
}

TEST_P(ChainStart, AStorePrunedBeforeTheStartWasRecordedVerifiesAndSaysItIsUnsigned) {
  const auto now = Clock::now();
  write_rows(store->db(), "p1", 4, now - std::chrono::days(30), key);
  write_rows(store->db(), "p1", 4, now, key);
  // As an older netbox pruned: its audit_prune event (chained, signed) holds only counts and
  // the cutoff; the rows, the links before them and the head were changed beside it.
  const std::string before = audit::format_timestamp(now - std::chrono::days(7));
  {
    audit::WriterOptions o;
    o.db_path = store->db();
    o.proxy_id = "p1";
    o.signing_key = key;
    audit::Writer w(o);
    w.event(audit::Event{now, "audit_prune", "pruned", "{\"requests\":4,\"events\":1,\"agents\":1,\"before\":\"" + before + "\"}"});
    w.flush();
  }
  for (const char* t : {"requests", "events"})
    store->exec(std::string("DELETE FROM ") + t + " WHERE ts < '" + before + "'");
  store->exec("DELETE FROM agents WHERE ended < '" + before + "'");
  store->exec("UPDATE audit_chain_heads SET pruned_before = '" + before + "', anchor_seq = 1, anchor_hash = '" +
              batch_hash("1") + "'");
  store->exec("DELETE FROM audit_chain_batches WHERE seq = 1");
  store->exec("UPDATE audit_chain_start SET last_id = 2 WHERE tbl = 'events'");
  const auto r = verify();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("note: the chain's starting point is unsigned"), std::string::npos) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Backends, AuditChain, ::testing::Values(Backend::sqlite, Backend::postgresql),
                         [](const auto& p) { return p.param == Backend::sqlite ? "sqlite" : "postgresql"; });
INSTANTIATE_TEST_SUITE_P(Backends, ChainStart, ::testing::Values(Backend::sqlite, Backend::postgresql),
                         [](const auto& p) { return p.param == Backend::sqlite ? "sqlite" : "postgresql"; });

TEST(AuditChainFleet, TwoProxiesWritingOneDatabaseEachKeepTheirOwnChain) {
  PgStore store;
  std::thread a([&] { write_rows(store.db(), "p1", 40); });
  std::thread b([&] { write_rows(store.db(), "p2", 40); });
  a.join();
  b.join();
  auto report = audit::verify_chain(store.db());
  EXPECT_TRUE(report.ok()) << joined(report.problems);
  ASSERT_EQ(report.proxies.size(), 2u) << joined(report.proxies);
  EXPECT_EQ(store.scalar("SELECT COUNT(DISTINCT proxy_id) FROM audit_chain_batches"), "2");
  const std::string id = store.scalar("SELECT MIN(id) FROM requests WHERE proxy_id = 'p2'");
  store.exec("UPDATE requests SET bytes_up = 0 WHERE id = " + id);
  report = audit::verify_chain(store.db());
  ASSERT_EQ(report.problems.size(), 1u) << joined(report.problems);
  EXPECT_NE(report.problems[0].find("requests row " + id + " (proxy 'p2'"), std::string::npos) << report.problems[0];
}

TEST(AuditChainCli, ABadKeyIsAConfigurationError) {
  TempDir dir;
  const auto not_a_key = dir.write("key.pem", "not a key\n");
  SqliteStore store;
  write_rows(store.db(), "p1", 1);
  const auto r = run_netbox({"audit", "verify", "--db", store.db(), "--audit-verify-key", not_a_key.string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(not_a_key.string()), std::string::npos) << r.err;
}

TEST(AuditChainCli, AProxyRefusesASigningKeyThatIsNotOne) {
  TempDir dir;
  const auto policy = dir.write("policy.json", R"({"version": 1, "allow": ["example.test"]})");
  const auto public_key = dir.path() / "audit.pub";
  ASSERT_EQ(run({"openssl", "genpkey", "-algorithm", "ed25519", "-out", (dir.path() / "audit.key").string()}).exit_code, 0);
  ASSERT_EQ(run({"openssl", "pkey", "-in", (dir.path() / "audit.key").string(), "-pubout", "-out", public_key.string()})
                .exit_code,
            0);
  // A public key where the private one belongs: refused at start, nothing written unsigned.
  auto argv = proxy_command(policy, 0, dir.path() / "audit.db", {"--audit-signing-key", public_key.string()});
  argv.erase(argv.begin());  // proxy_command names the binary first; run_netbox adds it
  const auto r = run_netbox(argv, std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--audit-signing-key"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(public_key.string()), std::string::npos) << r.err;
}

}  // namespace
}  // namespace netbox::test
