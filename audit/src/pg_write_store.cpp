// The PostgreSQL store. A batch is collected in memory and sent at commit() in one
// transaction, as one message whatever its size (write_batch): the chain head's lock, the
// completions as one UPDATE ... FROM VALUES, the rows' COPY, the chain link's COPY and the
// COMMIT; the client feeds each COPY as the server asks for it, so the round trips are the
// message's and the COPYs' (an event or an agent row, seldom in a batch, adds one each). Row ids come from the shared sequence in blocks (unique across
// proxies); a batch written again after a failure gets the same ids in the same order, and
// then goes through a staging table with ON CONFLICT DO NOTHING, so a batch whose commit did
// happen although its answer was lost (the server stopped at that moment) adds no row twice.
#include "netbox/audit/query.hpp"
#include "chain_stores.hpp"
#include "pg_schema.hpp"
#include "write_store.hpp"

#include <algorithm>
#include <deque>
#include <set>
#include <variant>
#include <vector>

namespace netbox::audit::detail {
namespace {

constexpr std::int64_t kIdBlock = 1024;  // the sequence's INCREMENT BY (migrations.cpp)
constexpr int kBlocksAtOnce = 4;         // blocks taken per round trip

constexpr const char* kRequestColumns =
    "(id, ts, agent, client_addr, kind, method, host, port, path, resolved_addr, decision, rule, reason, status, "
    "bytes_up, bytes_down, duration_ms, error, count, parent_id, proxy_id, client_pid, client_exe, client_argv)";

void field(std::string& out, std::string_view text) {
  if (text.empty()) out += "\\N";
  else append_copy_text(out, text);
  out += '\t';
}
// A NOT NULL column: empty text stays empty text, as SQLite stores it (a malformed request
// may have no host); \N there would make the server refuse the whole batch.
void required(std::string& out, std::string_view text) {
  append_copy_text(out, text);
  out += '\t';
}
void field(std::string& out, std::optional<std::int64_t> n) {
  if (n) out += std::to_string(*n);
  else out += "\\N";
  out += '\t';
}
void end_row(std::string& out) { out.back() = '\n'; }

std::optional<std::string> text_or_null(std::string_view text) {
  if (text.empty()) return std::nullopt;
  return pg_text(text);
}

struct PendingRequest {
  std::int64_t id;
  std::int64_t parent_id;  // 0: NULL
  const AuditRecord* record;
  const Completion* completion;  // written final with these values; nullptr: open
  std::size_t touched;           // its place in the batch's touched rows
};

// Ids handed out since the last commit, in order, and how many of them this attempt has taken again.
struct AttemptIds {
  std::vector<std::int64_t> ids;
  std::size_t reuse = 0;
  void rewind() { reuse = 0; }
  void clear() {
    ids.clear();
    reuse = 0;
  }
};

struct AgentStart {
  std::int64_t id;
  AgentRecord agent;
};
struct AgentEnd {
  std::int64_t id;  // used only when no start row is found
  AgentExit exit;
};

class PgWriteStore final : public WriteStore {
 public:
  explicit PgWriteStore(const WriterOptions& o)
      : address_(o.db_path.native()),
        proxy_id_(o.proxy_id),
        sync_(o.synchronous_full),
        conn_(open_postgresql_for_writing(address_)),
        signer_(o.signing_key.empty() ? nullptr : std::make_unique<Signer>(o.signing_key, "--audit-signing-key")) {
    set_up_session();
  }

  void begin() override {
    if (!conn_->connected()) {
      conn_->reconnect();
      set_up_session();
    }
    pending_.clear();
    completions_.clear();
    events_.clear();
    agents_.clear();
    days_.clear();
    touched_.clear();
    rows_.rewind();
    others_.rewind();
  }

  void commit() override {
    if (!pending_.empty() || !completions_.empty() || !events_.empty() || !agents_.empty()) write_batch();
    known_days_.insert(days_.begin(), days_.end());
    forget_retry();
  }

  void abandon() override {
    conn_->rollback();
    // The same items come again, in the same order: they get the same ids.
    rows_.rewind();
    others_.rewind();
    retry_ = true;
  }

  // The row is encoded later, while its COPY runs (write_batch): `r` and `c` are the
  // writer's and stay as they are until commit() or abandon() returns (write_store.hpp).
  std::int64_t insert_request(const AuditRecord& r, const Completion* c, std::int64_t parent_id) override {
    const std::int64_t id = take_id(rows_);
    std::string ts = format_timestamp(r.ts);
    if (days_.empty() || days_.rbegin()->compare(0, 10, ts, 0, 10) != 0) days_.insert(ts.substr(0, 10));
    pending_.push_back({id, parent_id, &r, c, touched_.size()});
    touched_.push_back(Touched{chained_table("requests"), id, std::move(ts), {}});  // its digest: in write_batch
    return id;
  }

