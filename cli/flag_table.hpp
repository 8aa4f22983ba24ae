#pragma once
// How every subcommand binds its flags: one table per subcommand, each entry a CLI11
// option bound to a field of the subcommand's arguments. The same table reads a config
// file (`netbox proxy --config`): every flag is the key of its long name without the
// dashes (--audit-db is "audit-db"), checked by the flag's own validators, and a flag
// given on the command line wins over its key.
#include "usage.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json_fwd.hpp>

#include "netbox/policy/duration.hpp"

namespace netbox::policy {
class JsonFile;
}

#include <chrono>
#include <concepts>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace netbox::cli {

class FlagTable {
 public:
  explicit FlagTable(CLI::App& cmd) : cmd_(cmd) {}
  FlagTable(const FlagTable&) = delete;
  FlagTable& operator=(const FlagTable&) = delete;

  template <class T>
  CLI::Option* option(const std::string& names, T& value, const std::string& help) {
    auto* option = add(cmd_.add_option(names, value, help), kind_of<T>());
    // CLI11 would wrap "-1" around to the largest value.
    if constexpr (std::unsigned_integral<T> && !std::same_as<T, bool>) option->check(not_negative());
    return option;
  }
  // Unset unless given (on the command line or in the config file).
  template <class T>
  CLI::Option* option(const std::string& names, std::optional<T>& value, const std::string& help) {
    return add(cmd_.add_option_function<T>(names, [&value](const T& v) { value = v; }, help), kind_of<T>());
  }
  CLI::Option* flag(const std::string& names, bool& value, const std::string& help) {
    return add(cmd_.add_flag(names, value, help), Kind::boolean);
  }
  // A length of time in the one grammar (netbox/policy/duration.hpp): "90", "1h30m", ...;
  // in a config file a string or a number of seconds. Unset unless given.
  CLI::Option* duration(const std::string& names, std::optional<std::chrono::milliseconds>& value,
                        const std::string& help, policy::BareNumber bare = policy::BareNumber::seconds);

  // Whether the flag got a value, from the command line or the config file.
  bool given(const std::string& flag) const;
  // What names a value in a message: "--listen", or "FILE:LINE:COLUMN: key listen" when
  // a config file gave it.
  std::string source(const std::string& flag) const;

  // Gives every flag not yet given (on the command line, or by a file applied before)
  // the value of its key in `file`'s object. Throws UsageError naming the file, line,
  // column and key ("proxy.json:3:14: key threads: ...") for an unknown key, a value of
  // the wrong JSON type, or one the flag's checks refuse.
  void apply_config(const policy::JsonFile& file);

  CLI::App& command() const { return cmd_; }

 private:
  enum class Kind { text, integer, number, boolean, list, duration };
  struct Entry {
    std::string key;  // the first long name without its dashes
    CLI::Option* option;
    Kind kind;
  };

  template <class T>
  static constexpr Kind kind_of() {
    if constexpr (std::same_as<T, bool>) return Kind::boolean;
    else if constexpr (std::integral<T>) return Kind::integer;
    else if constexpr (std::floating_point<T>) return Kind::number;
    else if constexpr (std::same_as<T, std::vector<std::string>>) return Kind::list;
    else return Kind::text;
  }
  CLI::Option* add(CLI::Option* option, Kind kind);
  static CLI::Validator not_negative();
  const Entry* find(std::string_view key) const;
  std::string near_key(const std::string& key) const;  // " (did you mean KEY?)" or empty
  const Entry& entry(const std::string& flag) const;

  CLI::App& cmd_;
  std::vector<Entry> entries_;
  std::map<std::string, std::string> from_file_;  // flag -> "FILE:LINE:COLUMN: key KEY" that gave it
};

// A subcommand's arguments and the table that binds them, kept alive by its callback.
template <class Args>
struct Bound {
  explicit Bound(CLI::App& cmd) : flags(cmd) {}
  Args args;
  FlagTable flags;
};

}  // namespace netbox::cli
