#include "load_context.hpp"

#include "netbox/policy/near_miss.hpp"

#include <algorithm>
#include <vector>

namespace netbox::policy::detail {
std::string json_kind(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::number_float: return "a floating-point number";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "a number";
    default: return "an unsupported value";
  }
}

std::string child(const std::string& pointer, std::string_view key) { return pointer + "/" + pointer_token(key); }
std::string child(const std::string& pointer, std::size_t index) { return pointer + "/" + std::to_string(index); }

void LoadContext::fail(const std::string& pointer, const std::string& what, bool at_key) const {
  LineColumn lc = at_key ? positions.key(pointer) : positions.value(pointer);
  throw PolicyError(source, lc.line, lc.column, pointer, what);
}

void LoadContext::expect_object(const nlohmann::json& j, const std::string& pointer) const {
  if (!j.is_object()) fail(pointer, "must be an object, not " + json_kind(j));
}

void LoadContext::expect_array(const nlohmann::json& j, const std::string& pointer) const {
  if (!j.is_array()) fail(pointer, "must be an array, not " + json_kind(j));
}

const std::string& LoadContext::expect_string(const nlohmann::json& j, const std::string& pointer) const {
  if (!j.is_string()) fail(pointer, "must be a string, not " + json_kind(j));
  return j.get_ref<const std::string&>();
}

void LoadContext::check_keys(const nlohmann::json& object, const std::string& pointer,
                             std::initializer_list<std::string_view> allowed) const {
  for (const auto& [key, value] : object.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string msg = "unknown key '" + key + "'";
    const std::string best = closest_name(key, std::vector<std::string_view>(allowed));
    if (!best.empty()) {
      msg += "; did you mean '" + best + "'?";
    } else {
      msg += "; expected one of:";
      bool first = true;
      for (auto a : allowed) {
        msg += (first ? " " : ", ") + std::string(a);
        first = false;
      }
    }
    const std::string where = child(pointer, key);  // a lambda may not capture a structured binding (clang)
    keep_going([&] { fail(where, msg, true); });
  }
}

}  // namespace netbox::policy::detail