  bool complete_request(std::int64_t id, const Completion& c) override {
    // One row of the completions' VALUES list, typed (a column may be NULL in every row).
    std::string& out = completions_;
    const auto number = [&out](std::optional<std::int64_t> n, const char* type) {
      out += n ? std::to_string(*n) : "NULL";
      out += type;
    };
    const auto text = [&out](std::string_view t) {
      if (t.empty()) out += "NULL::text";
      else append_sql_literal(out, t);
      out += ',';
    };
    out += out.empty() ? "(" : ",(";
    number(id, "::bigint,");
    number(c.status ? std::optional<std::int64_t>(*c.status) : std::nullopt, "::integer,");
    number(static_cast<std::int64_t>(c.bytes_up), "::bigint,");
    number(static_cast<std::int64_t>(c.bytes_down), "::bigint,");
    number(c.duration_ms, "::bigint,");
    for (const std::string* t : {&c.error, &c.resolved_addr, &c.decision, &c.rule, &c.reason}) text(*t);
    out.back() = ')';
    return true;
  }

  void insert_event(const Event& e) override {
    events_.emplace_back(take_id(others_), e);
    touched_.push_back(event_touched(events_.back().first, format_timestamp(e.ts), e, proxy_id_));
  }
  void insert_agent(const AgentRecord& a) override { agents_.emplace_back(AgentStart{take_id(others_), a}); }
  void agent_exited(const AgentExit& x) override { agents_.emplace_back(AgentEnd{take_id(others_), x}); }

  std::int64_t shipped_upto(const std::string& spool_key) override {
    if (!conn_->connected()) {
      conn_->reconnect();
      set_up_session();
    }
    // By the spool's key alone (random, made with the file): a spool reopened under another
    // --proxy-id (a renamed host) must still find what it shipped, or it ships it again.
    auto r = conn_->query(
        // Text matching, not a jsonb cast: the server may try the cast on any event's detail.
        "SELECT COALESCE(MAX(substring(detail from '\"upto\":([0-9]+)')::bigint), 0) FROM events "
        "WHERE kind = 'audit_spool_shipped' AND strpos(detail, $1) > 0",
        {"\"spool\":\"" + spool_key + "\""});
    return std::stoll(pg_value(r.get(), 0, 0));
  }

  void forget_retry() override {
    rows_.clear();
    others_.clear();
    retry_ = false;
  }

  PruneCounts prune_batch(Clock::time_point cutoff, Clock::time_point now, std::uint64_t limit) override {
    if (!conn_->connected()) {
      conn_->reconnect();
      set_up_session();
    }
    return pg_prune_batch(*conn_, cutoff, now, limit);
  }

 private:
  void set_up_session() {
    // Without --audit-sync a commit returns before the server's WAL flush, as SQLite's
    // synchronous=NORMAL: a crash of the proxy loses nothing committed, a crash of the
    // server's machine may lose the last commits.
    conn_->exec(std::string("SET synchronous_commit = ") + (sync_ ? "on" : "off"));
    conn_->exec("CREATE TEMP TABLE IF NOT EXISTS requests_in (LIKE requests INCLUDING DEFAULTS) ON COMMIT DELETE ROWS");
  }

  // One pending row as COPY text, and its digest into its place in touched_.
  void encode(const PendingRequest& p, std::string& out) {
    const AuditRecord& r = *p.record;
    Touched& link = touched_[p.touched];
    const std::string& ts = link.ts;
    link.digest = request_touched(p.id, ts, r, p.completion, p.parent_id, proxy_id_).digest;
    const RequestValues v = request_values(r, p.completion);
    field(out, p.id);
    required(out, ts);
    required(out, r.agent);
    field(out, r.client_addr);
    required(out, r.kind);
    field(out, r.method);
    required(out, r.host);
    field(out, std::int64_t{r.port});
    field(out, r.path);
    field(out, v.resolved_addr);
    required(out, v.decision);
    field(out, v.rule);
    field(out, v.reason);
    field(out, v.status ? std::optional<std::int64_t>(*v.status) : std::nullopt);
    field(out, v.bytes_up);
    field(out, v.bytes_down);
    field(out, v.duration_ms);
    field(out, v.error);
    field(out, static_cast<std::int64_t>(r.count));
    field(out, p.parent_id ? std::optional<std::int64_t>(p.parent_id) : std::nullopt);
    field(out, proxy_id_);
    field(out, r.origin.pid);
    field(out, r.origin.exe);
    field(out, r.origin.argv);
    end_row(out);
  }

