#include "netbox/policy/policy.hpp"

#include <charconv>

namespace netbox::policy {

// Built for every request a rule lets through (the row cites it): one allocation, sized
// before the first byte is written, not one per piece appended.
std::string Rule::cite() const {
  char digits[24];
  const std::string_view n(digits, static_cast<std::size_t>(std::to_chars(digits, digits + sizeof digits, index).ptr - digits));
  std::string out;
  out.reserve(list.size() + n.size() + written.size() + 3);
  out.append(list).append(1, '[').append(n).append("] ").append(written);
  return out;
}

bool Rule::covers_name(const std::string& name) const {
  if (kind == Kind::exact_host) return name == host;
  if (kind != Kind::wildcard_host) return false;
  // "*.x.y" covers every name below x.y, never x.y itself.
  return name.size() > host.size() + 1 && name.compare(name.size() - host.size(), host.size(), host) == 0 &&
         name[name.size() - host.size() - 1] == '.';
}

std::string RequestRule::cite() const {
  std::string out = list + "[" + std::to_string(index) + "] " + host.written;
  if (!methods.empty()) {
    out += ' ';
    for (std::size_t i = 0; i < methods.size(); ++i) out += (i ? "," : "") + methods[i];
  }
  for (std::size_t i = 0; i < paths.size(); ++i) out += (i ? "," : " ") + paths[i];
  return out;
}

const Profile& Policy::profile_for(const std::string& agent) const {
  auto it = agents.find(agent);
  return it == agents.end() ? base : it->second;
}

}  // namespace netbox::policy
