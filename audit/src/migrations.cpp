#include "migrations.hpp"

#include "netbox/audit/schema.hpp"

namespace netbox::audit::detail {
namespace {

// Version 1: requests, agents, events, the indexes `netbox audit` needs, and views for
// security teams. Timestamps are TEXT in one fixed format ("2026-11-22T04:15:41.123Z")
// so they sort and compare as strings and `substr` gives hours and days.
constexpr const char* kV1 = R"sql(
CREATE TABLE requests (
  id            INTEGER PRIMARY KEY,
  ts            TEXT    NOT NULL,
  agent         TEXT    NOT NULL,
  client_addr   TEXT,
  kind          TEXT    NOT NULL,
  method        TEXT,
  host          TEXT    NOT NULL,
  port          INTEGER NOT NULL,
  path          TEXT,
  resolved_addr TEXT,
  decision      TEXT    NOT NULL,
  rule          TEXT,
  reason        TEXT,
  status        INTEGER,
  bytes_up      INTEGER NOT NULL DEFAULT 0,
  bytes_down    INTEGER NOT NULL DEFAULT 0,
  duration_ms   INTEGER,
  error         TEXT
);
CREATE INDEX requests_ts ON requests (ts);
CREATE INDEX requests_agent_ts ON requests (agent, ts);
CREATE INDEX requests_decision_ts ON requests (decision, ts);
CREATE INDEX requests_host ON requests (host);

CREATE TABLE agents (
  id             INTEGER PRIMARY KEY,
  name           TEXT    NOT NULL,
  pid            INTEGER NOT NULL,
  command_line   TEXT,
  policy_digest  TEXT,
  address        TEXT,
  started        TEXT,
  ended          TEXT,
  exit_status    INTEGER,
  resource_usage TEXT
);
CREATE INDEX agents_name_pid ON agents (name, pid);

CREATE TABLE events (
  id      INTEGER PRIMARY KEY,
  ts      TEXT NOT NULL,
  kind    TEXT NOT NULL,
  message TEXT NOT NULL,
  detail  TEXT
);
CREATE INDEX events_ts ON events (ts);

CREATE VIEW denied_by_host AS
  SELECT host,
         COUNT(*)              AS denied,
         COUNT(DISTINCT agent) AS agents,
         MIN(ts)               AS first_seen,
         MAX(ts)               AS last_seen
  FROM requests WHERE decision = 'deny'
  GROUP BY host ORDER BY denied DESC, host;

CREATE VIEW agent_activity AS
  SELECT agent,
         COUNT(*)                                           AS requests,
         SUM(decision = 'allow')                            AS allowed,
         SUM(decision = 'deny')                             AS denied,
         SUM(decision = 'report')                           AS reported,
         COUNT(DISTINCT host)                               AS hosts,
         SUM(bytes_up)                                      AS bytes_up,
         SUM(bytes_down)                                    AS bytes_down,
         MIN(ts)                                            AS first_seen,
         MAX(ts)                                            AS last_seen
  FROM requests GROUP BY agent ORDER BY agent;

CREATE VIEW hourly_traffic AS
  SELECT substr(ts, 1, 13) || ':00Z'  AS hour,
         COUNT(*)                     AS requests,
         SUM(decision = 'allow')      AS allowed,
         SUM(decision = 'deny')       AS denied,
         SUM(decision = 'report')     AS reported,
         SUM(bytes_up)                AS bytes_up,
         SUM(bytes_down)              AS bytes_down
  FROM requests GROUP BY hour ORDER BY hour;
)sql";

// Version 2: `count`, the requests a row stands for (1, or more for a row into which the
// writer folded repeated refusals), and views that add counts instead of counting rows.
constexpr const char* kV2 = R"sql(
ALTER TABLE requests ADD COLUMN count INTEGER NOT NULL DEFAULT 1;

DROP VIEW IF EXISTS denied_by_host;
CREATE VIEW denied_by_host AS
  SELECT host,
         SUM(count)            AS denied,
         COUNT(DISTINCT agent) AS agents,
         MIN(ts)               AS first_seen,
         MAX(ts)               AS last_seen
  FROM requests WHERE decision = 'deny'
  GROUP BY host ORDER BY denied DESC, host;

DROP VIEW IF EXISTS agent_activity;
CREATE VIEW agent_activity AS
  SELECT agent,
         SUM(count)                                         AS requests,
         SUM((decision = 'allow') * count)                  AS allowed,
         SUM((decision = 'deny') * count)                   AS denied,
         SUM((decision = 'report') * count)                 AS reported,
         COUNT(DISTINCT host)                               AS hosts,
         SUM(bytes_up)                                      AS bytes_up,
         SUM(bytes_down)                                    AS bytes_down,
         MIN(ts)                                            AS first_seen,
         MAX(ts)                                            AS last_seen
  FROM requests GROUP BY agent ORDER BY agent;

DROP VIEW IF EXISTS hourly_traffic;
CREATE VIEW hourly_traffic AS
  SELECT substr(ts, 1, 13) || ':00Z'         AS hour,
         SUM(count)                          AS requests,
         SUM((decision = 'allow') * count)   AS allowed,
         SUM((decision = 'deny') * count)    AS denied,
         SUM((decision = 'report') * count)  AS reported,
         SUM(bytes_up)                       AS bytes_up,
         SUM(bytes_down)                     AS bytes_down
  FROM requests GROUP BY hour ORDER BY hour;
)sql";