  // The rows go in pieces as they are encoded, so the server inserts one piece while the
  // writer encodes the next (the two work on different cores).
  void feed_rows(const std::function<void(std::string_view)>& put) {
    constexpr std::size_t kPiece = 64 * 1024;
    std::string& out = copy_buffer_;
    out.clear();
    for (const PendingRequest& p : pending_) {
      encode(p, out);
      if (out.size() >= kPiece) {
        put(out);
        out.clear();
      }
    }
    put(out);
  }

  // One message: the head's lock, the completions, the rows' COPY, the chain link's COPY, the
  // head moved, COMMIT. The client sends the COPYs' data as the server asks for it and reads
  // the rest at the end.
  void write_batch() {
    std::string sql = "BEGIN;";
    const bool new_day =
        std::any_of(days_.begin(), days_.end(), [this](const std::string& d) { return !known_days_.contains(d); });
    if (new_day || !events_.empty() || !agents_.empty()) {
      conn_->exec("BEGIN");
      sql.clear();
    }
    // The partitions first: a day's rows need its partition.
    for (const auto& day : days_)
      if (!known_days_.contains(day)) ensure_day_partition(*conn_, day);
    // The rows this attempt completes are added to touched_ and taken off again at the end,
    // success or not: a retry completes them anew (no copy of the batch's rows per commit).
    struct Restore {
      std::vector<Touched>& v;
      std::size_t n;
      ~Restore() { v.erase(v.begin() + static_cast<std::ptrdiff_t>(n), v.end()); }
    } restore{touched_, touched_.size()};
    // Events and agent rows, seldom in a batch, are written one by one before the rest (an
    // agent's exit looks for its start row).
    for (const auto& e : events_) write_event(e.first, e.second);
    for (const auto& a : agents_) touched_.push_back(std::visit([this](const auto& x) { return write_agent(x); }, a));
    sql += PgChainStore::lock_sql(proxy_id_);
    if (!completions_.empty()) sql += complete_sql();
    std::vector<PgConn::CopyFeed> feeds;
    // A retry may repeat rows a lost commit already stored; a first attempt cannot.
    if (!pending_.empty()) {
      sql += std::string(retry_ ? "COPY requests_in " : "COPY requests ") + kRequestColumns + " FROM STDIN;";
      if (retry_) sql += "INSERT INTO requests SELECT * FROM requests_in ON CONFLICT DO NOTHING;";
      feeds.push_back([this](const auto&, const auto& put) { feed_rows(put); });
    }
    sql += PgChainStore::append_sql(proxy_id_);
    feeds.push_back([this](const std::vector<PgResult>& rows, const PgConn::CopyPut& put) { feed_link(rows, put); });
    conn_->script(sql + "COMMIT", feeds);
  }

  // The chain's link, once the head and the completed rows are known.
  void feed_link(const std::vector<PgResult>& rows, const PgConn::CopyPut& put) {
    if (!completions_.empty()) {
      const ChainedTable& requests = *chained_table("requests");
      const PGresult* r = rows.at(1).get();
      for (int i = 0; i < PQntuples(r); ++i) touched_.push_back(returned_touched(requests, PgRow(r, i)));
    }
    PgChainStore chain(PgChainStore::head(rows.at(0).get()));
    seal(chain, proxy_id_, touched_, signer_.get());
    put(chain.copy_data());
  }

  // The batch's completions in one statement. A VALUES list rather than a staging table: the
  // planner knows how many rows it holds and probes requests' primary key for each, where a
  // table it has no statistics for made it scan the whole day partition per batch. RETURNING:
  // the rows as completed, for their chain links (nothing is read back).
  std::string complete_sql() const {
    static const std::string kSet =
        "UPDATE requests r SET status = c.status, bytes_up = c.bytes_up, bytes_down = c.bytes_down, "
        "duration_ms = c.duration_ms, error = c.error, resolved_addr = COALESCE(c.resolved_addr, r.resolved_addr), "
        "decision = COALESCE(c.decision, r.decision), rule = COALESCE(c.rule, r.rule), "
        "reason = COALESCE(c.reason, r.reason) FROM (VALUES ";
    static const std::string kWhere =
        ") AS c(id, status, bytes_up, bytes_down, duration_ms, error, resolved_addr, decision, rule, reason) "
        "WHERE r.id = c.id RETURNING " +
        qualified_columns(*chained_table("requests"), "r") + ";";
    return kSet + completions_ + kWhere;
  }

