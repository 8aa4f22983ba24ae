#include "netbox/policy/load.hpp"

#include <algorithm>
#include <utility>

#include "cidr_parse.hpp"
#include "digest.hpp"
#include "load_context.hpp"
#include "load_inspection.hpp"
#include "load_profile.hpp"
#include "netbox/policy/host.hpp"
#include "netbox/policy/json_file.hpp"
#include "netbox/policy/trusted_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace netbox::policy {
namespace {

std::string compose(const std::string& file, int line, int column, const std::string& path, const std::string& what) {
  std::string s = file;
  if (line > 0) s += ":" + std::to_string(line) + ":" + std::to_string(column);
  s += ": ";
  if (!path.empty()) s += path + ": ";
  return s + what;
}

bool valid_agent_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
          c == '.'))
      return false;
  return true;
}

void read_resolve(const detail::LoadContext& ctx, const nlohmann::json& j, const std::string& pointer,
                  Policy& policy) {
  ctx.expect_object(j, pointer);
  for (const auto& [key, value] : j.items()) ctx.keep_going([&, &key = key, &value = value] {
    std::string p = detail::child(pointer, key);
    if (key.find('*') != std::string::npos) ctx.fail(p, "a pinned name cannot contain '*'", true);
    HostParse h = parse_host(key);
    if (!h) ctx.fail(p, h.error.message, true);
    if (h.host->is_ip()) ctx.fail(p, "'" + key + "' is an IP address; only names can be pinned", true);
    if (policy.pins.count(h.host->name))
      ctx.fail(p, "'" + key + "' is pinned twice (it normalises to '" + h.host->name + "')", true);
    ctx.expect_array(value, p);
    if (value.empty()) ctx.fail(p, "must list at least one IP address");
    std::vector<boost::asio::ip::address> addrs;
    for (std::size_t i = 0; i < value.size(); ++i) {
      std::string ap = detail::child(p, i);
      const std::string& s = ctx.expect_string(value[i], ap);
      auto a = detail::parse_strict_address(s);
      if (!a) ctx.fail(ap, "'" + s + "' is not an IP address; resolve pins must be IP addresses");
      addrs.push_back(*a);
    }
    policy.pins.emplace(h.host->name, std::move(addrs));
  });
}

void read_agents(const detail::LoadContext& ctx, const nlohmann::json& j, const std::string& pointer,
                 Policy& policy) {
  ctx.expect_object(j, pointer);
  for (const auto& [name, value] : j.items()) ctx.keep_going([&, &name = name, &value = value] {
    std::string p = detail::child(pointer, name);
    if (!valid_agent_name(name))
      ctx.fail(p, "agent name '" + name + "' must be 1-64 letters, digits, '.', '-' or '_'", true);
    if (name == "anonymous")
      ctx.fail(p, "'anonymous' is reserved for clients without an agent identity; the top-level keys apply to them",
               true);
    ctx.expect_object(value, p);
    for (const char* top_only : {"version", "resolve", "resolve_unlisted_names", "agents"})
      if (value.contains(top_only))
        ctx.fail(detail::child(p, top_only), std::string("'") + top_only + "' is only allowed at the top level", true);
    ctx.check_keys(value, p,
                   {"mode", "allow", "include", "deny", "ports", "internal", "limits", "sandbox", "inspect", "rules",
                    "credentials", "guardian"});
    Profile profile = policy.base;
    detail::read_profile_keys(ctx, value, p, "agents." + name + ".", profile);
    profile.overrides.clear();
    for (const char* key :
         {"mode", "allow", "include", "deny", "ports", "internal", "limits", "sandbox", "inspect", "rules", "credentials",
          "guardian"})
      if (value.contains(key)) profile.overrides.emplace_back(key);
    // Only where the agent changed what the check reads: the top level's own mistakes
    // are reported once, at the top level.
    if (value.contains("allow") || value.contains("include") || value.contains("inspect") || value.contains("rules") || value.contains("credentials"))
      detail::check_inspection(ctx, profile, p);
    policy.agents.emplace(name, std::move(profile));
  });
}

}  // namespace

std::string PolicyProblem::text() const { return compose(file, line, column, json_path, message); }

namespace {
std::string all_lines(const std::vector<PolicyProblem>& problems) {
  std::string out;
  for (const auto& p : problems) out += (out.empty() ? "" : "\n") + p.text();
  return out;
}
}  // namespace

