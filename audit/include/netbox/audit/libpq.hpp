#pragma once
// libpq, loaded when a PostgreSQL store is first used (audit/libpq/libpq.cpp).
//
// netbox is not linked against libpq: libpq.so.5 and the 17 libraries it needs (Kerberos,
// LDAP, SASL, GnuTLS, p11-kit ...) would be mapped and relocated by every start of the
// binary, `netbox launch -- /bin/true` among them, for the few that name a postgresql://
// store (tests/bench/RESULTS.md, B6). The libpq functions netbox calls are defined in
// netbox itself, each forwarding through a table filled by dlopen("libpq.so.5") on the
// first call, so the code that uses them is written against <libpq-fe.h> as before.

namespace netbox::audit {

// Loads libpq now (once per process). Throws DatabaseRejected naming the library and the
// package to install when it cannot be loaded or lacks a function netbox calls: a
// configuration error (exit 2), said before any connection is tried.
void load_libpq();

}  // namespace netbox::audit