// Version 3: `sandbox` in agents, what the agent ran under (the `netbox launch --explain`
// report as JSON), so a security team can query it. The views do not read it.
constexpr const char* kV3 = R"sql(
ALTER TABLE agents ADD COLUMN sandbox TEXT;
)sql";

// Version 4: two more decisions (netbox/audit/decision.hpp), so that a row says what the
// agent was told (X-Netbox-Decision) and what the metrics count: `cap` for a refusal by a
// connection limit (429), `error` for a request netbox did not complete (a malformed
// request, a DNS, dial or upstream failure, a broken request body). Before, a cap and a
// malformed request were stored as `deny`, a failed upstream as `allow` (or `report`).
// Old rows are moved where their status tells them apart:
//  - `deny` rows: the policy refuses with 403 only, so 429 is a cap and any other 4xx
//    (400, 405, 413, 414, 431) a malformed request. Exact, folded rows (host '*') too.
//  - `allow`/`report` rows with an error, a netbox error status (400, 408, 413, 502, 503,
//    504) and nothing relayed down: netbox answered instead of the upstream. Left alone:
//    rows whose response was cut after it started (those errors name the response), and
//    tunnels (status 200). An upstream's own 502/503/504 cut off before its first body
//    byte by a timeout reads the same and is moved too; such rows are rare.
// The views count the new decisions in columns of their own.
constexpr const char* kV4 = R"sql(
UPDATE requests SET decision = 'cap' WHERE decision = 'deny' AND status = 429;
UPDATE requests SET decision = 'error'
 WHERE decision = 'deny' AND status IN (400, 405, 413, 414, 431);
UPDATE requests SET decision = 'error'
 WHERE decision IN ('allow', 'report') AND error IS NOT NULL AND bytes_down = 0
   AND status IN (400, 408, 413, 502, 503, 504)
   AND error NOT LIKE 'reading the response body failed%'
   AND error NOT LIKE 'writing the response to the agent failed%';

DROP VIEW IF EXISTS agent_activity;
CREATE VIEW agent_activity AS
  SELECT agent,
         SUM(count)                                         AS requests,
         SUM((decision = 'allow') * count)                  AS allowed,
         SUM((decision = 'deny') * count)                   AS denied,
         SUM((decision = 'report') * count)                 AS reported,
         SUM((decision = 'cap') * count)                    AS capped,
         SUM((decision = 'error') * count)                  AS failed,
         COUNT(DISTINCT host)                               AS hosts,
         SUM(bytes_up)                                      AS bytes_up,
         SUM(bytes_down)                                    AS bytes_down,
         MIN(ts)                                            AS first_seen,
         MAX(ts)                                            AS last_seen
  FROM requests GROUP BY agent ORDER BY agent;

