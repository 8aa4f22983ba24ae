#include "netbox/content/strict_json.hpp"

#include <set>
#include <vector>

namespace netbox::content {

std::variant<nlohmann::json, JsonRefusal> read_strict_json(std::string_view text, std::size_t max_depth) {
  using event = nlohmann::json::parse_event_t;
  // One set of keys per open container (arrays get an empty one), so a key repeated in
  // the same object is seen however deep it is.
  std::vector<std::set<std::string>> open;
  std::string refusal;
  auto callback = [&](int depth, event e, nlohmann::json& parsed) {
    if (!refusal.empty()) return false;
    switch (e) {
      case event::object_start:
      case event::array_start:
        if (static_cast<std::size_t>(depth) >= max_depth) {
          refusal = "nested deeper than " + std::to_string(max_depth) + " levels";
          return false;
        }
        open.emplace_back();
        return true;
      case event::object_end:
      case event::array_end:
        if (!open.empty()) open.pop_back();
        return true;
      case event::key: {
        const std::string& key = parsed.get_ref<const std::string&>();
        if (!open.empty() && !open.back().insert(key).second) {
          refusal = "the key \"" + key + "\" appears twice in one object";
          return false;
        }
        return true;
      }
      case event::value:
        return true;
    }
    return true;
  };
  nlohmann::json value;
  try {
    value = nlohmann::json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true,
                                  /*ignore_comments=*/false);
  } catch (const nlohmann::json::parse_error& e) {
    if (!refusal.empty()) return JsonRefusal{refusal};
    // The library's message quotes the bytes it read, which may be any bytes: the
    // position alone keeps the reason printable and valid UTF-8.
    return JsonRefusal{"not JSON (at byte " + std::to_string(e.byte) + ")"};
  } catch (const nlohmann::json::out_of_range&) {
    // A number no double holds (found by fuzz_json_rpc: "1e9999" threw past the reader).
    return JsonRefusal{"a number too large to read"};
  }
  // A callback that returned false discards the value instead of throwing.
  if (!refusal.empty()) return JsonRefusal{refusal};
  if (value.is_discarded()) return JsonRefusal{"not JSON"};
  return value;
}

std::string pointer_segment(std::string_view key) {
  std::string out;
  out.reserve(key.size() + 1);
  out += '/';
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

}  // namespace netbox::content
