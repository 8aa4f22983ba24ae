#pragma once
// Where `--export` sends records: `ocsf-jsonl:PATH` (one OCSF object per line in a file) or
// `otlp-http://HOST:PORT[/PATH]` (OTLP/HTTP JSON logs, POST to /v1/logs by default).
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace netbox::siem {  // `export` is a C++ keyword

struct SinkSpec {
  enum class Kind { ocsf_jsonl, otlp_http };
  Kind kind = Kind::ocsf_jsonl;
  std::string text;              // as given, for messages and the metric's label
  std::filesystem::path path;    // ocsf_jsonl
  std::string host;              // otlp_http: a name or an IP literal (brackets removed)
  std::uint16_t port = 0;
  std::string target = "/v1/logs";
};

// Throws std::invalid_argument saying what is wrong with `text` (not naming the flag: the
// caller does).
SinkSpec parse_sink(std::string_view text);

}  // namespace netbox::siem