DROP VIEW IF EXISTS hourly_traffic;
CREATE VIEW hourly_traffic AS
  SELECT substr(ts, 1, 13) || ':00Z'         AS hour,
         SUM(count)                          AS requests,
         SUM((decision = 'allow') * count)   AS allowed,
         SUM((decision = 'deny') * count)    AS denied,
         SUM((decision = 'report') * count)  AS reported,
         SUM((decision = 'cap') * count)     AS capped,
         SUM((decision = 'error') * count)   AS failed,
         SUM(bytes_up)                       AS bytes_up,
         SUM(bytes_down)                     AS bytes_down
  FROM requests GROUP BY hour ORDER BY hour;
)sql";

// Version 5: parent_id links a request inside an inspected TLS tunnel (issue 16) to the
// tunnel's row; NULL for every other row, old ones included. inspected_requests lists
// those requests beside their tunnel's agent connection and start.
constexpr const char* kV5 = R"sql(
ALTER TABLE requests ADD COLUMN parent_id INTEGER REFERENCES requests (id);
CREATE INDEX requests_parent ON requests (parent_id) WHERE parent_id IS NOT NULL;

DROP VIEW IF EXISTS inspected_requests;
CREATE VIEW inspected_requests AS
  SELECT r.id, r.ts, r.agent, r.method, r.host, r.port, r.path, r.decision, r.rule, r.reason, r.status,
         r.bytes_up, r.bytes_down, r.duration_ms, r.error,
         t.id AS tunnel_id, t.ts AS tunnel_ts, t.client_addr AS tunnel_client_addr
  FROM requests r JOIN requests t ON t.id = r.parent_id
  ORDER BY r.id;
)sql";

// Version 6: events.count, as requests.count: the events an agent causes (exfiltration
// attempts) are folded into counted rows per agent and minute; 1 for every older row.
constexpr const char* kV6 = R"sql(
ALTER TABLE events ADD COLUMN count INTEGER NOT NULL DEFAULT 1;
CREATE INDEX events_kind_ts ON events (kind, ts);
)sql";

// The views, in SQL both backends read alike (CASE instead of SQLite's boolean arithmetic),
// so a security team's queries work on either store.
constexpr const char* kViews = R"sql(
CREATE VIEW denied_by_host AS
  SELECT host,
         SUM(count)            AS denied,
         COUNT(DISTINCT agent) AS agents,
         MIN(ts)               AS first_seen,
         MAX(ts)               AS last_seen
  FROM requests WHERE decision = 'deny'
  GROUP BY host ORDER BY denied DESC, host;

CREATE VIEW agent_activity AS
  SELECT agent,
         SUM(count)                                              AS requests,
         SUM(CASE WHEN decision = 'allow' THEN count ELSE 0 END)  AS allowed,
         SUM(CASE WHEN decision = 'deny' THEN count ELSE 0 END)   AS denied,
         SUM(CASE WHEN decision = 'report' THEN count ELSE 0 END) AS reported,
         SUM(CASE WHEN decision = 'cap' THEN count ELSE 0 END)    AS capped,
         SUM(CASE WHEN decision = 'error' THEN count ELSE 0 END)  AS failed,
         COUNT(DISTINCT host)                                    AS hosts,
         SUM(bytes_up)                                           AS bytes_up,
         SUM(bytes_down)                                         AS bytes_down,
         MIN(ts)                                                 AS first_seen,
         MAX(ts)                                                 AS last_seen
  FROM requests GROUP BY agent ORDER BY agent;

CREATE VIEW hourly_traffic AS
  SELECT substr(ts, 1, 13) || ':00Z'                             AS hour,
         SUM(count)                                              AS requests,
         SUM(CASE WHEN decision = 'allow' THEN count ELSE 0 END)  AS allowed,
         SUM(CASE WHEN decision = 'deny' THEN count ELSE 0 END)   AS denied,
         SUM(CASE WHEN decision = 'report' THEN count ELSE 0 END) AS reported,
         SUM(CASE WHEN decision = 'cap' THEN count ELSE 0 END)    AS capped,
         SUM(CASE WHEN decision = 'error' THEN count ELSE 0 END)  AS failed,
         SUM(bytes_up)                                           AS bytes_up,
         SUM(bytes_down)                                         AS bytes_down
  FROM requests GROUP BY substr(ts, 1, 13) ORDER BY hour;

