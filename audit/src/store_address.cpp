#include "netbox/audit/store_address.hpp"

#include "netbox/audit/libpq.hpp"
#include "netbox/audit/schema.hpp"

#include <libpq-fe.h>

#include <memory>

namespace netbox::audit {

bool is_postgresql(std::string_view address) {
  return address.starts_with("postgresql://") || address.starts_with("postgres://");
}

void check_postgresql_address(std::string_view address, std::string_view flag) {
  try {
    load_libpq();  // the first libpq call of a process that names a postgresql:// store
  } catch (const DatabaseRejected& e) {
    throw DatabaseRejected(std::string(flag) + ": " + e.what());
  }
  char* error = nullptr;
  const std::string text(address);
  PQconninfoOption* raw = PQconninfoParse(text.c_str(), &error);
  std::unique_ptr<PQconninfoOption, decltype(&PQconninfoFree)> options(raw, PQconninfoFree);
  if (!options) {
    std::string why = error ? error : "out of memory";
    PQfreemem(error);
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    // libpq's message quotes no part of the address, so a password in it stays unshown.
    throw DatabaseRejected(std::string(flag) + ": not a PostgreSQL address libpq accepts: " + why);
  }
  for (const PQconninfoOption* o = options.get(); o->keyword; ++o)
    if (std::string_view(o->keyword) == "password" && o->val && *o->val)
      throw DatabaseRejected(std::string(flag) +
                             ": the PostgreSQL address holds a password, which every local user could read "
                             "on the command line; put it in PGPASSFILE (~/.pgpass) or a service file, or "
                             "PGPASSWORD in netbox's environment, and leave it out of the address");
}

}  // namespace netbox::audit
