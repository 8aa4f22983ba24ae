#pragma once
// A documented subset of JSON Schema (draft 7) for request bodies: type, properties,
// required, additionalProperties, items (one schema), enum, const, pattern, minimum,
// maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength, minItems, maxItems,
// and the boolean schemas true and false. Annotations ($schema, $id, $comment, title,
// description, default, examples) are accepted and change nothing. Every other keyword is
// refused when the schema is compiled, never ignored: a check that silently skipped a
// keyword would let through what its author meant to stop.
#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <variant>

namespace netbox::content {

struct SchemaError {
  std::string pointer;  // into the schema, RFC 6901
  std::string reason;
};

struct Violation {
  std::string pointer;  // into the checked value, RFC 6901 ("" is the whole value)
  std::string reason;   // names the keyword and, where short, the expected value
};

class JsonSchema {
 public:
  static std::variant<JsonSchema, SchemaError> compile(const nlohmann::json& schema);

  // nullopt when `value` conforms; otherwise the first failure, in a fixed order (the
  // value's own keywords, then an object's required and properties by name, then an
  // array's items by index), so the same body always gets the same answer.
  std::optional<Violation> check(const nlohmann::json& value) const;

  struct Node;

 private:
  explicit JsonSchema(std::shared_ptr<const Node> root) : root_(std::move(root)) {}
  std::shared_ptr<const Node> root_;  // immutable once compiled: copies share it
};

}  // namespace netbox::content
