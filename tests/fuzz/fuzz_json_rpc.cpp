// A request body read as JSON-RPC (content/json_rpc.hpp), as an inspected MCP or
// JSON-RPC host's rules will read it. Invariants (a violation aborts):
//  - a refusal says why;
//  - a body that is read is strict JSON (no duplicate keys, bounded depth) and a batch
//    exactly when its top level is an array, of at most kMaxJsonRpcBatch messages;
//  - every request and notification has a method; a tools/call names its tool; a
//    response has no method;
//  - the refusal answer is JSON-RPC 2.0 and serialises.
#include "fuzz_invariant.hpp"
#include "netbox/content/json_rpc.hpp"
#include "netbox/content/strict_json.hpp"

#include <cstdio>
#include <cstdlib>

using netbox::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace netbox::content;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto r = read_json_rpc(text);
  if (const auto* refusal = std::get_if<JsonRpcRefusal>(&r)) {
    check(!refusal->reason.empty(), "a refusal without a reason");
    (void)json_rpc_error_body(nullptr, kJsonRpcInvalidRequest, refusal->reason).dump();
    return 0;
  }
  const auto& body = std::get<JsonRpcBody>(r);
  const auto json = read_strict_json(text);
  check(std::holds_alternative<nlohmann::json>(json), "a body read as JSON-RPC is not strict JSON");
  check(body.batch == std::get<nlohmann::json>(json).is_array(), "batch does not follow the top level");
  check(!body.calls.empty() && body.calls.size() <= kMaxJsonRpcBatch, "a body with no call or too many");
  for (const auto& call : body.calls) {
    if (call.kind == JsonRpcCall::Kind::response) {
      check(call.method.empty(), "a response with a method");
      continue;
    }
    check(!call.method.empty(), "a request without a method");
    check((call.method == "tools/call") == call.tool.has_value(), "a tool outside tools/call, or none in it");
    check(call.arguments.is_null() || call.arguments.is_object(), "arguments that are not an object");
  }
  const auto answer = json_rpc_error_body(&body, kJsonRpcPolicyRefusal, "refused");
  check(answer.is_array() == body.batch, "a refusal answer of the wrong shape");
  (void)answer.dump();
  return 0;
}