CREATE VIEW inspected_requests AS
  SELECT r.id, r.ts, r.agent, r.method, r.host, r.port, r.path, r.decision, r.rule, r.reason, r.status,
         r.bytes_up, r.bytes_down, r.duration_ms, r.error,
         t.id AS tunnel_id, t.ts AS tunnel_ts, t.client_addr AS tunnel_client_addr
  FROM requests r JOIN requests t ON t.id = r.parent_id
  ORDER BY r.id;
)sql";

// Version 7: proxy_id on every row, the proxy that wrote it (its host name unless
// --proxy-id says otherwise), so many proxies can share one store; the views as both
// backends read them. NULL for older rows.
constexpr const char* kV7 = R"sql(
ALTER TABLE requests ADD COLUMN proxy_id TEXT;
ALTER TABLE events ADD COLUMN proxy_id TEXT;
ALTER TABLE agents ADD COLUMN proxy_id TEXT;
DROP VIEW IF EXISTS denied_by_host;
DROP VIEW IF EXISTS agent_activity;
DROP VIEW IF EXISTS hourly_traffic;
DROP VIEW IF EXISTS inspected_requests;
)sql";

// PostgreSQL's baseline, version 7 as a whole: the same tables and columns as SQLite's
// (text timestamps in the same format, so the readers' SQL is one), with
// - text compared bytewise (COLLATE "C") as SQLite does, whatever the server's locale;
// - requests partitioned by day on ts (range partitions requests_pYYYYMMDD, created by
//   the writer as days begin), so retention drops a day at once; the key is (id, ts) as
//   PostgreSQL requires the partition column in it, and parent_id has no foreign key;
// - ids from one sequence (netbox_row_ids) for every table, which each writer takes in
//   blocks of 1,024 (INCREMENT BY): unique across the proxies writing the store, and
//   increasing in the order each proxy wrote its rows.
constexpr const char* kPgV7 = R"sql(
CREATE TABLE netbox_schema (version integer NOT NULL);
CREATE SEQUENCE netbox_row_ids INCREMENT BY 1024;
CREATE TABLE requests (
  id            bigint  NOT NULL,
  ts            text    COLLATE "C" NOT NULL,
  agent         text    COLLATE "C" NOT NULL,
  client_addr   text    COLLATE "C",
  kind          text    COLLATE "C" NOT NULL,
  method        text    COLLATE "C",
  host          text    COLLATE "C" NOT NULL,
  port          integer NOT NULL,
  path          text    COLLATE "C",
  resolved_addr text    COLLATE "C",
  decision      text    COLLATE "C" NOT NULL,
  rule          text    COLLATE "C",
  reason        text    COLLATE "C",
  status        integer,
  bytes_up      bigint  NOT NULL DEFAULT 0,
  bytes_down    bigint  NOT NULL DEFAULT 0,
  duration_ms   bigint,
  error         text    COLLATE "C",
  count         bigint  NOT NULL DEFAULT 1,
  parent_id     bigint,
  proxy_id      text    COLLATE "C",
  PRIMARY KEY (id, ts)
) PARTITION BY RANGE (ts);
CREATE INDEX requests_ts ON requests (ts);
CREATE INDEX requests_agent_ts ON requests (agent, ts);
CREATE INDEX requests_decision_ts ON requests (decision, ts);
CREATE INDEX requests_host ON requests (host);
CREATE INDEX requests_parent ON requests (parent_id) WHERE parent_id IS NOT NULL;

CREATE TABLE agents (
  id             bigint PRIMARY KEY,
  name           text   COLLATE "C" NOT NULL,
  pid            bigint NOT NULL,
  command_line   text   COLLATE "C",
  policy_digest  text   COLLATE "C",
  address        text   COLLATE "C",
  started        text   COLLATE "C",
  ended          text   COLLATE "C",
  exit_status    integer,
  resource_usage text   COLLATE "C",
  sandbox        text   COLLATE "C",
  proxy_id       text   COLLATE "C"
);
CREATE INDEX agents_name_pid ON agents (name, pid);

