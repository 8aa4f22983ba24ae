#pragma once
// The policy model: what the JSON file (schema version 1) says, after validation.
#include "netbox/policy/cidr.hpp"
#include "netbox/policy/guardian_rules.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/ip/address.hpp>

namespace netbox::policy {

enum class Mode { enforce, report };

// One entry of `allow` or `deny`, kept with how it was written so decisions can cite it.
struct Rule {
  enum class Kind { exact_host, wildcard_host, network };
  Kind kind = Kind::exact_host;
  std::string host;               // normalised name; for wildcard_host the suffix without "*."
  Cidr network;                   // for Kind::network (a bare IP is a /32 or /128)
  std::optional<uint16_t> port;   // "host:port" restricts the entry to that port
  std::string written;            // the entry exactly as in the file
  std::string list;               // "allow" or "deny" (or "agents.NAME.allow" ...)
  std::size_t index = 0;          // position in that list
  std::string cite() const;       // e.g. "deny[0] *.evil.example"
  // A host entry (exact or wildcard) covers this normalised name; networks never do.
  bool covers_name(const std::string& name) const;
};

struct BodyRules;  // body_rules.hpp: what the body of a request a rule allows must say

// One entry of `rules`: which requests to a host are allowed, by method and path,
// evaluated in order after the host decision (first match wins). Applies to plain HTTP
// and to inspected HTTPS, where the proxy sees each request.
struct RequestRule {
  Rule host;                          // exact or wildcard host, optionally with :port
  std::vector<std::string> methods;   // upper-case; empty: any method
  std::vector<std::string> paths;     // canonical path patterns (see request_path.hpp); empty: any
  bool allow = false;                 // "action": "allow" or "deny"
  // `jsonrpc`, `body_schema`, `git`, `body_window` (issue 28); null: the body is not
  // looked at. Shared and immutable: agents' profiles copy rules.
  std::shared_ptr<const BodyRules> body;
  std::string list;                   // "rules" or "agents.NAME.rules"
  std::size_t index = 0;
  std::string cite() const;           // e.g. "rules[2] api.github.com GET,HEAD /repos/acme/*"
};

// One entry of `credentials`: a secret the agent never holds. The launcher reads it on
// the host and gives the agent a placeholder; the proxy puts the secret into inspected
// requests to `hosts` (header `header`, value `format` with {secret} replaced).
struct Credential {
  std::string name;                   // [a-z0-9_-], unique; in the placeholder nbx-NAME-...
  std::vector<Rule> hosts;            // each must be inspected
  std::string header;                 // e.g. "Authorization"
  std::string format;                 // holds "{secret}" exactly once, e.g. "Bearer {secret}"
  std::string secret_env;             // exactly one of these two
  std::string secret_file;
  // The agent's variable holding the placeholder; empty: secret_env's name (with
  // secret_file: none, the proxy adds the header).
  std::string env;
};

// `requests_per_minute` with its explicit `burst`: a guardian::TokenBucket of `per_minute`
// tokens every 60 s holding at most `burst`. Both >= 1 once loaded.
struct RequestRate {
  std::uint64_t per_minute = 0;
  std::uint64_t burst = 0;
  bool operator==(const RequestRate&) const = default;
};

// One entry of `limits.destinations`: budgets and a rate for the hosts `host` covers (exact
// or *.suffix, optionally :port, as `allow` writes them). It names at least one of them.
struct DestinationLimits {
  Rule host;                              // list "limits.destinations" (or the agent's), index
  std::optional<std::uint64_t> bytes_up;  // bytes, >= 1
  std::optional<std::uint64_t> bytes_down;
  std::optional<RequestRate> requests;
  std::string cite() const;               // "limits.destinations[0] *.github.com"
};

struct Limits {
  std::size_t max_connections = 1024;
  std::size_t max_connections_per_agent = 128;
  std::size_t max_connections_per_host = 64;
  std::chrono::milliseconds connect_timeout{10000};
  // The whole dial of a destination, over all its addresses (a name may have hundreds,
  // each black-holed). Unset (0): twice connect_timeout.
  std::chrono::milliseconds dial_budget{0};
  std::chrono::milliseconds effective_dial_budget() const {
    return dial_budget.count() > 0 ? dial_budget : 2 * connect_timeout;
  }
  std::chrono::milliseconds idle_timeout{300000};
  // From the first byte of a request to the end of its head. Distinct from idle_timeout,
  // which is how long a keep-alive agent may wait between requests: a client sending its
  // head one byte at a time (slowloris) is cut off here.
  std::chrono::milliseconds header_timeout{10000};

