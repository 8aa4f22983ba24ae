#pragma once
// `netbox policy suggest`: a policy proposed from what an agent did (its audit rows),
// for a person to review before enforcing it. The rows come in as plain values, so the
// policy library needs no audit store.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace netbox::policy {

// One audit row, as much of it as a suggestion reads.
struct SeenRequest {
  std::string kind;      // "http", "connect", "socks", "transparent", "dns", ...
  std::string host;
  std::uint16_t port = 0;
  std::string method;    // an HTTP request's
  std::string path;      // an HTTP request's (canonical, as forwarded)
  std::string decision;  // allow, report, deny, cap, error
  std::string rule;
  bool inspected = false;  // a request inside an inspected tunnel (the row has a parent)
  std::uint64_t count = 1;
};

struct SuggestInput {
  std::string agent;
  std::string source;                // "DB, since ..." for the header comment
  std::vector<SeenRequest> rows;
  // The policy the run was decided with (its text and name), if given: the suggestion is
  // that policy with what the run needed beyond it added (to agents.AGENT when it has that
  // entry, else the top level) and "mode" removed; without one, a policy of its own.
  std::optional<std::pair<std::string, std::string>> base;
};

// The suggested policy: JSON with a header of `//` comments (what each entry stands for,
// with counts, and what was refused and is not suggested), which `netbox policy check`
// reads. Throws PolicyError when the base does not parse.
std::string suggest_policy(const SuggestInput& in);

// A rule's path pattern for a seen path: the path itself up to two segments deep, else
// its first two segments and "/*" ("/repos/acme/x/pulls" -> "/repos/acme/*").
std::string suggested_path_pattern(const std::string& path);

}  // namespace netbox::policy
