#include "launch_defaults.hpp"

#include "config_file.hpp"
#include "presets.hpp"

#include "netbox/policy/json_file.hpp"
#include "netbox/tls/certificate_authority.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string_view>

namespace netbox::cli {
namespace {

std::optional<uid_t> sudo_uid() {
  const char* text = std::getenv("SUDO_UID");
  if (text == nullptr || *text == '\0') return std::nullopt;
  char* end = nullptr;
  const unsigned long v = std::strtoul(text, &end, 10);
  if (*end != '\0') return std::nullopt;
  return static_cast<uid_t>(v);
}

// "~/x", and "=~/x" or ":~/x" (in PATH=~/a:~/b), name the invoking user's HOME.
std::string expand_home(const std::string& text, const std::string& home) {
  if (home.empty()) return text;
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const bool starts = i == 0 || text[i - 1] == '=' || text[i - 1] == ':';
    if (starts && text.compare(i, 2, "~/") == 0) out += home;
    else out += text[i];
  }
  return out;
}

std::vector<std::string> strings_of(const nlohmann::json& object, const char* key) {
  std::vector<std::string> out;
  if (auto it = object.find(key); it != object.end())
    for (const auto& v : *it) out.push_back(v.get<std::string>());
  return out;
}

// The preset's API key kept from the agent: with a netbox CA (--ca-dir, else `netbox ca
// init`'s default folder) and the key set in the launcher's environment, the policy
// inspects the API host and injects the key; the agent's variable holds a placeholder.
// Without either, the key reaches the agent as --keep-env passes it.
void add_credential(const nlohmann::json& c, nlohmann::json& policy, launcher::LaunchOptions& o) {
  std::string variable;
  for (const auto& name : c.at("env")) {
    const char* value = std::getenv(name.get<std::string>().c_str());
    if (value != nullptr && *value != '\0') {
      variable = name.get<std::string>();
      break;
    }
  }
  const std::filesystem::path ca = o.ca_dir.value_or(tls::kDefaultCaDir);
  std::error_code ec;
  if (variable.empty() || !std::filesystem::exists(ca / "ca.key", ec)) return;
  policy["inspect"] = c.at("hosts");
  policy["credentials"] = nlohmann::json::array({{{"name", c.at("name")},
                                                  {"hosts", c.at("hosts")},
                                                  {"header", c.at("header")},
                                                  {"format", c.at("format")},
                                                  {"secret_env", variable}}});
  o.ca_dir = ca;
}

}  // namespace

InvokingUser invoking_user() {
  InvokingUser u;
  u.uid = sudo_uid().value_or(::getuid());
  if (const passwd* pw = ::getpwuid(u.uid); pw != nullptr && pw->pw_dir != nullptr) u.home = pw->pw_dir;
  return u;
}

std::string user_launch_config(const InvokingUser& user) {
  return user.home.empty() ? std::string() : user.home + "/.config/netbox/launch.json";
}

void apply_launch_files(FlagTable& flags, const InvokingUser& user) {
  // The user's first, so its keys win over the system's (a key is applied only when its
  // flag has no value yet). Run as root through sudo, the user's file may be theirs.
  if (const auto mine = user_launch_config(user); !mine.empty()) apply_config_file(flags, mine, false, {0, user.uid});
  apply_config_file(flags, kSystemLaunchConfig, false, {0});
}

void apply_preset(const std::string& name, const InvokingUser& user, launcher::LaunchOptions& o) {
  const Preset* preset = find_preset(name);
  if (preset == nullptr) throw UsageError("--preset '" + name + "': no such preset");
  // Shipped text: a mistake in it is netbox's, found by the unit test of every preset.
  const policy::JsonFile file(std::string(preset->json), "preset " + std::string(preset->name));
  const nlohmann::json& launch = file.json().at("launch");
  const auto before = [](std::vector<std::string>& list, std::vector<std::string> first) {
    list.insert(list.begin(), first.begin(), first.end());
  };
  // Its folders in HOME, where they exist: a missing one (not yet signed in) is not an error.
  for (auto [key, list] : {std::pair{"ro", &o.ro}, std::pair{"rw", &o.rw}}) {
    std::vector<std::string> present;
    for (auto& path : strings_of(launch, key)) {
      path = expand_home(path, user.home);
      std::error_code ec;
      if (!path.starts_with("~") && std::filesystem::symlink_status(path, ec).type() != std::filesystem::file_type::not_found &&
          !ec)
        present.push_back(path);
    }
    before(*list, present);
  }
  std::vector<std::string> env;
  for (auto& e : strings_of(launch, "env")) env.push_back(expand_home(e, user.home));
  before(o.env, env);
  before(o.keep_env, strings_of(launch, "keep-env"));
  if (!o.policy_file && !o.proxy_control) {
    nlohmann::json policy = file.json().at("policy");
    if (auto credential = file.json().find("credential"); credential != file.json().end())
      add_credential(*credential, policy, o);
    o.policy_text = std::pair{file.source(), policy.dump()};
  }
  // Arguments the agent needs inside netbox (Codex: its own sandbox off), after its name.
  const auto args = strings_of(file.json(), "args");
  if (!args.empty() && !o.command.empty() &&
      std::filesystem::path(o.command.front()).filename() == std::string(preset->command))
    o.command.insert(o.command.begin() + 1, args.begin(), args.end());
}

}  // namespace netbox::cli
