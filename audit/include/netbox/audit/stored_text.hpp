#pragma once
// Caps on the agent-chosen text of a row. An agent picks its paths, methods, hosts and
// the requests that produce reasons and errors; without a cap, one agent could grow the
// database by the size of whatever it sends. A cut value ends in a visible marker,
// "…[truncated N bytes]", so a reader knows it is not the whole of what was sent.
#include "netbox/audit/record.hpp"

#include <cstddef>
#include <string>

namespace netbox::audit {

inline constexpr std::size_t kMaxStoredPath = 2048;
inline constexpr std::size_t kMaxStoredHost = 512;
inline constexpr std::size_t kMaxStoredMethod = 64;
inline constexpr std::size_t kMaxStoredReason = 1024;  // reason, rule and error
inline constexpr std::size_t kMaxStoredAgent = 256;    // agent names come from the operator, but still
// An agent-caused event's detail (JSON): past this, each of its string values is cut to
// kMaxStoredHost; its message is cut to kMaxStoredReason.
inline constexpr std::size_t kMaxStoredEventDetail = 2048;

// `text` unchanged if it has at most `limit` bytes; else its first `limit` bytes or fewer
// (never splitting a UTF-8 sequence) followed by "…[truncated N bytes]", N being the
// bytes left out.
std::string capped(std::string text, std::size_t limit);

// Applies the caps above to every agent-chosen field.
void cap_agent_text(AuditRecord& record);
void cap_agent_text(Completion& completion);
void cap_agent_text(Event& event);

}  // namespace netbox::audit
