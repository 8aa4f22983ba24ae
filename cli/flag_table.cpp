#include "flag_table.hpp"

#include "netbox/policy/duration.hpp"
#include "netbox/policy/json_file.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace netbox::cli {

CLI::Validator FlagTable::not_negative() {
  return CLI::Validator(
      [](std::string& text) {
        const auto first = text.find_first_not_of(" \t");
        return first != std::string::npos && text[first] == '-' ? "'" + text + "' is negative" : std::string();
      },
      "", "not negative");
}

CLI::Option* FlagTable::duration(const std::string& names, std::optional<std::chrono::milliseconds>& value,
                                 const std::string& help, policy::BareNumber bare) {
  auto* option = cmd_.add_option_function<std::string>(
      names, [&value, bare](const std::string& text) { value = policy::parse_duration(text, bare); }, help);
  option->check(CLI::Validator(
      [bare](std::string& text) {
        const auto d = policy::try_parse_duration(text, bare);
        return d ? std::string() : "'" + text + "' is not a duration: " + d.why + " (" +
                                       std::string(policy::kDurationExamples) + ")";
      },
      "DURATION", "duration"));
  option->type_name("DURATION");
  return add(option, Kind::duration);
}

CLI::Option* FlagTable::add(CLI::Option* option, Kind kind) {
  const auto& longs = option->get_lnames();
  entries_.push_back({longs.empty() ? option->get_name() : longs.front(), option, kind});
  return option;
}

const FlagTable::Entry* FlagTable::find(std::string_view key) const {
  const auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.key == key; });
  return it == entries_.end() ? nullptr : &*it;
}

const FlagTable::Entry& FlagTable::entry(const std::string& flag) const {
  const auto* e = find(flag.starts_with("--") ? std::string_view(flag).substr(2) : std::string_view(flag));
  if (e == nullptr) throw std::logic_error("no flag " + flag + " in the table of " + command_path(cmd_));
  return *e;
}

bool FlagTable::given(const std::string& flag) const { return entry(flag).option->count() > 0; }

std::string FlagTable::source(const std::string& flag) const {
  const auto& e = entry(flag);
  const auto file = from_file_.find(e.key);
  return file == from_file_.end() ? "--" + e.key : file->second;
}

std::string FlagTable::near_key(const std::string& key) const {
  std::vector<std::string> keys;
  for (const auto& e : entries_) keys.push_back(e.key);
  return near_miss(key, keys);
}

void FlagTable::apply_config(const policy::JsonFile& file) {
  const nlohmann::json& object = file.json();
  if (!object.is_object())
    throw UsageError(file.where("") + ": expected a JSON object whose keys are the flags of '" + command_path(cmd_) +
                     "' without their dashes, not " + std::string(object.type_name()));
  for (auto entry_it = object.begin(); entry_it != object.end(); ++entry_it) {
    // Not a structured binding: clang before 16 cannot capture one in the lambda below.
    const std::string& key = entry_it.key();
    const nlohmann::json& value = entry_it.value();
    const std::string pointer = policy::JsonFile::child("", key);
    const Entry* found = find(key);
    if (found == nullptr)
      throw UsageError(file.where(pointer, true) + ": unknown key '" + key + "'" + near_key(key) + " (the keys are the long flags of '" + command_path(cmd_) +
                       "' without their dashes; see its --help)");
    const Entry& e = *found;
    const auto wrong = [&](std::string_view expected) {
      return UsageError(file.where(pointer) + ": key " + key + ": expected " + std::string(expected) + ", not " +
                        value.dump());
    };
    std::vector<std::string> inputs;
    switch (e.kind) {
      case Kind::boolean:
        if (!value.is_boolean()) throw wrong("true or false");
        inputs.push_back(value.get<bool>() ? "true" : "false");
        break;
      case Kind::integer:
        if (!value.is_number_integer()) throw wrong("a whole number");
        inputs.push_back(value.dump());
        break;
      case Kind::number:
        if (!value.is_number()) throw wrong("a number");
        inputs.push_back(value.dump());
        break;
      case Kind::duration:
        if (value.is_number() && !value.is_number_float() && value.get<long long>() < 0) throw wrong("a duration");
        if (value.is_number()) inputs.push_back(value.dump());
        else if (value.is_string()) inputs.push_back(value.get<std::string>());
        else throw wrong("a duration such as \"90s\" or \"1h30m\", or a number of seconds");
        break;
      case Kind::text:
        if (!value.is_string()) throw wrong("a string");
        inputs.push_back(value.get<std::string>());
        break;
      case Kind::list:
        if (value.is_string()) {
          inputs.push_back(value.get<std::string>());
          break;
        }
        if (!value.is_array() || value.empty()) throw wrong("a string or a non-empty list of strings");
        for (const auto& item : value) {
          if (!item.is_string()) throw wrong("a string or a non-empty list of strings");
          inputs.push_back(item.get<std::string>());
        }
        break;
    }
    if (e.option->count() > 0) continue;  // the command line (or a file applied before) wins
    for (auto& input : inputs) e.option->add_result(std::move(input));
    try {
      // The flag's own validators and conversion, exactly as for the command line.
      e.option->run_callback();
    } catch (const CLI::Error& err) {
      std::string why = err.what();
      const std::string flag_prefix = "--" + key + ": ";
      if (why.starts_with(flag_prefix)) why.erase(0, flag_prefix.size());
      throw UsageError(file.where(pointer) + ": key " + key + ": " + why);
    }
    from_file_[e.key] = file.where(pointer, true) + ": key " + key;
  }
}

}  // namespace netbox::cli
