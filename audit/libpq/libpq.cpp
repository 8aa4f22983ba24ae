// The libpq functions netbox calls, each forwarding to libpq.so.5 loaded on first use
// (netbox/audit/libpq.hpp says why). A function netbox starts calling is added to
// NETBOX_LIBPQ_FUNCTIONS (the link fails until it is): its declaration in <libpq-fe.h> checks
// the signature written here, so the table cannot drift from the library's header.
#include "netbox/audit/libpq.hpp"

#include "netbox/audit/schema.hpp"

#include <dlfcn.h>
#include <libpq-fe.h>

#include <string>

// X(return type, name, (parameters), (arguments))
#define NETBOX_LIBPQ_FUNCTIONS(X)                                                                              \
  X(void, PQclear, (PGresult * r), (r))                                                                        \
  X(char*, PQcmdTuples, (PGresult * r), (r))                                                                   \
  X(PGconn*, PQconnectdb, (const char* info), (info))                                                          \
  X(PGconn*, PQconnectdbParams, (const char* const* k, const char* const* v, int expand), (k, v, expand))      \
  X(void, PQconninfoFree, (PQconninfoOption * o), (o))                                                         \
  X(PQconninfoOption*, PQconninfoParse, (const char* info, char** error), (info, error))                       \
  X(int, PQconsumeInput, (PGconn * c), (c))                                                                    \
  X(char*, PQerrorMessage, (const PGconn* c), (c))                                                             \
  X(PGresult*, PQexec, (PGconn * c, const char* q), (c, q))                                                    \
  X(PGresult*, PQexecParams,                                                                                   \
    (PGconn * c, const char* q, int n, const Oid* types, const char* const* values, const int* lengths,        \
     const int* formats, int result_format),                                                                   \
    (c, q, n, types, values, lengths, formats, result_format))                                                 \
  X(void, PQfinish, (PGconn * c), (c))                                                                         \
  X(void, PQfreemem, (void* p), (p))                                                                           \
  X(Oid, PQftype, (const PGresult* r, int field), (r, field))                                                  \
  X(PGresult*, PQgetResult, (PGconn * c), (c))                                                                 \
  X(int, PQgetisnull, (const PGresult* r, int row, int field), (r, row, field))                                \
  X(int, PQgetlength, (const PGresult* r, int row, int field), (r, row, field))                                \
  X(char*, PQgetvalue, (const PGresult* r, int row, int field), (r, row, field))                               \
  X(int, PQnfields, (const PGresult* r), (r))                                                                  \
  X(PGnotify*, PQnotifies, (PGconn * c), (c))                                                                  \
  X(int, PQntuples, (const PGresult* r), (r))                                                                  \
  X(int, PQputCopyData, (PGconn * c, const char* data, int n), (c, data, n))                                   \
  X(int, PQputCopyEnd, (PGconn * c, const char* error), (c, error))                                            \
  X(char*, PQresultErrorMessage, (const PGresult* r), (r))                                                     \
  X(ExecStatusType, PQresultStatus, (const PGresult* r), (r))                                                  \
  X(int, PQsendQuery, (PGconn * c, const char* q), (c, q))                                                     \
  X(int, PQsocket, (const PGconn* c), (c))                                                                     \
  X(ConnStatusType, PQstatus, (const PGconn* c), (c))                                                          \
  X(PGTransactionStatusType, PQtransactionStatus, (const PGconn* c), (c))                                      \
  X(unsigned char*, PQunescapeBytea, (const unsigned char* text, size_t* length), (text, length))

namespace netbox::audit {
namespace {

// libpq's soname since PostgreSQL 8.x; Debian's package for it is libpq5.
constexpr const char* kLibrary = "libpq.so.5";

struct Libpq {
#define NETBOX_LIBPQ_POINTER(ret, name, params, args) decltype(&::name) name = nullptr;
  NETBOX_LIBPQ_FUNCTIONS(NETBOX_LIBPQ_POINTER)
#undef NETBOX_LIBPQ_POINTER
};

[[noreturn]] void missing(const std::string& why) {
  throw DatabaseRejected("a PostgreSQL audit store needs libpq, which netbox loads only for postgresql:// "
                         "addresses, and " + why + "; install it (Debian: apt install libpq5)");
}

// RTLD_NOW: every symbol of libpq's own dependencies is resolved here, so a broken
// installation is reported before a connection rather than as a crash in the middle of one.
Libpq load() {
  void* handle = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!handle) missing(std::string("it cannot be loaded: ") + ::dlerror());
  Libpq api;
#define NETBOX_LIBPQ_RESOLVE(ret, name, params, args)                                                          \
  api.name = reinterpret_cast<decltype(api.name)>(::dlsym(handle, #name));                                     \
  if (!api.name) missing(std::string(kLibrary) + " has no " #name " (it is older than netbox needs)");
  NETBOX_LIBPQ_FUNCTIONS(NETBOX_LIBPQ_RESOLVE)
#undef NETBOX_LIBPQ_RESOLVE
  return api;  // the handle stays open for the process's life, as a linked library would
}

// Loaded once; a load that throws is tried again by the next call (a static's initialiser
// that throws leaves it uninitialised).
const Libpq& libpq() {
  static const Libpq api = load();
  return api;
}

}  // namespace

void load_libpq() { libpq(); }

}  // namespace netbox::audit

extern "C" {
#define NETBOX_LIBPQ_FORWARD(ret, name, params, args) \
  ret name params { return netbox::audit::libpq().name args; }
NETBOX_LIBPQ_FUNCTIONS(NETBOX_LIBPQ_FORWARD)
#undef NETBOX_LIBPQ_FORWARD
}
