#include "netbox/content/json_schema.hpp"

#include "netbox/content/strict_json.hpp"

#include <re2/re2.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string_view>
#include <vector>

namespace netbox::content {

namespace {

enum TypeBit : unsigned {
  kNull = 1,
  kBoolean = 2,
  kObject = 4,
  kArray = 8,
  kNumber = 16,
  kString = 32,
  kInteger = 64,
};

constexpr std::array<std::pair<std::string_view, unsigned>, 7> kTypeNames{{
    {"null", kNull},
    {"boolean", kBoolean},
    {"object", kObject},
    {"array", kArray},
    {"number", kNumber},
    {"string", kString},
    {"integer", kInteger},
}};

// Nesting of schemas within schemas: policies are written by people, and a bound keeps
// the checker's recursion (which follows the schema, never the body) shallow.
constexpr std::size_t kMaxSchemaDepth = 32;

const std::set<std::string_view>& annotations() {
  static const std::set<std::string_view> keys{"$schema", "$id", "$comment", "title", "description", "default",
                                               "examples"};
  return keys;
}

long double numeric(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return static_cast<long double>(v.get<std::uint64_t>());
  if (v.is_number_integer()) return static_cast<long double>(v.get<std::int64_t>());
  return static_cast<long double>(v.get<double>());
}

bool is_integral(const nlohmann::json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return true;
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && std::floor(d) == d;
}

unsigned type_of(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null: return kNull;
    case nlohmann::json::value_t::boolean: return kBoolean;
    case nlohmann::json::value_t::object: return kObject;
    case nlohmann::json::value_t::array: return kArray;
    case nlohmann::json::value_t::string: return kString;
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: return is_integral(v) ? (kNumber | kInteger) : kNumber;
    default: return 0;
  }
}

std::string type_list(unsigned bits) {
  std::string out;
  for (const auto& [name, bit] : kTypeNames)
    if (bits & bit) out += (out.empty() ? "" : " or ") + std::string(name);
  return out;
}

// Characters, as JSON Schema counts a string's length: Unicode code points, not bytes.
std::uint64_t code_points(const std::string& s) {
  std::uint64_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

std::string short_json(const nlohmann::json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

}  // namespace

struct JsonSchema::Node {
  std::optional<bool> boolean_schema;  // `true` or `false` as a whole schema
  unsigned types = 0;                  // 0: any type
  std::map<std::string, std::shared_ptr<const Node>> properties;
  std::vector<std::string> required;
  std::optional<bool> additional_allowed;
  std::shared_ptr<const Node> additional;
  std::shared_ptr<const Node> items;
  std::optional<std::vector<nlohmann::json>> enum_values;
  std::optional<nlohmann::json> const_value;
  std::shared_ptr<const re2::RE2> pattern;
  std::string pattern_text;
  std::optional<long double> minimum, maximum, exclusive_minimum, exclusive_maximum;
  std::optional<std::uint64_t> min_length, max_length, min_items, max_items;
};

namespace {

using Node = JsonSchema::Node;

struct Compiler {
  std::optional<SchemaError> error;

  void fail(const std::string& pointer, std::string reason) {
    if (!error) error = SchemaError{pointer.empty() ? "/" : pointer, std::move(reason)};
  }

  std::optional<std::uint64_t> count(const nlohmann::json& v, const std::string& pointer) {
    if (!v.is_number() || !is_integral(v) || numeric(v) < 0) {
      fail(pointer, "must be a whole number, 0 or more");
      return std::nullopt;
    }
    return static_cast<std::uint64_t>(numeric(v));
  }

  std::optional<long double> number(const nlohmann::json& v, const std::string& pointer) {
    if (!v.is_number()) {
      fail(pointer, "must be a number");
      return std::nullopt;
    }
    return numeric(v);
  }

  unsigned types(const nlohmann::json& v, const std::string& pointer) {
    auto one = [&](const nlohmann::json& name, const std::string& at) -> unsigned {
      if (name.is_string())
        for (const auto& [n, bit] : kTypeNames)
          if (name.get_ref<const std::string&>() == n) return bit;
      fail(at, "is not a type (null, boolean, object, array, number, string, integer)");
      return 0;
    };
    if (!v.is_array()) return one(v, pointer);
    if (v.empty()) fail(pointer, "must name at least one type");
    unsigned bits = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const unsigned bit = one(v[i], pointer + "/" + std::to_string(i));
      if (bits & bit) fail(pointer + "/" + std::to_string(i), "names a type twice");
      bits |= bit;
    }
    return bits;
  }

  std::shared_ptr<const Node> node(const nlohmann::json& s, const std::string& pointer, std::size_t depth) {
    auto out = std::make_shared<Node>();
    if (depth > kMaxSchemaDepth) {
      fail(pointer, "schemas are nested deeper than " + std::to_string(kMaxSchemaDepth) + " levels");
      return out;
    }
    if (s.is_boolean()) {
      out->boolean_schema = s.get<bool>();
      return out;
    }
    if (!s.is_object()) {
      fail(pointer, "a schema is an object, true or false");
      return out;
    }
    for (const auto& [key, v] : s.items()) {
      const std::string at = pointer + pointer_segment(key);
      if (annotations().count(key)) continue;
      if (key == "type") {
        out->types = types(v, at);
      } else if (key == "properties") {
        if (!v.is_object()) fail(at, "must be an object of schemas");
        else
          for (const auto& [name, sub] : v.items())
            out->properties[name] = node(sub, at + pointer_segment(name), depth + 1);
      } else if (key == "required") {
        std::set<std::string> seen;
        if (!v.is_array()) fail(at, "must be an array of property names");
        else
          for (std::size_t i = 0; i < v.size(); ++i) {
            if (!v[i].is_string()) fail(at + "/" + std::to_string(i), "must be a property name");
            else if (!seen.insert(v[i].get<std::string>()).second)
              fail(at + "/" + std::to_string(i), "names a property twice");
            else out->required.push_back(v[i].get<std::string>());
          }
      } else if (key == "additionalProperties") {
        if (v.is_boolean()) out->additional_allowed = v.get<bool>();
        else out->additional = node(v, at, depth + 1);
      } else if (key == "items") {
        if (v.is_array()) fail(at, "items as an array of schemas (a tuple) is a form netbox does not check; give one schema");
        else out->items = node(v, at, depth + 1);
      } else if (key == "enum") {
        if (!v.is_array() || v.empty()) fail(at, "must be an array of at least one value");
        else out->enum_values = std::vector<nlohmann::json>(v.begin(), v.end());
      } else if (key == "const") {
        out->const_value = v;
      } else if (key == "pattern") {
        if (!v.is_string()) {
          fail(at, "must be a regular expression");
          continue;
        }
        RE2::Options options;
        options.set_log_errors(false);
        options.set_never_capture(true);
        auto re = std::make_shared<const re2::RE2>(v.get<std::string>(), options);
        if (!re->ok())
          fail(at, "\"" + v.get<std::string>() + "\" is not a pattern netbox can run (RE2 syntax: no look-around or "
                   "back-references): " + re->error());
        out->pattern = std::move(re);
        out->pattern_text = v.get<std::string>();
      } else if (key == "minimum") {
        out->minimum = number(v, at);
      } else if (key == "maximum") {
        out->maximum = number(v, at);
      } else if (key == "exclusiveMinimum") {
        out->exclusive_minimum = number(v, at);
      } else if (key == "exclusiveMaximum") {
        out->exclusive_maximum = number(v, at);
      } else if (key == "minLength") {
        out->min_length = count(v, at);
      } else if (key == "maxLength") {
        out->max_length = count(v, at);
      } else if (key == "minItems") {
        out->min_items = count(v, at);
      } else if (key == "maxItems") {
        out->max_items = count(v, at);
      } else {
        fail(at, "\"" + key + "\" is a keyword netbox does not check; the keywords are type, properties, required, "
                 "additionalProperties, items, enum, const, pattern, minimum, maximum, exclusiveMinimum, "
                 "exclusiveMaximum, minLength, maxLength, minItems and maxItems");
      }
    }
    return out;
  }
};

std::optional<Violation> check_node(const Node& n, const nlohmann::json& v, const std::string& at);

std::optional<Violation> check_numbers(const Node& n, const nlohmann::json& v, const std::string& at) {
  const long double x = numeric(v);
  auto bound = [&](const char* keyword, long double limit) {
    return Violation{at, std::string("must be ") + keyword + " " + short_json(nlohmann::json(static_cast<double>(limit)))};
  };
  if (n.minimum && x < *n.minimum) return bound("at least (minimum)", *n.minimum);
  if (n.maximum && x > *n.maximum) return bound("at most (maximum)", *n.maximum);
  if (n.exclusive_minimum && x <= *n.exclusive_minimum) return bound("more than (exclusiveMinimum)", *n.exclusive_minimum);
  if (n.exclusive_maximum && x >= *n.exclusive_maximum) return bound("less than (exclusiveMaximum)", *n.exclusive_maximum);
  return std::nullopt;
}

std::optional<Violation> check_string(const Node& n, const std::string& s, const std::string& at) {
  if (n.min_length || n.max_length) {
    const std::uint64_t len = code_points(s);
    if (n.min_length && len < *n.min_length)
      return Violation{at, "must be at least " + std::to_string(*n.min_length) + " characters long (minLength)"};
    if (n.max_length && len > *n.max_length)
      return Violation{at, "must be at most " + std::to_string(*n.max_length) + " characters long (maxLength)"};
  }
  if (n.pattern && !re2::RE2::PartialMatch(s, *n.pattern))
    return Violation{at, "must match the pattern \"" + n.pattern_text + "\""};
  return std::nullopt;
}

std::optional<Violation> check_object(const Node& n, const nlohmann::json& v, const std::string& at) {
  for (const std::string& name : n.required)
    if (!v.contains(name)) return Violation{at, "must have the property \"" + name + "\" (required)"};
  for (const auto& [name, sub] : v.items()) {
    const std::string child = at + pointer_segment(name);
    if (auto it = n.properties.find(name); it != n.properties.end()) {
      if (auto bad = check_node(*it->second, sub, child)) return bad;
    } else if (n.additional_allowed == false) {
      return Violation{child, "is not a property the schema names (additionalProperties is false)"};
    } else if (n.additional) {
      if (auto bad = check_node(*n.additional, sub, child)) return bad;
    }
  }
  return std::nullopt;
}

std::optional<Violation> check_array(const Node& n, const nlohmann::json& v, const std::string& at) {
  if (n.min_items && v.size() < *n.min_items)
    return Violation{at, "must hold at least " + std::to_string(*n.min_items) + " items (minItems)"};
  if (n.max_items && v.size() > *n.max_items)
    return Violation{at, "must hold at most " + std::to_string(*n.max_items) + " items (maxItems)"};
  if (n.items)
    for (std::size_t i = 0; i < v.size(); ++i)
      if (auto bad = check_node(*n.items, v[i], at + "/" + std::to_string(i))) return bad;
  return std::nullopt;
}

std::optional<Violation> check_node(const Node& n, const nlohmann::json& v, const std::string& at) {
  if (n.boolean_schema) {
    if (*n.boolean_schema) return std::nullopt;
    return Violation{at, "is not allowed here (the schema is false)"};
  }
  const unsigned type = type_of(v);
  if (n.types && !(n.types & type)) return Violation{at, "must be of type " + type_list(n.types)};
  if (n.const_value && !(v == *n.const_value)) return Violation{at, "must be " + short_json(*n.const_value) + " (const)"};
  if (n.enum_values) {
    bool found = false;
    for (const auto& e : *n.enum_values) found = found || v == e;
    if (!found) return Violation{at, "must be one of the values the schema lists (enum)"};
  }
  if (type & kNumber) return check_numbers(n, v, at);
  if (type & kString) return check_string(n, v.get_ref<const std::string&>(), at);
  if (type & kObject) return check_object(n, v, at);
  if (type & kArray) return check_array(n, v, at);
  return std::nullopt;
}

}  // namespace

std::variant<JsonSchema, SchemaError> JsonSchema::compile(const nlohmann::json& schema) {
  Compiler c;
  auto root = c.node(schema, "", 0);
  if (c.error) return *c.error;
  return JsonSchema(std::move(root));
}

std::optional<Violation> JsonSchema::check(const nlohmann::json& value) const { return check_node(*root_, value, ""); }

}  // namespace netbox::content