CREATE TABLE events (
  id       bigint PRIMARY KEY,
  ts       text   COLLATE "C" NOT NULL,
  kind     text   COLLATE "C" NOT NULL,
  message  text   COLLATE "C" NOT NULL,
  detail   text   COLLATE "C",
  count    bigint NOT NULL DEFAULT 1,
  proxy_id text   COLLATE "C"
);
CREATE INDEX events_ts ON events (ts);
CREATE INDEX events_kind_ts ON events (kind, ts);
)sql";

// Version 8: the audit chain (chain.hpp, docs/audit.md "Integrity"). Every row a writer
// makes final (or opens) gets a link in audit_chain: the SHA-256 of the row's columns as
// stored (digest) chained to the previous link of the same proxy (hash), in commit order,
// with an Ed25519 signature on the last link of a batch when the writer has a key.
// audit_chain_heads holds each proxy's last link (read and advanced inside every batch's
// transaction, so writers sharing a proxy_id still make one chain), the last link pruning
// removed (anchor) and the cutoff of the last prune. audit_chain_start: the highest id of
// each table before this step; older rows are not covered. SQLite keeps audit_chain
// WITHOUT ROWID: its key is the table, one b-tree written per link instead of two.
constexpr const char* kV8 = R"sql(
CREATE TABLE audit_chain (
  proxy_id  TEXT    NOT NULL,
  seq       INTEGER NOT NULL,
  tbl       TEXT    NOT NULL,
  row_id    INTEGER NOT NULL,
  ts        TEXT    NOT NULL,
  digest    TEXT    NOT NULL,
  hash      TEXT    NOT NULL,
  signature TEXT,
  PRIMARY KEY (proxy_id, seq)
) WITHOUT ROWID;
CREATE TABLE audit_chain_heads (
  proxy_id      TEXT    PRIMARY KEY,
  seq           INTEGER NOT NULL,
  hash          TEXT    NOT NULL,
  anchor_seq    INTEGER NOT NULL DEFAULT 0,
  anchor_hash   TEXT    NOT NULL DEFAULT '0000000000000000000000000000000000000000000000000000000000000000',
  pruned_before TEXT    NOT NULL DEFAULT ''
);
CREATE TABLE audit_chain_start (tbl TEXT PRIMARY KEY, last_id INTEGER NOT NULL);
INSERT INTO audit_chain_start (tbl, last_id)
  SELECT 'requests', COALESCE(MAX(id), 0) FROM requests UNION ALL
  SELECT 'events', COALESCE(MAX(id), 0) FROM events UNION ALL
  SELECT 'agents', COALESCE(MAX(id), 0) FROM agents;
)sql";

constexpr const char* kPgV8 = R"sql(
CREATE TABLE audit_chain (
  proxy_id  text   COLLATE "C" NOT NULL,
  seq       bigint NOT NULL,
  tbl       text   COLLATE "C" NOT NULL,
  row_id    bigint NOT NULL,
  ts        text   COLLATE "C" NOT NULL,
  digest    text   COLLATE "C" NOT NULL,
  hash      text   COLLATE "C" NOT NULL,
  signature text   COLLATE "C",
  PRIMARY KEY (proxy_id, seq)
);
CREATE TABLE audit_chain_heads (
  proxy_id      text   COLLATE "C" PRIMARY KEY,
  seq           bigint NOT NULL,
  hash          text   COLLATE "C" NOT NULL,
  anchor_seq    bigint NOT NULL DEFAULT 0,
  anchor_hash   text   COLLATE "C" NOT NULL DEFAULT '0000000000000000000000000000000000000000000000000000000000000000',
  pruned_before text   COLLATE "C" NOT NULL DEFAULT ''
);
CREATE TABLE audit_chain_start (tbl text COLLATE "C" PRIMARY KEY, last_id bigint NOT NULL);
INSERT INTO audit_chain_start (tbl, last_id)
  SELECT 'requests', COALESCE(MAX(id), 0) FROM requests UNION ALL
  SELECT 'events', COALESCE(MAX(id), 0) FROM events UNION ALL
  SELECT 'agents', COALESCE(MAX(id), 0) FROM agents;
)sql";