  // Budgets and rates (issue 25); unset: none. The proxy's AgentGuard enforces them.
  // Bytes an agent may send (bytes_up) and receive (bytes_down) in one launch, every path
  // counted (guardian::ByteBudget).
  std::optional<std::uint64_t> bytes_up, bytes_down;
  // requests_per_minute and burst, kept apart so an agent's `limits` can change one of
  // them; once loaded both are set or neither is (see rate()).
  std::optional<std::uint64_t> requests_per_minute, burst;
  std::optional<RequestRate> rate() const {
    if (!requests_per_minute || !burst) return std::nullopt;
    return RequestRate{*requests_per_minute, *burst};
  }
  // Hosts never asked for before in this launch, per minute (a bucket of one minute's worth).
  std::optional<std::uint64_t> new_hosts_per_minute;
  // Bytes per second each way, shaped by pausing reads (a bucket of one second's worth).
  std::optional<std::uint64_t> bandwidth_up, bandwidth_down;
  // Per destination pattern, in file order (an agent's list replaces the top level's).
  std::vector<DestinationLimits> destinations;
};

// The entries of `limits.destinations` that cover `host` (a normalised name) on `port`,
// most specific first: exact names before wildcards, a longer *.suffix before a shorter
// one, an entry with its own :port before one without, then file order. Every one of them
// applies (each keeps its own budget and rate); the first is the one a refusal names.
std::vector<const DestinationLimits*> destination_limits_for(const Limits& limits, const std::string& host,
                                                             std::uint16_t port);

// The `sandbox` key: `netbox launch` settings, as written (validated for shape and the
// size grammar by the loader; the launcher checks the rest as it does its flags). Unset:
// not given here. A launch applies them where its own flag was not given.
struct SandboxSettings {
  std::optional<std::string> workdir;
  std::optional<std::vector<std::string>> ro, rw, hide;
  std::optional<std::string> tmp_size, workdir_quota, memory, cpus, pids, user;
  std::optional<std::vector<std::string>> allow_degraded;
  std::optional<std::string> network;  // "transparent" or "proxy-vars"
  bool empty() const {
    return !workdir && !ro && !rw && !hide && !tmp_size && !workdir_quota && !memory && !cpus && !pids && !user &&
           !allow_degraded && !network;
  }
};

// Everything a decision needs for one agent. The top level is a profile; each
// entry of `agents` is the top-level profile with the keys it names replaced.
struct Profile {
  Mode mode = Mode::enforce;
  std::vector<Rule> allow;
  std::vector<Rule> deny;
  std::vector<uint16_t> ports{80, 443};
  std::vector<Cidr> internal_allow;
  std::vector<std::string> internal_allow_written;
  Limits limits;
  // Not used by decisions: what `netbox launch --policy` applies to the agent's sandbox.
  // An agent's entry replaces the top level's key by key.
  SandboxSettings sandbox;
  // `guardian` (issue 25): rules over time, webhook, content rules. An agent's entry
  // replaces the top level's key by key (content: key by key too).
  GuardianSettings guardian;
  // TLS inspection (issue 16): hosts whose CONNECTs the proxy terminates, method/path
  // rules, and credentials injected into inspected requests.
  std::vector<Rule> inspect;
  std::vector<RequestRule> rules;
  std::vector<Credential> credentials;
  // The top-level key resolve_unlisted_names, the same in every profile: whether a name
  // no allow entry lists, let through by a network entry, may be looked up. Off, such a
  // name never reaches a resolver: the lookup alone carries the name (and whatever data
  // it encodes) to whoever runs its domain's servers.
  bool resolve_unlisted_names = false;
  // For agents.NAME: the keys it names (in file order of the schema: mode, allow, deny,
  // ports, internal, limits, sandbox, inspect, rules, credentials, guardian); empty for the top level.
  std::vector<std::string> overrides;
};

struct Policy {
  int version = 1;
  Profile base;
  std::map<std::string, Profile> agents;
  // Static pins from `resolve`: normalised name -> addresses, consulted before DNS.
  std::map<std::string, std::vector<boost::asio::ip::address>> pins;
  std::string source;   // file path or "<embedded>"
  std::string digest;   // SHA-256 hex of the file's bytes

  // The profile for an agent name; the base profile for unknown names and "anonymous".
  const Profile& profile_for(const std::string& agent) const;
};

}  // namespace netbox::policy
