#pragma once
// Where each value and key of a JSON text starts, by JSON pointer. nlohmann::json keeps
// no source positions, so error messages about meaning ("bad CIDR at /allow/2") get
// their line and column from this index, built from the text itself.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace netbox::policy::detail {

struct LineColumn {
  int line = 0;    // 1-based; 0 when unknown
  int column = 0;  // 1-based, counted in characters (UTF-8 code points)
};

LineColumn line_column_at(std::string_view text, std::size_t offset);

// Escapes one reference token for a JSON pointer (RFC 6901): "~" -> "~0", "/" -> "~1".
std::string pointer_token(std::string_view key);

class PositionIndex {
 public:
  // Problems found while indexing that nlohmann accepts but a policy must not have.
  struct Problem {
    std::string pointer;
    std::size_t offset = 0;
    std::string message;
  };

  // `text` must already be valid JSON (nlohmann parsed it). Returns a problem for a
  // duplicate key or nesting deeper than `max_depth`.
  std::optional<Problem> build(std::string_view text, int max_depth = 32);

  LineColumn value(const std::string& pointer) const;  // where the value starts
  LineColumn key(const std::string& pointer) const;    // where its key starts (else the value)
  // The byte offset where the value starts; npos when the pointer names nothing.
  std::size_t value_offset(const std::string& pointer) const;

 private:
  std::string_view text_;
  std::map<std::string, std::size_t> values_;
  std::map<std::string, std::size_t> keys_;
};

}  // namespace netbox::policy::detail
