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
  // Both are secrets libpq takes from the address (sslpassword unlocks the client key);
  // the address is shown in messages, events and the process's command line.
  for (const PQconninfoOption* o = options.get(); o->keyword; ++o) {
    const std::string_view key(o->keyword);
    if ((key == "password" || key == "sslpassword") && o->val && *o->val)
      throw DatabaseRejected(std::string(flag) + ": the PostgreSQL address holds a " + std::string(key) +
                             ", which every local user could read on the command line; " +
                             (key == "password" ? "put it in PGPASSFILE (~/.pgpass) or a service file, or PGPASSWORD "
                                                  "in netbox's environment,"
                                                : "put it in a service file (PGSERVICEFILE),") +
                             " and leave it out of the address");
  }
}

}  // namespace netbox::audit
