#include "netbox/proxy/control_protocol.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>

namespace netbox::proxy::control {

using json = nlohmann::json;

namespace {

const char* type_name(const json& v) { return v.is_null() ? "null" : v.type_name(); }

// Optional string members: absent and null read as empty, anything but a string is refused.
std::string text(const json& j, const char* key, bool required = false) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) throw ProtocolError(std::string("\"") + key + "\" is missing");
    return {};
  }
  if (!it->is_string())
    throw ProtocolError(std::string("\"") + key + "\" must be a string, not " + type_name(*it));
  return it->get<std::string>();
}

// Objects kept as text (the sandbox report, resource usage): passed through, not read.
std::string object_text(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  if (!it->is_object()) throw ProtocolError(std::string("\"") + key + "\" must be an object, not " + type_name(*it));
  return it->dump(-1, ' ', false, json::error_handler_t::replace);
}

json object_value(const std::string& text, const char* key) {
  auto v = json::parse(text, nullptr, false);
  if (!v.is_object()) throw ProtocolError(std::string("\"") + key + "\" is not a JSON object: " + text.substr(0, 80));
  return v;
}

template <class Int>
std::optional<Int> integer(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer())
    throw ProtocolError(std::string("\"") + key + "\" must be an integer, not " + type_name(*it));
  const bool fits = it->is_number_unsigned()
                        ? it->get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<Int>::max())
                        : it->get<std::int64_t>() >= std::numeric_limits<Int>::min() &&
                              it->get<std::int64_t>() <= std::numeric_limits<Int>::max();
  if (!fits) throw ProtocolError(std::string("\"") + key + "\" is out of range: " + it->dump());
  return static_cast<Int>(it->is_number_unsigned() ? static_cast<std::int64_t>(it->get<std::uint64_t>())
                                                   : it->get<std::int64_t>());
}

std::vector<CredentialSecret> credentials_from(const json& list) {
  if (!list.is_array()) throw ProtocolError(std::string("\"credentials\" must be an array, not ") + type_name(list));
  std::vector<CredentialSecret> out;
  for (const auto& c : list) {
    if (!c.is_object())
      throw ProtocolError(std::string("\"credentials\" entries must be objects, not ") + type_name(c));
    out.push_back(CredentialSecret{text(c, "name", true), text(c, "placeholder", true), Secret(text(c, "secret", true))});
  }
  return out;
}

Register::Ipv6 ipv6_from(const json& v) {
  if (!v.is_object()) throw ProtocolError(std::string("\"ipv6\" must be an object, not ") + type_name(v));
  return {text(v, "agent", true), text(v, "host", true), text(v, "pool", true)};
}

Register::Sockets sockets_from(const json& v) {
  if (!v.is_object()) throw ProtocolError(std::string("\"sockets\" must be an object, not ") + type_name(v));
  Register::Sockets s;
  for (auto [key, out] : {std::pair{"http", &s.http}, std::pair{"socks", &s.socks}, std::pair{"capture", &s.capture}}) {
    const auto n = integer<int>(v, key).value_or(0);
    if (n < 0 || static_cast<std::size_t>(n) > kMaxFds)
      throw ProtocolError(std::string("\"sockets\" \"") + key + "\" is out of range: " + std::to_string(n));
    *out = n;
  }
  for (auto [key, out] : {std::pair{"dns", &s.dns}, std::pair{"diag", &s.diag}})
    if (const auto it = v.find(key); it != v.end() && !it->is_null()) {
      if (!it->is_boolean())
        throw ProtocolError(std::string("\"sockets\" \"") + key + "\" must be true or false, not " + type_name(*it));
      *out = it->get<bool>();
    }
  if (s.count() > kMaxFds)
    throw ProtocolError("\"sockets\" names " + std::to_string(s.count()) + " descriptors, more than " +
                        std::to_string(kMaxFds));
  return s;
}

AskSettings ask_from(const json& v) {
  if (!v.is_object()) throw ProtocolError(std::string("\"ask\" must be an object, not ") + type_name(v));
  AskSettings s;
  const auto ms = integer<std::int64_t>(v, "timeout_ms").value_or(AskSettings::kDefaultTimeout.count());
  if (ms < 1 || ms > 24 * 3600 * 1000) throw ProtocolError("\"ask\" \"timeout_ms\" is out of range: " + std::to_string(ms));
  s.timeout = std::chrono::milliseconds(ms);
  if (const auto t = v.find("terminal"); t != v.end() && !t->is_null()) {
    if (!t->is_boolean()) throw ProtocolError(std::string("\"ask\" \"terminal\" must be true or false, not ") + type_name(*t));
    s.terminal = t->get<bool>();
  }
  return s;
}

