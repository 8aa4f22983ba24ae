#include "netbox/policy/json_file.hpp"

#include "json_positions.hpp"

namespace netbox::policy {
namespace {

// nlohmann's message without its "[json.exception...] parse error at line L, column C: "
// prefix: we print our own position in the FILE:LINE:COL form.
std::string parse_error_text(const nlohmann::json::parse_error& e) {
  std::string w = e.what();
  auto col = w.find("column ");
  if (col != std::string::npos) {
    auto colon = w.find(": ", col);
    if (colon != std::string::npos) return w.substr(colon + 2);
  }
  auto colon = w.find("] ");
  return colon == std::string::npos ? w : w.substr(colon + 2);
}

// nlohmann reports a number too large for a double ("1e400") as out_of_range 406, without
// a position: "... number overflow parsing '1e400'". The first occurrence of that literal
// is where parsing stopped (an earlier one would have stopped it there).
std::size_t overflow_offset(std::string_view text, const std::string& message) {
  auto open = message.find("parsing '");
  auto close = message.rfind('\'');
  if (open == std::string::npos || close <= open + 9) return std::string_view::npos;
  return text.find(message.substr(open + 9, close - open - 9));
}

}  // namespace

JsonFile::JsonFile(std::string text, std::string source)
    : text_(std::move(text)), source_(std::move(source)), positions_(std::make_unique<detail::PositionIndex>()) {
  try {
    json_ = nlohmann::json::parse(text_, nullptr, true, /*ignore_comments=*/true);
  } catch (const nlohmann::json::parse_error& e) {
    std::size_t offset = e.byte > 0 ? e.byte - 1 : 0;
    auto lc = detail::line_column_at(text_, offset);
    throw PolicyError(source_, lc.line, lc.column, "", "invalid JSON: " + parse_error_text(e));
  } catch (const nlohmann::json::exception& e) {
    std::string w = e.what();
    auto bracket = w.find("] ");
    std::string message = bracket == std::string::npos ? w : w.substr(bracket + 2);
    auto offset = overflow_offset(text_, message);
    if (offset == std::string_view::npos) throw PolicyError(source_, 0, 0, "", "invalid JSON: " + message);
    auto lc = detail::line_column_at(text_, offset);
    throw PolicyError(source_, lc.line, lc.column, "", "invalid JSON: " + message);
  }
  if (auto problem = positions_->build(text_)) {
    auto lc = detail::line_column_at(text_, problem->offset);
    throw PolicyError(source_, lc.line, lc.column, problem->pointer, problem->message);
  }
}

JsonFile::~JsonFile() = default;

std::string JsonFile::child(const std::string& pointer, std::string_view key) {
  return pointer + "/" + detail::pointer_token(key);
}

std::string JsonFile::where(const std::string& pointer, bool at_key) const {
  const auto lc = at_key ? positions_->key(pointer) : positions_->value(pointer);
  return lc.line > 0 ? source_ + ":" + std::to_string(lc.line) + ":" + std::to_string(lc.column) : source_;
}

}  // namespace netbox::policy
