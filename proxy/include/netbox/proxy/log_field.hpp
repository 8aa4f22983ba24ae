#pragma once
// One field of a proxy log line: text, a number (a JSON number in --log-format json, never
// a string) or null (absent: left out of a text line). Views only: a line is rendered
// before the write returns, so the values (temporaries included) outlive their use.
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>

namespace netbox::proxy {

// How much a line matters to an operator: `warn` for a refusal or failure of one request
// or connection, `error` for what the proxy itself cannot do.
enum class LogLevel { info, warn, error };

struct LogField {
  enum class Kind { text, number, null };

  LogField(std::string_view k, std::string_view v) : key(k), kind(Kind::text), text(v) {}
  LogField(std::string_view k, const char* v) : key(k), kind(Kind::text), text(v) {}
  template <std::integral I>
    requires(!std::same_as<I, bool>)
  LogField(std::string_view k, I n) : key(k), kind(Kind::number), number(static_cast<std::int64_t>(n)) {}
  template <std::integral I>
  LogField(std::string_view k, std::optional<I> n)
      : key(k), kind(n ? Kind::number : Kind::null), number(n ? static_cast<std::int64_t>(*n) : 0) {}
  // Empty text is null: a column the audit store leaves NULL.
  static LogField text_or_null(std::string_view k, std::string_view v) {
    LogField f(k, v);
    if (v.empty()) f.kind = Kind::null;
    return f;
  }

  std::string_view key;
  Kind kind;
  std::string_view text;
  std::int64_t number = 0;
};
using LogFields = std::initializer_list<LogField>;

}  // namespace netbox::proxy
