#include "json_positions.hpp"

#include <nlohmann/json.hpp>

#include <set>

namespace netbox::policy::detail {

LineColumn line_column_at(std::string_view text, std::size_t offset) {
  if (offset > text.size()) offset = text.size();
  LineColumn lc{1, 1};
  // Editors do not show a UTF-8 byte order mark, so it takes no column.
  std::size_t start = text.substr(0, 3) == "\xEF\xBB\xBF" && offset >= 3 ? 3 : 0;
  for (std::size_t i = start; i < offset; ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      ++lc.line;
      lc.column = 1;
    } else if ((c & 0xc0) != 0x80) {
      ++lc.column;
    }
  }
  return lc;
}

std::string pointer_token(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

namespace {

// A recursive walk over text nlohmann has already accepted, so it only needs to find
// token boundaries, not to validate.
class Walker {
 public:
  Walker(std::string_view t, int max_depth, std::map<std::string, std::size_t>& values,
         std::map<std::string, std::size_t>& keys)
      : t_(t), max_depth_(max_depth), values_(values), keys_(keys) {}

  std::optional<PositionIndex::Problem> run() {
    skip_ws();
    value("", 0);
    return std::move(problem_);
  }

 private:
  // Whitespace and comments (// to the line's end, /* to */): nlohmann accepted them.
  void skip_ws() {
    for (;;) {
      while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
      if (i_ + 1 >= t_.size() || t_[i_] != '/') return;
      if (t_[i_ + 1] == '/') {
        const auto end = t_.find('\n', i_);
        i_ = end == std::string_view::npos ? t_.size() : end;
      } else if (t_[i_ + 1] == '*') {
        const auto end = t_.find("*/", i_ + 2);
        i_ = end == std::string_view::npos ? t_.size() : end + 2;
      } else {
        return;
      }
    }
  }

  // Returns the decoded string; i_ is left after the closing quote.
  std::string string_token() {
    std::size_t start = i_++;
    bool escaped = false;
    while (i_ < t_.size() && t_[i_] != '"') {
      if (t_[i_] == '\\') {
        escaped = true;
        ++i_;
      }
      ++i_;
    }
    ++i_;
    std::string_view raw = t_.substr(start, i_ - start);
    if (!escaped) return std::string(raw.substr(1, raw.size() - 2));
    return nlohmann::json::parse(raw).get<std::string>();
  }

  void value(const std::string& ptr, int depth) {
    if (problem_) return;
    values_.emplace(ptr, i_);
    if (i_ >= t_.size()) return;
    char c = t_[i_];
    if ((c == '{' || c == '[') && depth >= max_depth_) {
      problem_ = PositionIndex::Problem{ptr, i_, "nesting is deeper than " + std::to_string(max_depth_) + " levels"};
      return;
    }
    if (c == '{') object(ptr, depth);
    else if (c == '[') array(ptr, depth);
    else if (c == '"') string_token();
    else
      while (i_ < t_.size() && t_[i_] != ',' && t_[i_] != ']' && t_[i_] != '}' && t_[i_] != ' ' &&
             t_[i_] != '\t' && t_[i_] != '\n' && t_[i_] != '\r' && t_[i_] != '/')
        ++i_;
  }

  void object(const std::string& ptr, int depth) {
    ++i_;
    std::set<std::string> seen;
    skip_ws();
    if (i_ < t_.size() && t_[i_] == '}') {
      ++i_;
      return;
    }
    while (i_ < t_.size() && !problem_) {
      skip_ws();
      std::size_t key_at = i_;
      std::string key = string_token();
      std::string child = ptr + "/" + pointer_token(key);
      if (!seen.insert(key).second) {
        problem_ = PositionIndex::Problem{child, key_at, "key '" + key + "' appears twice in the same object"};
        return;
      }
      keys_.emplace(child, key_at);
      skip_ws();
      ++i_;  // ':'
      skip_ws();
      value(child, depth + 1);
      skip_ws();
      if (i_ < t_.size() && t_[i_] == ',') {
        ++i_;
        continue;
      }
      ++i_;  // '}'
      return;
    }
  }

  void array(const std::string& ptr, int depth) {
    ++i_;
    skip_ws();
    if (i_ < t_.size() && t_[i_] == ']') {
      ++i_;
      return;
    }
    for (std::size_t n = 0; i_ < t_.size() && !problem_; ++n) {
      skip_ws();
      value(ptr + "/" + std::to_string(n), depth + 1);
      skip_ws();
      if (i_ < t_.size() && t_[i_] == ',') {
        ++i_;
        continue;
      }
      ++i_;  // ']'
      return;
    }
  }

  std::string_view t_;
  std::size_t i_ = 0;
  int max_depth_;
  std::map<std::string, std::size_t>& values_;
  std::map<std::string, std::size_t>& keys_;
  std::optional<PositionIndex::Problem> problem_;
};

}  // namespace

std::optional<PositionIndex::Problem> PositionIndex::build(std::string_view text, int max_depth) {
  text_ = text;
  values_.clear();
  keys_.clear();
  // A UTF-8 byte order mark is skipped by nlohmann too.
  std::string_view body = text;
  std::size_t skip = 0;
  if (body.substr(0, 3) == "\xEF\xBB\xBF") skip = 3;
  Walker w(body.substr(skip), max_depth, values_, keys_);
  auto problem = w.run();
  if (skip) {
    for (auto& [k, v] : values_) v += skip;
    for (auto& [k, v] : keys_) v += skip;
    if (problem) problem->offset += skip;
  }
  return problem;
}

LineColumn PositionIndex::value(const std::string& pointer) const {
  auto it = values_.find(pointer);
  if (it == values_.end()) return {};
  return line_column_at(text_, it->second);
}

std::size_t PositionIndex::value_offset(const std::string& pointer) const {
  auto it = values_.find(pointer);
  return it == values_.end() ? std::string_view::npos : it->second;
}

LineColumn PositionIndex::key(const std::string& pointer) const {
  auto it = keys_.find(pointer);
  if (it == keys_.end()) return value(pointer);
  return line_column_at(text_, it->second);
}

}  // namespace netbox::policy::detail