PolicyError::PolicyError(std::string file, int line, int column, std::string json_path, std::string what)
    : PolicyError(std::vector<PolicyProblem>{
          PolicyProblem{std::move(file), line, column, std::move(json_path), std::move(what)}}) {}

PolicyError::PolicyError(std::vector<PolicyProblem> problems)
    : std::runtime_error(all_lines(problems)), problems_(std::move(problems)) {}

Policy parse_policy(std::string_view text, const std::string& source_name, Digest digest) {
  detail::LoadContext ctx;
  ctx.source = source_name;

  // Comments allowed, a key given twice refused; positions for every message.
  const JsonFile file(std::string(text), source_name);
  ctx.positions = file.positions();
  const nlohmann::json& doc = file.json();

  if (!doc.is_object()) ctx.fail("", "a policy must be a JSON object, not " + detail::json_kind(doc));
  // From here on a mistake is recorded and loading goes on, so that every mistake in the
  // file is reported at once; nothing of a file with any mistake is returned.
  ctx.check_keys(doc, "",
                 {"$schema", "version", "mode", "allow", "include", "deny", "ports", "internal", "resolve", "resolve_unlisted_names",
                  "limits", "sandbox", "inspect", "rules", "credentials", "guardian", "agents"});

  Policy policy;
  policy.source = source_name;
  if (digest == Digest::computed) policy.digest = detail::sha256_hex(text);

  auto version = doc.find("version");
  if (version == doc.end()) {
    auto lc = ctx.positions.value("");
    ctx.problems.push_back({source_name, lc.line, lc.column, "/version",
                            "missing; a policy must start with \"version\": 1"});
  } else if (!version->is_number_integer() || version->get<long long>() != 1) {
    ctx.keep_going([&] { ctx.fail("/version", "version must be 1, not " + version->dump()); });
  }
  if (auto it = doc.find("$schema"); it != doc.end()) ctx.keep_going([&] { ctx.expect_string(*it, "/$schema"); });

  detail::read_profile_keys(ctx, doc, "", "", policy.base);
  detail::check_inspection(ctx, policy.base, "");
  if (auto it = doc.find("resolve"); it != doc.end()) ctx.keep_going([&] { read_resolve(ctx, *it, "/resolve", policy); });
  if (auto it = doc.find("resolve_unlisted_names"); it != doc.end()) ctx.keep_going([&] {
    if (!it->is_boolean())
      ctx.fail("/resolve_unlisted_names", "must be true or false, not " + detail::json_kind(*it));
    policy.base.resolve_unlisted_names = it->get<bool>();
  });
  if (auto it = doc.find("agents"); it != doc.end()) ctx.keep_going([&] { read_agents(ctx, *it, "/agents", policy); });
  if (!ctx.problems.empty()) {
    // In the order they stand in the file (objects are read in key order).
    std::stable_sort(ctx.problems.begin(), ctx.problems.end(), [](const PolicyProblem& a, const PolicyProblem& b) {
      return std::pair(a.line, a.column) < std::pair(b.line, b.column);
    });
    throw PolicyError(std::move(ctx.problems));
  }
  return policy;
}

// Checked on the descriptor it reads, so the file checked is the file read.
Policy load_policy_file(const std::filesystem::path& file, Digest digest) {
  constexpr std::size_t kMaxBytes = 16U << 20;
  const std::string name = file.string();
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) throw PolicyError(name, 0, 0, "", "is a directory, not a policy file");
  struct Fd {
    int fd;
    ~Fd() {
      if (fd >= 0) ::close(fd);
    }
    // O_NONBLOCK: a FIFO planted at the path must not block the load (or a reload); it is
    // refused below as no regular file.
  } const file_fd{::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  const int fd = file_fd.fd;
  if (fd < 0) throw PolicyError(name, 0, 0, "", std::string("cannot open policy file: ") + std::strerror(errno));
  const FileTrust trust{.owners = invoking_owners(),
                        .why = "whoever may write it decides what the proxy lets through"};
  if (auto problem = untrusted_because(fd, file, trust)) throw PolicyError(name, 0, 0, "", *problem);
  std::string text;
  char buf[65536];
  for (;;) {
    const auto n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw PolicyError(name, 0, 0, "", std::string("cannot read policy file: ") + std::strerror(errno));
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > kMaxBytes) throw PolicyError(name, 0, 0, "", "policy file is larger than 16 MiB");
  }
  return parse_policy(text, name, digest);
}

Policy default_policy() { return parse_policy(R"({"version": 1})", "<embedded>"); }

}  // namespace netbox::policy
