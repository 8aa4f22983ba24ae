#include "netbox/audit/stored_text.hpp"

#include <nlohmann/json.hpp>

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
  r.origin.exe = capped(std::move(r.origin.exe), kMaxStoredPath);
  r.origin.argv = capped(std::move(r.origin.argv), kMaxStoredPath);
}

void cap_agent_text(Completion& c) {
  c.error = capped(std::move(c.error), kMaxStoredReason);
  c.resolved_addr = capped(std::move(c.resolved_addr), kMaxStoredHost);
}

void cap_agent_text(Event& e) {
  e.agent = capped(std::move(e.agent), kMaxStoredAgent);
  e.message = capped(std::move(e.message), kMaxStoredReason);
  e.fold_key = capped(std::move(e.fold_key), kMaxStoredReason);
  if (e.detail.size() <= kMaxStoredEventDetail) return;
  // Cut value by value, so the detail stays JSON that json_extract reads.
  auto detail = nlohmann::json::parse(e.detail, nullptr, false);
  if (detail.is_object())
    for (auto& [name, value] : detail.items())
      if (value.is_string()) value = capped(value.get<std::string>(), kMaxStoredHost);
  e.detail = detail.is_object() ? detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                                : capped(std::move(e.detail), kMaxStoredEventDetail);
}

}  // namespace netbox::audit
