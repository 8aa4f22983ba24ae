#pragma once
// A JSON text as netbox reads its files (policies, proxy.json, launch.json), so each
// accepts the same text and reports a mistake the same way, at FILE:LINE:COLUMN:
// comments (// to the end of the line, /* ... */) are allowed, a key given twice in one
// object is refused, and so is nesting deeper than 32 levels.
#include "netbox/policy/load.hpp"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <string_view>

namespace netbox::policy {

namespace detail {
class PositionIndex;
}

class JsonFile {
 public:
  // Throws PolicyError (source, line, column) when `text` is not such JSON.
  JsonFile(std::string text, std::string source);
  ~JsonFile();
  // Not movable: the positions point into the text.
  JsonFile(const JsonFile&) = delete;
  JsonFile& operator=(const JsonFile&) = delete;

  const nlohmann::json& json() const { return json_; }
  const std::string& source() const { return source_; }
  const std::string& text() const { return text_; }
  const detail::PositionIndex& positions() const { return *positions_; }
  // "FILE:LINE:COLUMN" of the value a JSON pointer names ("/listen"), or of its key;
  // "FILE" alone when the pointer names nothing.
  std::string where(const std::string& pointer, bool at_key = false) const;
  // The pointer of `key` inside the object at `pointer`: child("", "a/b") is "/a~1b".
  static std::string child(const std::string& pointer, std::string_view key);

 private:
  std::string text_;
  std::string source_;
  nlohmann::json json_;
  std::unique_ptr<detail::PositionIndex> positions_;
};

}  // namespace netbox::policy
