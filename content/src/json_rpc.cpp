#include "netbox/content/json_rpc.hpp"

#include "netbox/content/strict_json.hpp"

#include <set>

namespace netbox::content {
namespace {

const std::set<std::string_view>& members() {
  // Anything else at a message's top level is refused: a server that read an unknown
  // member (or a differently spelled one) could act on what the rule never saw.
  static const std::set<std::string_view> known{"jsonrpc", "id", "method", "params", "result", "error"};
  return known;
}

std::variant<JsonRpcCall, JsonRpcRefusal> read_message(const nlohmann::json& m, const std::string& at) {
  auto refuse = [&](const std::string& where, std::string reason) {
    return JsonRpcRefusal{at + where, std::move(reason)};
  };
  if (!m.is_object()) return refuse("", "a JSON-RPC message is an object");
  for (const auto& [key, value] : m.items())
    if (!members().count(key)) return refuse(pointer_segment(key), "\"" + key + "\" is not a JSON-RPC 2.0 member");
  auto version = m.find("jsonrpc");
  if (version == m.end() || *version != "2.0") return refuse("/jsonrpc", "\"jsonrpc\" must be \"2.0\"");
  JsonRpcCall call;
  call.pointer = at;
  auto id = m.find("id");
  if (id != m.end()) {
    if (!id->is_string() && !id->is_number() && !id->is_null()) return refuse("/id", "an id is a string or a number");
    call.id = *id;
  }
  auto method = m.find("method");
  if (method == m.end()) {
    if ((m.contains("result") == m.contains("error")) || id == m.end())
      return refuse("", "a message has a \"method\", or an \"id\" and one of \"result\" and \"error\"");
    call.kind = JsonRpcCall::Kind::response;
    return call;
  }
  if (m.contains("result") || m.contains("error")) return refuse("", "a request has no \"result\" or \"error\"");
  if (!method->is_string() || method->get_ref<const std::string&>().empty())
    return refuse("/method", "a method is a non-empty string");
  call.method = method->get<std::string>();
  call.kind = id == m.end() ? JsonRpcCall::Kind::notification : JsonRpcCall::Kind::request;
  auto params = m.find("params");
  if (params != m.end() && !params->is_object() && !params->is_array())
    return refuse("/params", "params are an object or an array");
  if (call.method == "tools/call") {
    if (params == m.end() || !params->is_object()) return refuse("/params", "a tools/call has an object of params");
    auto name = params->find("name");
    if (name == params->end() || !name->is_string()) return refuse("/params/name", "a tools/call names its tool");
    call.tool = name->get<std::string>();
    auto args = params->find("arguments");
    if (args != params->end()) {
      if (!args->is_object()) return refuse("/params/arguments", "a tool's arguments are an object");
      call.arguments = *args;
    }
  }
  return call;
}

}  // namespace

std::variant<JsonRpcBody, JsonRpcRefusal> read_json_rpc(const nlohmann::json& body) {
  JsonRpcBody out;
  if (!body.is_array()) {
    auto one = read_message(body, "");
    if (auto* r = std::get_if<JsonRpcRefusal>(&one)) return *r;
    out.calls.push_back(std::get<JsonRpcCall>(std::move(one)));
    return out;
  }
  out.batch = true;
  if (body.empty()) return JsonRpcRefusal{"", "an empty batch"};
  if (body.size() > kMaxJsonRpcBatch)
    return JsonRpcRefusal{"", "a batch of more than " + std::to_string(kMaxJsonRpcBatch) + " messages"};
  for (std::size_t i = 0; i < body.size(); ++i) {
    auto one = read_message(body[i], "/" + std::to_string(i));
    if (auto* r = std::get_if<JsonRpcRefusal>(&one)) return *r;
    out.calls.push_back(std::get<JsonRpcCall>(std::move(one)));
  }
  return out;
}

std::variant<JsonRpcBody, JsonRpcRefusal> read_json_rpc(std::string_view text) {
  auto parsed = read_strict_json(text);
  if (auto* r = std::get_if<JsonRefusal>(&parsed)) return JsonRpcRefusal{"", r->reason};
  return read_json_rpc(std::get<nlohmann::json>(parsed));
}

nlohmann::json json_rpc_error_body(const JsonRpcBody* body, int code, const std::string& message) {
  auto error = [&](const nlohmann::json& id) {
    return nlohmann::json{{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
  };
  if (!body) return error(nullptr);
  nlohmann::json answers = nlohmann::json::array();
  for (const auto& call : body->calls)
    if (call.kind == JsonRpcCall::Kind::request) answers.push_back(error(call.id));
  if (!body->batch) return answers.empty() ? error(nullptr) : answers[0];
  if (answers.empty()) answers.push_back(error(nullptr));
  return answers;
}

}  // namespace netbox::content
