// `netbox policy push FILE --policy postgresql://...`: publishes a policy file as the next
// version of a PostgreSQL policy source, which every proxy started with that --policy
// loads within moments (docs/fleet.md, "One policy for many proxies"). The file is checked
// as `netbox policy check` checks it first: a policy that fails is never inserted.
#include "audit_reading.hpp"
#include "commands.hpp"
#include "flag_table.hpp"

#include "netbox/audit/policy_store.hpp"
#include "netbox/audit/schema.hpp"
#include "netbox/audit/store_address.hpp"
#include "netbox/policy/load.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

namespace netbox::cli {
namespace {

struct PushArgs {
  std::string file;
  std::string source;
};

// Who published it, for the table's readers: the user and the host.
std::string publisher() {
  const char* user = std::getenv("USER");
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return std::string(user ? user : std::to_string(::getuid())) + "@" + host;
}

int push(const CLI::App& cmd, const PushArgs& a) {
  if (!audit::is_postgresql(a.source))
    return usage_error(cmd, "--policy " + a.source + ": expected a PostgreSQL address (postgresql://...)");
  try {
    audit::check_postgresql_address(a.source, "--policy");
  } catch (const std::exception& e) {
    return usage_error(cmd, e.what());
  }
  policy::Policy checked;
  try {
    checked = policy::load_policy_file(a.file);
  } catch (const policy::PolicyError& e) {
    std::cerr << e.what() << "\nnetbox policy push: nothing published\n";
    return 2;
  }
  // The bytes that were checked are the bytes published (the loader read them, digest included).
  std::ifstream in(a.file, std::ios::binary);
  const std::string body{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (policy::parse_policy(body, a.file).digest != checked.digest) {
    std::cerr << "netbox policy push: " << a.file << " changed while it was read; nothing published\n";
    return 1;
  }
  return run_reporting(cmd, [&] {
    const auto version = audit::publish_policy(a.source, body, checked.digest, publisher());
    std::cout << "published " << a.file << " as version " << version << " of " << a.source << " (sha256 "
              << checked.digest << ")\n";
    return 0;
  });
}

}  // namespace

void add_policy_push_command(CLI::App& policy, int& rc) {
  auto* sub = policy.add_subcommand(
      "push", "Check a policy file and publish it as the next version of a PostgreSQL policy source: every proxy "
              "started with that --policy reloads it (one that fails the check is not published)");
  auto cmd = std::make_shared<Bound<PushArgs>>(*sub);
  auto& a = cmd->args;
  auto& f = cmd->flags;
  f.option("FILE", a.file, "The policy file (JSON, version 1)")->required();
  f.option("--policy", a.source,
           "The policy source: postgresql://USER@HOST:PORT/DB (or ?service=NAME); the password from PGPASSFILE, a "
           "service file or PGPASSWORD, never in the address")
      ->required();
  sub->callback([cmd, sub, &rc] { rc = push(*sub, cmd->args); });
}

}  // namespace netbox::cli
