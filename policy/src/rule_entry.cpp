#include "rule_entry.hpp"

#include "cidr_parse.hpp"
#include "netbox/policy/host.hpp"

#include <algorithm>

namespace netbox::policy::detail {
namespace {

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

}  // namespace

std::variant<uint16_t, std::string> parse_port_text(std::string_view text) {
  if (text.empty()) return std::string("the port after ':' is missing");
  if (!std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return "port " + quoted(text) + " is not a number";
  unsigned long v = 0;
  for (char c : text) {
    v = v * 10 + static_cast<unsigned long>(c - '0');
    if (v > 65535) break;
  }
  if (v < 1 || v > 65535) return "port " + std::string(text) + " is outside 1-65535";
  return static_cast<uint16_t>(v);
}

std::variant<Rule, std::string> parse_rule_entry(std::string_view entry, RuleList list) {
  Rule rule;
  rule.written = std::string(entry);
  if (entry.empty()) return std::string("empty host; write a host name, an IP address or a CIDR range");
  if (entry.find("://") != std::string_view::npos)
    return quoted(entry) + " is a URL; write only the host, as in 'example.com' or 'example.com:443'";

  // Split off ":port". IPv6 needs brackets to carry a port; a bare IPv6 has several ':'.
  std::string_view host = entry;
  std::optional<std::string_view> port_text;
  if (entry.front() == '[') {
    std::size_t close = entry.find(']');
    if (close == std::string_view::npos) return quoted(entry) + " has '[' without a closing ']'";
    host = entry.substr(1, close - 1);
    std::string_view rest = entry.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return quoted(entry) + " has text after ']' that is not ':port'";
      port_text = rest.substr(1);
    }
    if (host.find(':') == std::string_view::npos) return quoted(entry) + " uses brackets around something that is not IPv6";
  } else if (std::count(entry.begin(), entry.end(), ':') == 1) {
    std::size_t colon = entry.find(':');
    host = entry.substr(0, colon);
    port_text = entry.substr(colon + 1);
  }
  if (port_text) {
    auto p = parse_port_text(*port_text);
    if (auto* err = std::get_if<std::string>(&p)) return *err + " in " + quoted(entry);
    rule.port = std::get<uint16_t>(p);
  }
  if (host.empty()) return "empty host in " + quoted(entry);

  if (host.find('/') != std::string_view::npos) {
    auto c = parse_cidr(host);
    if (auto* err = std::get_if<std::string>(&c)) return "bad CIDR: " + *err;
    rule.kind = Rule::Kind::network;
    rule.network = std::get<Cidr>(c);
    return rule;
  }
  if (host == "*") {
    if (list == RuleList::allow)
      return std::string("a bare '*' would allow every host; list the hosts (or '*.example.com' patterns) instead");
    return std::string("a bare '*' is not a host; anything not in allow is already denied");
  }
  bool wildcard = host.size() >= 2 && host[0] == '*' && host[1] == '.';
  std::string_view name = wildcard ? host.substr(2) : host;
  if (name.find('*') != std::string_view::npos)
    return "'*' may only stand at the start of a name, as in '*.example.com': " + quoted(entry);
  if (wildcard && name.empty()) return "'*.' must be followed by a domain name: " + quoted(entry);

  HostParse h = parse_host(name);
  if (!h) return h.error.message + ": " + quoted(entry);
  if (h.host->is_ip()) {
    if (wildcard) return "'*.' must be followed by a domain name, not an address: " + quoted(entry);
    rule.kind = Rule::Kind::network;
    rule.network = Cidr{*h.host->ip, h.host->ip->is_v4() ? 32U : 128U};
    return rule;
  }
  rule.kind = wildcard ? Rule::Kind::wildcard_host : Rule::Kind::exact_host;
  rule.host = h.host->name;
  return rule;
}

}  // namespace netbox::policy::detail
