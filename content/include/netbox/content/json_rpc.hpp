#pragma once
// JSON-RPC 2.0 messages as an agent POSTs them (MCP's streamable HTTP transport, and any
// JSON-RPC API): one message or a batch, each read strictly so that what a rule checks is
// what the server will act on. For MCP's tools/call, the tool's name and arguments.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace netbox::content {

// A batch longer than this is refused: each element is checked, and a policy has no use
// for hundreds of calls in one request.
inline constexpr std::size_t kMaxJsonRpcBatch = 100;

struct JsonRpcCall {
  enum class Kind { request, notification, response };
  Kind kind = Kind::request;
  std::string pointer;              // where the message is in the body: "" or "/3"
  std::string method;               // empty for a response
  nlohmann::json id;                // null for a notification
  std::optional<std::string> tool;  // an MCP tools/call's params.name
  nlohmann::json arguments;         // an MCP tools/call's params.arguments (null when absent)
};

struct JsonRpcBody {
  bool batch = false;
  std::vector<JsonRpcCall> calls;
};

struct JsonRpcRefusal {
  std::string pointer;
  std::string reason;
};

std::variant<JsonRpcBody, JsonRpcRefusal> read_json_rpc(const nlohmann::json& body);
// The body's text read with read_strict_json first (no duplicate keys, bounded depth).
std::variant<JsonRpcBody, JsonRpcRefusal> read_json_rpc(std::string_view text);

// The answer to a refused body, in JSON-RPC so that a client shows `message`: an error
// object per request of the body (a batch gets an array), or one with a null id when the
// body could not be read. Code -32600 (invalid request) for unreadable bodies, else
// `code` (netbox uses -32001, in the server-defined range, for a policy refusal).
inline constexpr int kJsonRpcPolicyRefusal = -32001;
inline constexpr int kJsonRpcInvalidRequest = -32600;
nlohmann::json json_rpc_error_body(const JsonRpcBody* body, int code, const std::string& message);

}  // namespace netbox::content