Answer answer_from(const json& j) {
  Answer a;
  const auto id = integer<std::int64_t>(j, "id");
  if (!id || *id <= 0) throw ProtocolError("\"id\" is missing or not a question's id (a positive integer)");
  a.id = static_cast<std::uint64_t>(*id);
  const auto approve = j.find("approve");
  if (approve == j.end() || !approve->is_boolean()) throw ProtocolError("\"approve\" is missing or not true/false");
  a.approve = approve->get<bool>();
  if (const auto scope = text(j, "scope"); !scope.empty()) {
    const auto parsed = parse_ask_scope(scope);
    if (!parsed) throw ProtocolError("\"scope\" must be \"once\", \"launch\" or \"policy\", not \"" + scope + "\"");
    a.scope = *parsed;
  }
  a.user = text(j, "user");
  return a;
}

std::int64_t epoch_ms(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

Asked asked_from(const json& v) {
  if (!v.is_object()) throw ProtocolError(std::string("\"asked\" must be an object, not ") + type_name(v));
  Asked a;
  auto& q = a.question;
  q.id = static_cast<std::uint64_t>(integer<std::int64_t>(v, "id").value_or(0));
  q.agent = text(v, "agent", true);
  q.host = text(v, "host", true);
  q.port = integer<std::uint16_t>(v, "port").value_or(0);
  q.door = text(v, "door");
  q.expires = std::chrono::system_clock::time_point(std::chrono::milliseconds(integer<std::int64_t>(v, "expires_ms").value_or(0)));
  if (const auto scopes = v.find("scopes"); scopes != v.end() && scopes->is_array())
    q.policy_offered = std::find(scopes->begin(), scopes->end(), "policy") != scopes->end();
  return a;
}

Settled settled_from(const json& v) {
  if (!v.is_object()) throw ProtocolError(std::string("\"settled\" must be an object, not ") + type_name(v));
  Settled s;
  s.id = static_cast<std::uint64_t>(integer<std::int64_t>(v, "id").value_or(0));
  const auto answered = v.find("answered");
  s.answered = answered != v.end() && answered->is_boolean() && answered->get<bool>();
  s.how = text(v, "how");
  return s;
}

AgentLaunch launch_from(const json& l) {
  if (!l.is_object()) throw ProtocolError(std::string("\"launch\" must be an object, not ") + type_name(l));
  AgentLaunch r;
  r.pid = integer<std::int64_t>(l, "pid").value_or(0);
  r.command_line = text(l, "command_line");
  r.address = text(l, "address");
  r.policy_digest = text(l, "policy_digest");
  r.sandbox = object_text(l, "sandbox");
  return r;
}

json parse_object(std::string_view line) {
  if (line.size() > kMaxLine) throw ProtocolError("the line is longer than " + std::to_string(kMaxLine) + " bytes");
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  auto j = json::parse(line, nullptr, false);
  if (j.is_discarded()) throw ProtocolError("not JSON: expected one JSON object per line");
  if (!j.is_object()) throw ProtocolError(std::string("expected a JSON object, not ") + type_name(j));
  return j;
}

std::string dump_line(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"; }

// The operator ops (docs/proxy.md "Operator ops"); the approval ops join this list.
const std::vector<std::string_view> kOperatorOps = {"list", "kill", "freeze", "resume"};

Operator operator_from(const json& j, std::string op) {
  Operator o;
  o.op = std::move(op);
  o.agent = text(j, "agent", o.op != "list");
  o.args = dump_line(j);
  o.args.pop_back();
  return o;
}

std::uint64_t id_from(const json& j) {
  const auto id = integer<std::int64_t>(j, "id").value_or(0);
  if (id < 0) throw ProtocolError("\"id\" is negative: " + std::to_string(id));
  return static_cast<std::uint64_t>(id);
}

Acted acted_from(const json& j) {
  Acted a;
  a.id = id_from(j);
  const auto ok = j.find("ok");
  if (ok == j.end() || !ok->is_boolean()) throw ProtocolError("\"ok\" is missing or not true/false");
  a.ok = ok->get<bool>();
  a.result = text(j, "result");
  return a;
}

Act act_from(const json& j) {
  Act a;
  a.action = text(j, "act", true);
  if (a.action != "kill" && a.action != "freeze" && a.action != "resume")
    throw ProtocolError("\"act\" \"" + a.action + "\" is not kill, freeze or resume");
  a.id = id_from(j);
  a.why = text(j, "why");
  return a;
}

struct RequestWriter {
  json& j;
  void operator()(const Ping&) const { j = {{"op", "ping"}}; }
  void operator()(const Info&) const { j = {{"op", "info"}}; }
  void operator()(const Register& r) const {
    j = {{"op", "register"}, {"agent", r.agent}, {"profile", r.profile}};
    if (!r.sockets || !r.addr.empty()) j["addr"] = r.addr;
    if (r.sockets)
      j["sockets"] = {{"http", r.sockets->http}, {"socks", r.sockets->socks}, {"capture", r.sockets->capture},
                      {"dns", r.sockets->dns}, {"diag", r.sockets->diag}};
    if (!r.dns_pool6.empty()) j["dns_pool6"] = r.dns_pool6;
    if (!r.listen.empty()) j["listen"] = r.listen;
    if (!r.socks_listen.empty()) j["socks_listen"] = r.socks_listen;
    if (!r.dns_pool.empty()) j["dns_pool"] = r.dns_pool;
    if (r.ipv6) j["ipv6"] = {{"agent", r.ipv6->agent}, {"host", r.ipv6->host}, {"pool", r.ipv6->pool}};
    if (r.launch) {
      json l = {{"pid", r.launch->pid}, {"command_line", r.launch->command_line}};
      if (!r.launch->address.empty()) l["address"] = r.launch->address;
      if (!r.launch->policy_digest.empty()) l["policy_digest"] = r.launch->policy_digest;
      if (!r.launch->sandbox.empty()) l["sandbox"] = object_value(r.launch->sandbox, "sandbox");
      j["launch"] = std::move(l);
    }
    if (r.ask) {
      j["ask"] = {{"timeout_ms", r.ask->timeout.count()}};
      if (r.ask->terminal) j["ask"]["terminal"] = true;
    }
    if (!r.credentials.empty()) {
      json list = json::array();
      for (const auto& c : r.credentials)
        list.push_back({{"name", c.name}, {"placeholder", c.placeholder}, {"secret", c.secret.reveal()}});
      j["credentials"] = std::move(list);
    }
  }
  void operator()(const Unregister& u) const {
    j = {{"op", "unregister"}, {"addr", u.addr}};
    if (u.exit_status) j["exit_status"] = *u.exit_status;
    if (!u.resource_usage.empty()) j["resource_usage"] = object_value(u.resource_usage, "resource_usage");
  }
  void operator()(const Operator& o) const {
    j = o.args.empty() ? json::object() : object_value(o.args, "args");
    j["op"] = o.op;
    if (!o.agent.empty()) j["agent"] = o.agent;
  }
  void operator()(const Acted& a) const { j = {{"op", "acted"}, {"id", a.id}, {"ok", a.ok}, {"result", a.result}}; }
  void operator()(const Answer& a) const {
    j = {{"op", "answer"}, {"id", a.id}, {"approve", a.approve}};
    if (a.approve) j["scope"] = std::string(to_string(a.scope));
    if (!a.user.empty()) j["user"] = a.user;
  }
};

}  // namespace

void to_json(json& j, const Request& request) { std::visit(RequestWriter{j}, request); }

void from_json(const json& j, Request& request) {
  if (!j.is_object()) throw ProtocolError(std::string("expected a JSON object, not ") + type_name(j));
  const auto op = text(j, "op", true);
  if (op == "ping") {
    request = Ping{};
  } else if (op == "info") {
    request = Info{};
  } else if (op == "register") {
    Register r;
    if (const auto it = j.find("sockets"); it != j.end() && !it->is_null()) r.sockets = sockets_from(*it);
    r.addr = text(j, "addr", !r.sockets);
    r.dns_pool6 = text(j, "dns_pool6");
    r.agent = text(j, "agent");
    r.profile = text(j, "profile");
    r.listen = text(j, "listen");
    r.socks_listen = text(j, "socks_listen");
    r.dns_pool = text(j, "dns_pool");
    if (const auto it = j.find("ipv6"); it != j.end() && !it->is_null()) r.ipv6 = ipv6_from(*it);
    if (const auto it = j.find("launch"); it != j.end() && !it->is_null()) r.launch = launch_from(*it);
    if (const auto it = j.find("credentials"); it != j.end() && !it->is_null()) r.credentials = credentials_from(*it);
    if (const auto it = j.find("ask"); it != j.end() && !it->is_null()) r.ask = ask_from(*it);
    request = std::move(r);
  } else if (op == "unregister") {
    Unregister u;
    u.addr = text(j, "addr", true);
    u.exit_status = integer<int>(j, "exit_status");
    u.resource_usage = object_text(j, "resource_usage");
    request = std::move(u);
  } else if (op == "acted") {
    request = acted_from(j);
  } else if (op == "answer") {
    request = answer_from(j);
  } else if (std::find(kOperatorOps.begin(), kOperatorOps.end(), op) != kOperatorOps.end()) {
    request = operator_from(j, op);
  } else {
    std::string ops;
    for (auto o : kOperatorOps) ops += ", " + std::string(o);
    throw ProtocolError("unknown op \"" + op + "\" (expected register, unregister, info, ping, acted, answer" + ops + ")");
  }
}

void to_json(json& j, const Reply& reply) {
  j = {{"ok", reply.ok}};
  if (!reply.ok) j["error"] = reply.error;
  if (!reply.listen.empty()) j["listen"] = reply.listen;
  if (!reply.socks_listen.empty()) j["socks_listen"] = reply.socks_listen;
  if (!reply.dns.empty()) j["dns"] = reply.dns;
  if (!reply.capture.empty()) j["capture"] = reply.capture;
  if (!reply.capture6.empty()) j["capture6"] = reply.capture6;
  if (!reply.dns_pool.empty()) j["dns_pool"] = reply.dns_pool;
  if (!reply.dns_pool6.empty()) j["dns_pool6"] = reply.dns_pool6;
  if (!reply.addr.empty()) j["addr"] = reply.addr;
  if (!reply.policy_file.empty()) j["policy_file"] = reply.policy_file;
  if (!reply.audit_db.empty()) j["audit_db"] = reply.audit_db;
  if (!reply.ca_pem.empty()) j["ca_pem"] = reply.ca_pem;
  if (!reply.result.empty()) j["result"] = reply.result;
  if (!reply.agents.empty()) {
    auto list = json::parse(reply.agents, nullptr, false);
    j["agents"] = list.is_array() ? std::move(list) : json::array();
  }
}

void from_json(const json& j, Reply& reply) {
  if (!j.is_object()) throw ProtocolError(std::string("expected a JSON object, not ") + type_name(j));
  const auto ok = j.find("ok");
  if (ok == j.end() || !ok->is_boolean()) throw ProtocolError("\"ok\" is missing or not true/false");
  reply = Reply{};
  reply.ok = ok->get<bool>();
  reply.error = text(j, "error");
  if (!reply.ok && reply.error.empty()) reply.error = "no reason given";
  reply.listen = text(j, "listen");
  reply.socks_listen = text(j, "socks_listen");
  reply.dns = text(j, "dns");
  reply.capture = text(j, "capture");
  reply.capture6 = text(j, "capture6");
  reply.dns_pool = text(j, "dns_pool");
  reply.dns_pool6 = text(j, "dns_pool6");
  reply.addr = text(j, "addr");
  reply.policy_file = text(j, "policy_file");
  reply.audit_db = text(j, "audit_db");
  reply.ca_pem = text(j, "ca_pem");
  reply.result = text(j, "result");
  if (const auto it = j.find("agents"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) throw ProtocolError(std::string("\"agents\" must be an array, not ") + type_name(*it));
    reply.agents = it->dump(-1, ' ', false, json::error_handler_t::replace);
  }
}

Request parse_request(std::string_view line) { return parse_object(line).get<Request>(); }
Reply parse_reply(std::string_view line) { return parse_object(line).get<Reply>(); }

const std::vector<std::string_view>& operator_ops() { return kOperatorOps; }

FromProxy parse_from_proxy(std::string_view line) {
  const auto j = parse_object(line);
  if (j.contains("act")) return act_from(j);
  if (const auto it = j.find("asked"); it != j.end()) return asked_from(*it);
  if (const auto it = j.find("settled"); it != j.end()) return settled_from(*it);
  return j.get<Reply>();
}

std::string to_line(const Act& act) {
  return dump_line(json{{"act", act.action}, {"id", act.id}, {"why", act.why}});
}

std::string to_line(const Asked& asked) {
  const auto& q = asked.question;
  json scopes = {"once", "launch"};
  if (q.policy_offered) scopes.push_back("policy");
  return dump_line(json{{"asked",
                         {{"id", q.id}, {"agent", q.agent}, {"host", q.host}, {"port", q.port}, {"door", q.door},
                          {"expires_ms", epoch_ms(q.expires)}, {"scopes", std::move(scopes)}}}});
}

std::string to_line(const Settled& s) {
  return dump_line(json{{"settled", {{"id", s.id}, {"answered", s.answered}, {"how", s.how}}}});
}

// Built into a finished json, not with json's converting constructor: to_json may throw
// (a field that must be an object), and a constructor that throws leaks what it built.
std::string to_line(const Request& request) {
  json j;
  to_json(j, request);
  return dump_line(j);
}
std::string to_line(const Reply& reply) {
  json j;
  to_json(j, reply);
  return dump_line(j);
}

}  // namespace netbox::proxy::control
