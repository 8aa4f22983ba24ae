#pragma once
// Where the audit store is: an SQLite file, or a PostgreSQL server named by a libpq URL
// (`postgresql://user@host:port/db`, `postgresql:///db?service=netbox`). Every place that
// takes `--audit-db` passes the value through unchanged; the store and the readers choose
// the backend from it.
#include <string>
#include <string_view>

namespace netbox::audit {

// true for postgresql://... and postgres://...
bool is_postgresql(std::string_view address);

// Throws DatabaseRejected naming `flag` when libpq cannot parse the address, or when it
// carries a password (in the URL or as ?password=): a password on a command line is
// visible to every local user in `ps`; it belongs in PGPASSFILE (~/.pgpass), a service
// file, or PGPASSWORD in the environment.
void check_postgresql_address(std::string_view address, std::string_view flag);

}  // namespace netbox::audit
