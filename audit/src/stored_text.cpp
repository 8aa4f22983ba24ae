#include "netbox/audit/stored_text.hpp"

namespace netbox::audit {

std::string capped(std::string text, std::size_t limit) {
  if (text.size() <= limit) return text;
  std::size_t keep = limit;
  // Back off to the start of a UTF-8 sequence so the kept part stays valid text.
  while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;
  const std::size_t dropped = text.size() - keep;
  text.resize(keep);
  text += "\xE2\x80\xA6[truncated " + std::to_string(dropped) + " bytes]";
  return text;
}

void cap_agent_text(AuditRecord& r) {
  r.agent = capped(std::move(r.agent), kMaxStoredAgent);
  r.method = capped(std::move(r.method), kMaxStoredMethod);
  r.host = capped(std::move(r.host), kMaxStoredHost);
  r.path = capped(std::move(r.path), kMaxStoredPath);
  r.rule = capped(std::move(r.rule), kMaxStoredReason);
  r.reason = capped(std::move(r.reason), kMaxStoredReason);
  r.error = capped(std::move(r.error), kMaxStoredReason);
  r.resolved_addr = capped(std::move(r.resolved_addr), kMaxStoredHost);
}

void cap_agent_text(Completion& c) {
  c.error = capped(std::move(c.error), kMaxStoredReason);
  c.resolved_addr = capped(std::move(c.resolved_addr), kMaxStoredHost);
}

}  // namespace netbox::audit
