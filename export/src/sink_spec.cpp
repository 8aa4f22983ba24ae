#include "netbox/export/sink_spec.hpp"

#include <charconv>
#include <stdexcept>

namespace netbox::siem {
namespace {

constexpr std::string_view kJsonl = "ocsf-jsonl:";
constexpr std::string_view kOtlp = "otlp-http://";

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  throw std::invalid_argument("'" + std::string(text) + "': " + why +
                              " (expected ocsf-jsonl:PATH or otlp-http://HOST:PORT)");
}

SinkSpec parse_otlp(std::string_view text) {
  SinkSpec s;
  s.kind = SinkSpec::Kind::otlp_http;
  s.text = text;
  std::string_view rest = text.substr(kOtlp.size());
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
    s.target = rest.substr(slash);
    rest = rest.substr(0, slash);
  }
  std::string_view port;
  if (rest.starts_with('[')) {  // [::1]:4318
    const auto close = rest.find(']');
    if (close == std::string_view::npos || close + 1 >= rest.size() || rest[close + 1] != ':')
      bad(text, "an IPv6 address is written [ADDR]:PORT");
    s.host = rest.substr(1, close - 1);
    port = rest.substr(close + 2);
  } else {
    const auto colon = rest.rfind(':');
    if (colon == std::string_view::npos) bad(text, "no port");
    s.host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  if (s.host.empty()) bad(text, "no host");
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc{} || end != port.data() + port.size() || value == 0 || value > 65535)
    bad(text, "the port '" + std::string(port) + "' is not a number from 1 to 65535");
  s.port = static_cast<std::uint16_t>(value);
  for (const char c : s.target)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) bad(text, "the path holds a space or control character");
  return s;
}

}  // namespace

SinkSpec parse_sink(std::string_view text) {
  if (text.starts_with(kJsonl)) {
    SinkSpec s;
    s.text = text;
    s.path = std::string(text.substr(kJsonl.size()));
    if (s.path.empty()) bad(text, "no path after ocsf-jsonl:");
    return s;
  }
  if (text.starts_with(kOtlp)) return parse_otlp(text);
  if (text.starts_with("otlp-https://")) bad(text, "TLS to the receiver is not supported; use a local collector");
  bad(text, "unknown kind of export");
}

}  // namespace netbox::siem
