#pragma once
// What a request's body must say (issue 28): the parts of a `rules` entry that look past
// method and path. `jsonrpc` limits the JSON-RPC (and MCP tools/call) calls of a body,
// `body_schema` checks a JSON body against a schema, `git` limits the ref updates of a
// smart-HTTP push. They are read and compiled when the policy is loaded (a schema once,
// an unsupported keyword refused there) and applied by check_body, one pure function the
// proxy calls with the body of a request the rule allowed.
#include "netbox/content/json_schema.hpp"
#include "netbox/policy/decision.hpp"
#include "netbox/policy/policy.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netbox::policy {

// A body larger than its rule's window is refused, never passed unchecked: the checks
// read the whole body. Defaults: 1 MiB, or 16 MiB for a `git` rule (a pack holds the
// pushed history); at most 16 MiB, the most the proxy reads of an inspected body.
inline constexpr std::size_t kDefaultBodyWindow = std::size_t{1} << 20;
inline constexpr std::size_t kDefaultGitBodyWindow = std::size_t{16} << 20;
inline constexpr std::size_t kMaxBodyWindow = std::size_t{16} << 20;

struct JsonRpcRules {
  // Method patterns (the `*` of path patterns: "notifications/*"); empty: any method.
  std::vector<std::string> methods;
  struct Tool {
    std::string name;
    std::optional<content::JsonSchema> arguments;  // none: any arguments
    std::string arguments_written;                 // the schema as written, for --explain
  };
  // MCP tools/call: the tools that may be called; tools_given false: any tool.
  std::vector<Tool> tools;
  bool tools_given = false;
};

struct GitRules {
  std::vector<std::string> push;  // ref patterns ("refs/heads/agent/*")
  bool force = false;             // updates not shown to be fast-forwards
  bool remove = false;            // the key `delete`: deletions of refs
};

struct BodyRules {
  std::optional<JsonRpcRules> jsonrpc;
  std::optional<content::JsonSchema> body_schema;
  std::string body_schema_written;
  std::optional<GitRules> git;
  std::size_t window = kDefaultBodyWindow;
};

// The answer for one body. Refused: `status` and `answer` are what the agent gets (403
// with a JSON-RPC error body for jsonrpc, 403 for body_schema, 413 over the window, and
// for git a receive-pack report with status 200 so that `git push` prints each ref's
// reason), `where` the JSON pointer of the first failure or the refused ref. In report
// mode a refusal is a report: the decision says what would have been refused and the
// request goes (status 0).
struct BodyCheck {
  Decision decision;          // allow (empty rule) when the body passes, else for the row
  unsigned status = 0;        // 0: the request goes
  std::string where;          // JSON pointer ("" is the whole body, "/1/params/arguments/to") or ref
  std::string content_type;   // of `answer`
  std::string answer;         // the refusal's body: JSON-RPC error, git report or ERR line; may be empty
  bool refused() const { return status != 0; }
};

// The window check_body applies to `rule`'s bodies (0: the rule checks no body).
std::size_t body_window(const RequestRule& rule);
bool checks_body(const RequestRule& rule);

// `body` is the whole request body as the server will read it (no content coding left).
// A rule without body checks allows every body.
BodyCheck check_body(const RequestRule& rule, std::string_view content_type, std::string_view body,
                     Mode mode = Mode::enforce);

// The refusal of a body the caller could not read as the server will (a content coding
// it does not decode, one that decodes past the window), in the form check_body answers
// for `rule` (JSON-RPC error, git report, or the status alone): `what` is the reason
// without the rule.
BodyCheck body_refused(const RequestRule& rule, unsigned status, std::string what, Mode mode = Mode::enforce);

}  // namespace netbox::policy