// Version 9: the audit chain links batches, not rows (chain.hpp): one audit_chain_batches
// row per written batch, its rows' ids, link timestamps and binary digests in `members`,
// its hash and signature as bytes, numbered in the same per-proxy sequence as the version-8
// links in audit_chain (kept: a store upgraded from 8 verifies across the change). One
// tuple per batch instead of one per row is what recovers the writer's rate (tests/bench
// RESULTS.md, B5). A rowid table: its rows are large (about 66 bytes per member).
constexpr const char* kV9 = R"sql(
CREATE TABLE audit_chain_batches (
  proxy_id  TEXT    NOT NULL,
  seq       INTEGER NOT NULL,
  ts        TEXT    NOT NULL,
  members   BLOB    NOT NULL,
  hash      BLOB    NOT NULL,
  signature BLOB,
  PRIMARY KEY (proxy_id, seq)
);
)sql";

// PostgreSQL's step 9 also holds the fleet's policy source (docs/fleet.md, "One policy for
// many proxies"): `netbox policy push` inserts a checked policy as the next version, and a
// proxy started with `--policy postgresql://...` runs the latest one; every change of the
// table notifies the proxies LISTENing on netbox_policy, whoever made it (push or SQL).
constexpr const char* kPgV9 = R"sql(
CREATE TABLE policies (
  version      bigserial PRIMARY KEY,
  published    text COLLATE "C" NOT NULL,
  published_by text COLLATE "C",
  digest       text COLLATE "C" NOT NULL,
  body         text NOT NULL
);
CREATE FUNCTION netbox_policy_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('netbox_policy', '');
  RETURN NULL;
END $$;
CREATE TRIGGER policies_changed AFTER INSERT OR UPDATE OR DELETE ON policies
  FOR EACH STATEMENT EXECUTE FUNCTION netbox_policy_changed();
CREATE TABLE audit_chain_batches (
  proxy_id  text   COLLATE "C" NOT NULL,
  seq       bigint NOT NULL,
  ts        text   COLLATE "C" NOT NULL,
  members   bytea  NOT NULL,
  hash      bytea  NOT NULL,
  signature bytea,
  PRIMARY KEY (proxy_id, seq)
);
-- Digests do not compress: stored out of line without trying.
ALTER TABLE audit_chain_batches ALTER COLUMN members SET STORAGE EXTERNAL;
)sql";

// Version 10: who opened each request's connection (issue 27): the agent's process as the
// proxy found it from the connection's socket (docs/audit.md). Added, never renamed; NULL
// for rows before this step and for clients that were not launched. Covered by the chain
// from version 11 on (row tag v2); digests of older rows stay what they were.
constexpr const char* kV10 = R"sql(
ALTER TABLE requests ADD COLUMN client_pid INTEGER;
ALTER TABLE requests ADD COLUMN client_exe TEXT;
ALTER TABLE requests ADD COLUMN client_argv TEXT;
)sql";

constexpr const char* kPgV10 = R"sql(
ALTER TABLE requests ADD COLUMN client_pid bigint;
ALTER TABLE requests ADD COLUMN client_exe text COLLATE "C";
ALTER TABLE requests ADD COLUMN client_argv text COLLATE "C";
)sql";

// Version 11: the audit chain's row tag v2 (chain.hpp): requests written from here on are
// linked with client_pid, client_exe and client_argv in their digests, so an edit to them
// fails `netbox audit verify`; rows linked before keep their v1 digests, which verify still
// checks. No table changes: the step is the version, so that a netbox that knows only v1
// refuses this store ("newer than the version ... this netbox understands") instead of
// taking its v2 links for edited ones.
constexpr const char* kV11 = "SELECT 1;";

constexpr Migration kMigrations[] = {
    {1, kV1, nullptr, false},
    {2, kV2, nullptr, false},
    {3, kV3, nullptr, false},
    {4, kV4, nullptr, false},
    {5, kV5, nullptr, false},
    {6, kV6, nullptr, false},
    {7, kV7, kPgV7, true},
    {8, kV8, kPgV8, false},
    {9, kV9, kPgV9, false},
    {10, kV10, kPgV10, false},
    {11, kV11, kV11, false},
};

static_assert(sizeof kMigrations / sizeof kMigrations[0] == kSchemaVersion,
              "one migration step per schema version");

}  // namespace

std::span<const Migration> migrations() { return kMigrations; }

const char* views_sql() { return kViews; }

}  // namespace netbox::audit::detail
