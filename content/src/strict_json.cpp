#include "netbox/content/strict_json.hpp"

#include <map>
#include <vector>

namespace netbox::content {
namespace {

// A key as Go's encoding/json matches it to a field: ASCII case folded, and the two code
// points that fold into ASCII letters (U+017F long s, U+212A Kelvin sign) taken as them.
// A server so written reads `Name` for `name` (the last one wins), so two keys that
// fold alike would let netbox check one and the server act on the other.
std::string folded(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (std::size_t i = 0; i < key.size(); ++i) {
    const char c = key[i];
    if (key.substr(i, 2) == "\xC5\xBF") {
      out += 's';
      ++i;
    } else if (key.substr(i, 3) == "\xE2\x84\xAA") {
      out += 'k';
      i += 2;
    } else {
      out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    }
  }
  return out;
}

}  // namespace

std::variant<nlohmann::json, JsonRefusal> read_strict_json(std::string_view text, std::size_t max_depth) {
  using event = nlohmann::json::parse_event_t;
  // One set of keys per open container (arrays get an empty one), so a key repeated in
  // the same object is seen however deep it is.
  std::vector<std::map<std::string, std::string>> open;  // folded key -> the key as written
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
        if (open.empty()) return true;
        const auto [at, fresh] = open.back().try_emplace(folded(key), key);
        if (fresh) return true;
        refusal = at->second == key ? "the key \"" + key + "\" appears twice in one object"
                                    : "the keys \"" + at->second + "\" and \"" + key +
                                          "\" differ only in case in one object (a server may read either)";
        return false;
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
