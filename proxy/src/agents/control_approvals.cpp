#include "netbox/proxy/approval_ops.hpp"

#include <nlohmann/json.hpp>

#include <charconv>

namespace netbox::proxy {

using json = nlohmann::json;

namespace {

std::string reply_error(const std::string& why) { return json{{"ok", false}, {"error", why}}.dump() + "\n"; }

std::string iso_time(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t s = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::gmtime_r(&s, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return buf;
}

json pending_json(const std::vector<PendingAsk>& list) {
  json out = json::array();
  for (const auto& p : list) {
    json scopes = {"once", "launch"};
    if (p.policy_offered) scopes.push_back("policy");
    out.push_back({{"id", p.id},
                   {"agent", p.agent},
                   {"host", p.host},
                   {"port", p.port},
                   {"door", p.door},
                   {"first_seen", iso_time(p.first_seen)},
                   {"expires", iso_time(p.expires)},
                   {"waiters", p.waiters},
                   {"scopes", std::move(scopes)}});
  }
  return out;
}

// The question an approve or deny names: "id", or "agent" and "host" (HOST or HOST:PORT,
// or a separate "port").
std::string read_target(const json& j, AskTarget& t) {
  if (auto id = j.find("id"); id != j.end() && !id->is_null()) {
    if (!id->is_number_unsigned()) return "\"id\" must be a positive integer";
    t.id = id->get<std::uint64_t>();
    return {};
  }
  const auto agent = j.find("agent");
  const auto host = j.find("host");
  if (agent == j.end() || !agent->is_string() || agent->get<std::string>().empty())
    return "\"agent\" is missing (or give the question's \"id\")";
  if (host == j.end() || !host->is_string()) return "\"host\" is missing (HOST or HOST:PORT)";
  t.agent = agent->get<std::string>();
  if (auto why = read_ask_host(host->get<std::string>(), t); !why.empty()) return why;
  if (auto port = j.find("port"); port != j.end() && !port->is_null()) {
    if (!port->is_number_unsigned() || port->get<std::uint64_t>() == 0 || port->get<std::uint64_t>() > 65535)
      return "\"port\" must be a port number (1-65535)";
    t.port = static_cast<std::uint16_t>(port->get<std::uint64_t>());
  }
  return {};
}

}  // namespace

std::string read_ask_host(std::string_view text, AskTarget& t) {
  std::string_view host = text;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) return "\"" + std::string(text) + "\" has no closing ']'";
    host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') return "\"" + std::string(text) + "\" is not [ADDRESS]:PORT";
      port = text.substr(close + 2);
    }
  } else if (const auto colon = text.rfind(':'); colon != std::string_view::npos && text.find(':') == colon) {
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty()) return "the host is empty";
  t.host.clear();
  for (char c : host) t.host += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (!t.host.empty() && t.host.back() == '.') t.host.pop_back();
  if (port.empty()) return {};
  unsigned n = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
  if (ec != std::errc() || end != port.data() + port.size() || n == 0 || n > 65535)
    return "\"" + std::string(port) + "\" is not a port number (1-65535)";
  t.port = static_cast<std::uint16_t>(n);
  return {};
}

bool is_approval_op(std::string_view line) {
  const auto j = json::parse(line, nullptr, false);
  if (!j.is_object()) return false;
  const auto op = j.find("op");
  if (op == j.end() || !op->is_string()) return false;
  const auto& s = op->get_ref<const std::string&>();
  return s == "pending" || s == "approve" || s == "deny";
}

std::string approval_op(const ApprovalDesk& desk, std::string_view line, const std::string& grantor) {
  const auto j = json::parse(line, nullptr, false);
  if (!j.is_object()) return reply_error("not a JSON object");
  const std::string op = j.value("op", std::string());
  if (grantor.empty())
    return reply_error("only the owner of this socket (or root) may list or answer questions (op \"" + op + "\")");
  if (op == "pending") return json{{"ok", true}, {"pending", pending_json(desk.pending())}}.dump() + "\n";
  AskTarget target;
  if (auto why = read_target(j, target); !why.empty()) return reply_error(why);
  AskAnswer answer;
  answer.approve = op == "approve";
  answer.grantor = grantor;
  if (answer.approve) {
    const auto scope = j.find("scope");
    if (scope != j.end() && !scope->is_null()) {
      const auto parsed = scope->is_string() ? parse_ask_scope(scope->get<std::string>()) : std::nullopt;
      if (!parsed) return reply_error("\"scope\" must be \"once\", \"launch\" or \"policy\"");
      answer.scope = *parsed;
    }
  }
  if (auto why = desk.answer(target, answer); !why.empty()) return reply_error(why);
  return json{{"ok", true}}.dump() + "\n";
}

}  // namespace netbox::proxy