  // Request rows and the other rows reuse their ids apart: a retry may write events the
  // first attempt did not (the writer's audit_error/audit_recovered, the spool's), and the
  // request rows must still get the ids they had.
  std::int64_t take_id(AttemptIds& ids) {
    if (ids.reuse < ids.ids.size()) return ids.ids[ids.reuse++];
    if (next_id_ == block_end_) {
      if (blocks_.empty()) {
        auto r = conn_->query("SELECT nextval('netbox_row_ids') FROM generate_series(1, " +
                              std::to_string(kBlocksAtOnce) + ")");
        for (int i = 0; i < PQntuples(r.get()); ++i) blocks_.push_back(std::stoll(pg_value(r.get(), i, 0)));
      }
      next_id_ = blocks_.front();
      blocks_.pop_front();
      block_end_ = next_id_ + kIdBlock;
    }
    ids.ids.push_back(next_id_);
    ++ids.reuse;
    return next_id_++;
  }

  void write_event(std::int64_t id, const Event& e) {
    conn_->query(
        "INSERT INTO events (id, ts, kind, message, detail, count, proxy_id) VALUES ($1, $2, $3, $4, $5, $6, $7) "
        "ON CONFLICT DO NOTHING",
        {std::to_string(id), format_timestamp(e.ts), pg_text(e.kind), pg_text(e.message), text_or_null(e.detail),
         std::to_string(e.count), text_or_null(proxy_id_)});
  }

  // Each returns the row written or completed, for the chain.
  Touched write_agent(const AgentStart& s) {
    const auto& a = s.agent;
    const std::string started = format_timestamp(a.started);
    conn_->query(
        "INSERT INTO agents (id, name, pid, command_line, policy_digest, address, started, sandbox, proxy_id) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING",
        {std::to_string(s.id), pg_text(a.name), std::to_string(a.pid), text_or_null(a.command_line),
         text_or_null(a.policy_digest), text_or_null(a.address), started, text_or_null(a.sandbox),
         text_or_null(proxy_id_)});
    return agent_touched(s.id, started, a, proxy_id_);
  }

  Touched write_agent(const AgentEnd& e) {
    const auto& x = e.exit;
    const std::string ended = format_timestamp(x.ended);
    static const std::string kExit =
        "UPDATE agents SET ended = $3, exit_status = $4, resource_usage = $5 WHERE id = "
        "(SELECT id FROM agents WHERE name = $1 AND pid = $2 AND ended IS NULL ORDER BY id DESC LIMIT 1) RETURNING " +
        std::string(chained_table("agents")->columns);
    const std::optional<std::string> status =
        x.exit_status ? std::optional<std::string>(std::to_string(*x.exit_status)) : std::nullopt;
    auto r = conn_->query(kExit, {pg_text(x.name), std::to_string(x.pid), ended, status, text_or_null(x.resource_usage)});
    if (PQntuples(r.get()) > 0) return returned_touched(*chained_table("agents"), PgRow(r.get(), 0));
    // No start was recorded: keep the exit anyway rather than lose it.
    conn_->query(
        "INSERT INTO agents (id, name, pid, ended, exit_status, resource_usage, proxy_id) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
        {std::to_string(e.id), pg_text(x.name), std::to_string(x.pid), ended, status,
         text_or_null(x.resource_usage), text_or_null(proxy_id_)});
    return agent_exit_touched(e.id, ended, x, proxy_id_);
  }

  std::string address_;
  std::string proxy_id_;
  bool sync_;
  std::unique_ptr<PgConn> conn_;
  std::unique_ptr<Signer> signer_;

  // The open batch.
  std::vector<PendingRequest> pending_;  // request rows, encoded in write_batch
  std::string copy_buffer_;               // one piece of their COPY text
  std::string completions_;  // rows of a VALUES list
  std::vector<std::pair<std::int64_t, Event>> events_;
  std::vector<std::variant<AgentStart, AgentEnd>> agents_;
  std::set<std::string> days_;
  std::vector<Touched> touched_;  // rows the open batch writes or completes, for its chain links

  std::set<std::string> known_days_;  // partitions this writer made sure of
  AttemptIds rows_;    // request rows' ids handed out since the last commit
  AttemptIds others_;  // events' and agents'
  bool retry_ = false;                     // the open batch failed once already
  std::deque<std::int64_t> blocks_;  // first ids of blocks taken and not yet used
  std::int64_t next_id_ = 0;
  std::int64_t block_end_ = 0;
};

}  // namespace

std::unique_ptr<WriteStore> open_postgresql_write_store(const WriterOptions& options) {
  return std::make_unique<PgWriteStore>(options);
}

}  // namespace netbox::audit::detail
