#include "load_sandbox.hpp"

#include "netbox/policy/size.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

namespace netbox::policy::detail {
namespace {

// Paths are the host's, bound at the same place inside: relative ones would depend on
// where `netbox launch` happens to run.
std::string absolute_path(const LoadContext& ctx, const nlohmann::json& v, const std::string& pointer) {
  const std::string& s = ctx.expect_string(v, pointer);
  if (s.empty() || s.front() != '/') ctx.fail(pointer, "must be an absolute path, not \"" + s + "\"");
  return s;
}

std::vector<std::string> path_list(const LoadContext& ctx, const nlohmann::json& v, const std::string& pointer) {
  ctx.expect_array(v, pointer);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i)
    ctx.keep_going([&] { out.push_back(absolute_path(ctx, v[i], child(pointer, i))); });
  return out;
}

// A size as the flags take it ("512M", "4G"), or a whole number of bytes.
std::string size_text(const LoadContext& ctx, const nlohmann::json& v, const std::string& pointer,
                      bool unlimited_ok) {
  const std::string expected =
      std::string("must be a size such as 512M or 4G") + (unlimited_ok ? " or \"unlimited\"" : "") + ", not ";
  std::string text;
  if (v.is_number_unsigned() || (v.is_number_integer() && v.get<long long>() > 0)) text = v.dump();
  else if (v.is_string()) text = v.get<std::string>();
  else ctx.fail(pointer, expected + json_kind(v));
  const auto n = parse_size(text);
  if (!n || *n == 0 || (!unlimited_ok && *n == kUnlimited)) ctx.fail(pointer, expected + v.dump());
  return text;
}

std::string count_text(const LoadContext& ctx, const nlohmann::json& v, const std::string& pointer) {
  const std::string expected = "must be a positive whole number or \"unlimited\", not ";
  std::string text;
  if (v.is_number_integer()) text = v.dump();
  else if (v.is_string()) text = v.get<std::string>();
  else ctx.fail(pointer, expected + json_kind(v));
  const auto n = parse_count(text);
  if (!n || *n == 0) ctx.fail(pointer, expected + v.dump());
  return text;
}

std::string cpus_text(const LoadContext& ctx, const nlohmann::json& v, const std::string& pointer) {
  const std::string expected = "must be a number of CPUs such as 0.5 or 2 (at least 0.01), not ";
  std::string text;
  if (v.is_number()) text = v.dump();
  else if (v.is_string()) text = v.get<std::string>();
  else ctx.fail(pointer, expected + json_kind(v));
  char* end = nullptr;
  const double n = text.empty() || std::isspace(static_cast<unsigned char>(text[0])) ? NAN
                                                                                     : std::strtod(text.c_str(), &end);
  if (!std::isfinite(n) || end != text.c_str() + text.size() || n < 0.01) ctx.fail(pointer, expected + v.dump());
  return text;
}

std::vector<std::string> layer_list(const LoadContext& ctx, const nlohmann::json& v, const std::string& pointer) {
  // netbox launch --allow-degraded's layer names (launcher/degraded_layers.hpp).
  static const std::vector<std::string> kLayers = {"workdir", "ro", "rw", "workdir-quota", "cgroup"};
  ctx.expect_array(v, pointer);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) ctx.keep_going([&] {
    const std::string p = child(pointer, i);
    const std::string& s = ctx.expect_string(v[i], p);
    if (std::find(kLayers.begin(), kLayers.end(), s) == kLayers.end())
      ctx.fail(p, "\"" + s + "\" is no layer; expected one of workdir, ro, rw, workdir-quota, cgroup");
    out.push_back(s);
  });
  return out;
}

}  // namespace

void read_sandbox(const LoadContext& ctx, const nlohmann::json& object, const std::string& pointer,
                  SandboxSettings& s) {
  ctx.expect_object(object, pointer);
  // The names of `netbox launch`'s flags, with '_' for '-'.
  ctx.check_keys(object, pointer,
                 {"workdir", "ro", "rw", "hide", "tmp_size", "workdir_quota", "memory", "cpus", "pids", "user",
                  "allow_degraded", "network"});
  for (const auto& [key, v] : object.items()) ctx.keep_going([&, &key = key, &v = v] {
    const std::string p = child(pointer, key);
    if (key == "workdir") s.workdir = absolute_path(ctx, v, p);
    else if (key == "ro") s.ro = path_list(ctx, v, p);
    else if (key == "rw") s.rw = path_list(ctx, v, p);
    else if (key == "hide") s.hide = path_list(ctx, v, p);
    else if (key == "tmp_size") s.tmp_size = size_text(ctx, v, p, false);
    else if (key == "workdir_quota") s.workdir_quota = size_text(ctx, v, p, false);
    else if (key == "memory") s.memory = size_text(ctx, v, p, true);
    else if (key == "cpus") s.cpus = cpus_text(ctx, v, p);
    else if (key == "pids") s.pids = count_text(ctx, v, p);
    else if (key == "allow_degraded") s.allow_degraded = layer_list(ctx, v, p);
    else if (key == "network") {
      const std::string& n = ctx.expect_string(v, p);
      if (n != "transparent" && n != "proxy-vars") ctx.fail(p, "must be \"transparent\" or \"proxy-vars\", not \"" + n + "\"");
      s.network = n;
    } else if (key == "user") {
      const std::string& u = ctx.expect_string(v, p);
      if (u.empty()) ctx.fail(p, "must name a user, not \"\"");
      s.user = u;
    }
  });
}

}  // namespace netbox::policy::detail
