// The guardian's trigger grammar ("denied >= 20 in 60s") and the names of its events,
// actions and content modes.
#include "netbox/policy/duration.hpp"
#include "netbox/policy/guardian_rules.hpp"
#include "netbox/policy/near_miss.hpp"
#include "netbox/policy/content_mode.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <vector>

namespace netbox::policy {
namespace {

constexpr std::array<std::string_view, 7> kEvents = {"denied",           "rate_limited",         "budget_exhausted",
                                                     "internal_probe",   "exfiltration_attempt", "secret_in_request",
                                                     "encoded_label"};

// One word of a trigger and where it starts (1-based column).
struct Word {
  std::string_view text;
  std::size_t column = 0;
};

// Words separated by runs of spaces; a space first or last is a mistake of its own.
std::vector<Word> words(std::string_view text) {
  std::vector<Word> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    const std::size_t start = i;
    while (i < text.size() && text[i] != ' ') ++i;
    if (i > start) out.push_back({text.substr(start, i - start), start + 1});
  }
  return out;
}

std::string event_list() {
  std::string s;
  for (auto e : kEvents) s += (s.empty() ? "" : ", ") + std::string(e);
  return s;
}

TriggerError error(std::size_t column, std::string message) { return TriggerError{column, std::move(message)}; }

}  // namespace

std::string_view to_string(GuardianEvent e) { return kEvents[static_cast<std::size_t>(e)]; }
std::span<const std::string_view> guardian_event_names() { return kEvents; }

std::string_view to_string(GuardianAction a) {
  switch (a) {
    case GuardianAction::kill: return "kill";
    case GuardianAction::freeze: return "freeze";
    case GuardianAction::report: return "report";
  }
  return "report";
}

std::string_view to_string(ContentMode m) {
  switch (m) {
    case ContentMode::enforce: return "enforce";
    case ContentMode::report: return "report";
    case ContentMode::off: return "off";
  }
  return "off";
}

std::variant<GuardianTrigger, TriggerError> parse_guardian_trigger(std::string_view text) {
  if (text.empty()) return error(1, "is empty; write an event such as denied, or denied >= 20 in 60s");
  if (text.front() == ' ') return error(1, "starts with a space");
  if (text.back() == ' ') return error(text.size(), "ends with a space");
  const auto w = words(text);
  GuardianTrigger t;
  t.written = std::string(text);
  const auto event = std::find(kEvents.begin(), kEvents.end(), w[0].text);
  if (event == kEvents.end()) {
    const std::string best = closest_name(w[0].text, std::vector<std::string_view>(kEvents.begin(), kEvents.end()));
    return error(1, "unknown event '" + std::string(w[0].text) + "'" +
                        (best.empty() ? "" : "; did you mean '" + best + "'?") + " (events: " + event_list() + ")");
  }
  t.event = static_cast<GuardianEvent>(event - kEvents.begin());
  if (w.size() == 1) return t;
  if (w[1].text != ">=")
    return error(w[1].column, "expected '>=' after the event, not '" + std::string(w[1].text) +
                                  "' (a trigger is EVENT or EVENT >= N in DURATION)");
  if (w.size() < 3) return error(text.size() + 1, "expected a count after '>=', as in denied >= 20 in 60s");
  unsigned long long n = 0;
  const auto [end, ec] = std::from_chars(w[2].text.data(), w[2].text.data() + w[2].text.size(), n);
  if (ec == std::errc::result_out_of_range || (ec == std::errc{} && end == w[2].text.data() + w[2].text.size() && n > kMaxTriggerThreshold))
    return error(w[2].column, "the count must be at most " + std::to_string(kMaxTriggerThreshold) + ", not " +
                                  std::string(w[2].text));
  if (ec != std::errc{} || end != w[2].text.data() + w[2].text.size())
    return error(w[2].column, "expected a count (a whole number from 1), not '" + std::string(w[2].text) + "'");
  if (n == 0) return error(w[2].column, "the count must be at least 1, not 0");
  t.threshold = static_cast<std::size_t>(n);
  if (w.size() < 4 || w[3].text != "in")
    return error(w.size() < 4 ? text.size() + 1 : w[3].column,
                 "expected 'in' and a window after the count, as in denied >= 20 in 60s");
  if (w.size() < 5) return error(text.size() + 1, "expected a window after 'in', such as 60s or 5m");
  const auto d = try_parse_duration(w[4].text);
  if (!d)
    return error(w[4].column, "'" + std::string(w[4].text) + "' is not a duration: " + d.why + " (" +
                                  std::string(kDurationExamples) + ")");
  if (d.value.count() <= 0) return error(w[4].column, "the window must be longer than 0");
  t.window = d.value;
  if (w.size() > 5) return error(w[5].column, "unexpected '" + std::string(w[5].text) + "' after the window");
  return t;
}

ContentMode content_mode(const Profile& profile, ContentMode rule) {
  if (rule == ContentMode::enforce && profile.mode == Mode::report) return ContentMode::report;
  return rule;
}

std::string GuardianRule::cite() const {
  std::string s = list + "[" + std::to_string(index) + "] ";
  for (std::size_t i = 0; i < on.size(); ++i) s += (i ? ", " : "") + on[i].written;
  return s + " -> " + std::string(to_string(action));
}

}  // namespace netbox::policy
