#include "netbox/launcher/agent_output_guard.hpp"

#include <cctype>
#include <utility>

namespace netbox::launcher {
namespace {

// What netbox's own lines on stderr start with. The timestamp shape is the proxy's
// text log ("2026-11-27T04:50:00.123Z request ..."): digits and '-' up to a 'T'.
constexpr std::string_view kNetbox = "netbox";
constexpr std::string_view kTimestamp = "dddd-dd-ddT";
constexpr std::size_t kMaxHeld = 4096;

bool matches_shape(char c, char shape) {
  if (shape == 'd') return std::isdigit(static_cast<unsigned char>(c)) != 0;
  return c == shape;
}

// The bytes of a code point at the start of `s` that a terminal shows as nothing (C1
// controls, no-break and zero-width spaces, joiners, direction marks and isolates, word
// joiners, variation selectors, the byte-order mark, Hangul fillers); 0: a visible one
// (or not UTF-8); npos: cut off before its end.
std::size_t invisible_width(std::string_view s) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  const std::size_t n = b0 >= 0xf0 ? 4 : b0 >= 0xe0 ? 3 : b0 >= 0xc0 ? 2 : 1;
  if (n == 1) return 0;
  if (s.size() < n) return std::string_view::npos;
  char32_t cp = b0 & (0xff >> (n + 1));
  for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[k]) & 0x3f);
  constexpr std::pair<char32_t, char32_t> kInvisible[] = {
      {0x80, 0xa0},     {0xad, 0xad},     {0x34f, 0x34f},   {0x61c, 0x61c},   {0x115f, 0x1160},
      {0x180e, 0x180e}, {0x2000, 0x200f}, {0x2028, 0x202f}, {0x205f, 0x206f}, {0x3000, 0x3000},
      {0x3164, 0x3164}, {0xfe00, 0xfe0f}, {0xfeff, 0xfeff}, {0xffa0, 0xffa0}, {0xe0000, 0xe0fff}};
  for (const auto& [from, to] : kInvisible)
    if (cp >= from && cp <= to) return n;
  return 0;
}

// Skips what a terminal does not show at a line's start: blanks, control bytes, escape
// sequences (CSI "ESC [ ... final", OSC "ESC ] ... BEL/ST", two-byte ones) and invisible
// code points (a zero-width space before "netbox" forged a line of netbox's, found by a
// review). Returns where the visible text starts, or npos when the skipped part is unfinished.
std::size_t visible_start(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const std::size_t n = invisible_width(s.substr(i));
      if (n == std::string_view::npos) return n;
      if (n == 0) break;
      i += n;
      continue;
    }
    if (c == 0x1b) {
      if (i + 1 >= s.size()) return std::string_view::npos;
      const char kind = s[i + 1];
      std::size_t j = i + 2;
      if (kind == '[') {
        while (j < s.size() && !(s[j] >= 0x40 && s[j] <= 0x7e)) ++j;
        if (j >= s.size()) return std::string_view::npos;
        i = j + 1;
      } else if (kind == ']' || kind == 'P' || kind == '_' || kind == '^') {
        while (j < s.size() && s[j] != '\a' && !(s[j] == 0x1b && j + 1 < s.size() && s[j + 1] == '\\')) ++j;
        if (j >= s.size() || (s[j] == 0x1b && j + 1 >= s.size())) return std::string_view::npos;
        i = j + (s[j] == '\a' ? 1 : 2);
      } else {
        i += 2;
      }
      continue;
    }
    if (c < 0x20 || c == 0x7f || c == ' ') {
      ++i;
      continue;
    }
    break;
  }
  return i < s.size() ? i : std::string_view::npos;
}

}  // namespace

AgentOutputGuard::Verdict AgentOutputGuard::judge(std::string_view line_start) {
  const std::size_t at = visible_start(line_start);
  if (at == std::string_view::npos) return Verdict::undecided;
  const std::string_view text = line_start.substr(at);
  bool could_be_netbox = true, could_be_time = true;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i < kNetbox.size() && std::tolower(static_cast<unsigned char>(text[i])) != kNetbox[i]) could_be_netbox = false;
    if (i < kTimestamp.size() && !matches_shape(text[i], kTimestamp[i])) could_be_time = false;
  }
  if ((could_be_netbox && text.size() >= kNetbox.size()) || (could_be_time && text.size() >= kTimestamp.size()))
    return Verdict::forged;
  return could_be_netbox || could_be_time ? Verdict::undecided : Verdict::plain;
}

std::string AgentOutputGuard::filter(std::string_view in) {
  std::string out;
  out.reserve(in.size() + 16);
  for (char c : in) {
    // A carriage return starts the line over on a terminal: judged again.
    const bool ends_line = c == '\n' || c == '\r';
    // A backspace or an escape sequence can move the cursor back over what the line
    // showed ("x\bnetbox ...", "x ESC[1G netbox ..."): what follows is judged like a
    // line's start (found by a review: only line ends restarted the judging).
    const bool moves_back = c == '\b' || c == '\x1b';
    if (!at_line_start_ && moves_back) at_line_start_ = true;
    if (!at_line_start_) {
      out += c;
      if (ends_line) at_line_start_ = true;
      continue;
    }
    held_ += c;
    if (ends_line) {
      // Blank or controls only: nothing visible to forge; a new line starts.
      out += held_;
      held_.clear();
      continue;
    }
    // Past this, a line's start is no longer a prompt being typed: decided, marked.
    const Verdict v = held_.size() > kMaxHeld ? Verdict::forged : judge(held_);
    if (v == Verdict::undecided) continue;
    if (v == Verdict::forged) out += kAgentLineMarker;
    out += held_;
    held_.clear();
    at_line_start_ = false;
  }
  return out;
}

std::string AgentOutputGuard::flush() {
  if (held_.empty()) return {};
  // Nothing visible held (a screen update's closing escape sequence): nothing to forge, so
  // it goes out as it is and the judging goes on, instead of a marker in a full-screen
  // agent's frame.
  if (visible_start(held_) == std::string_view::npos) return std::exchange(held_, {});
  std::string out = std::string(kAgentLineMarker) + held_;
  held_.clear();
  at_line_start_ = false;
  return out;
}

}  // namespace netbox::launcher
