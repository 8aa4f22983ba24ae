#include "log.hpp"

#include "netbox/audit/query.hpp"

#include <nlohmann/json.hpp>
#include <unistd.h>

namespace netbox::proxy {
namespace {

bool needs_quotes(std::string_view v) {
  if (v.empty()) return true;
  for (char c : v)
    if (c == ' ' || c == '"' || c == '=' || static_cast<unsigned char>(c) < 0x20) return true;
  return false;
}

std::string quote(std::string_view v) {
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';  // one event, one line: control characters never break it
    } else {
      out += c;
    }
  }
  return out + '"';
}

}  // namespace

std::string Logger::render(std::string_view event, const LogFields& fields) const {
  const auto ts = audit::format_timestamp(audit::Clock::now());
  if (format_ == LogFormat::json) {
    nlohmann::json j;
    j["ts"] = ts;
    j["event"] = event;
    for (const auto& [k, v] : fields) j[std::string(k)] = v;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  std::string line = ts + " " + std::string(event);
  for (const auto& [k, v] : fields) {
    if (v.empty()) continue;
    line += ' ';
    line += k;
    line += '=';
    line += needs_quotes(v) ? quote(v) : v;
  }
  return line + "\n";
}

void Logger::write(std::string_view event, const LogFields& fields) const {
  const auto line = render(event, fields);
  // A single write(2) per line keeps lines from different threads whole.
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace netbox::proxy
