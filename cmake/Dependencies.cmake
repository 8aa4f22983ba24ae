# All dependencies come from Debian 12 packages (scripts/install-deps.sh).
find_package(Threads REQUIRED)
find_package(Boost 1.81 REQUIRED CONFIG)
find_package(OpenSSL REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(CLI11 REQUIRED)
if(NETBOX_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
find_package(SQLite3 REQUIRED)
find_package(ZLIB REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(CARES REQUIRED IMPORTED_TARGET libcares)
pkg_check_modules(IDN2 REQUIRED IMPORTED_TARGET libidn2)
pkg_check_modules(SECCOMP REQUIRED IMPORTED_TARGET libseccomp)
pkg_check_modules(NFTNL REQUIRED IMPORTED_TARGET libnftnl)
pkg_check_modules(MNL REQUIRED IMPORTED_TARGET libmnl)
pkg_check_modules(LIBCAP REQUIRED IMPORTED_TARGET libcap)
pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
# RE2 is C++: its shared library brings libstdc++.so back into a netbox linked with
# -static-libstdc++ (cli/CMakeLists.txt), and with it ~4,300 symbol relocations the
# dynamic loader resolves at every start (a quarter of all; tests/bench/RESULTS.md, B6).
# Its static archive (Debian's libre2-dev ships one) is linked instead; sanitizer builds
# keep the shared one, as they keep the shared libstdc++.
find_library(NETBOX_RE2_ARCHIVE NAMES libre2.a)
if(NETBOX_RE2_ARCHIVE AND NOT CMAKE_BUILD_TYPE MATCHES "^(Asan|Tsan)$")
  set_target_properties(PkgConfig::RE2 PROPERTIES INTERFACE_LINK_LIBRARIES "${NETBOX_RE2_ARCHIVE};Threads::Threads")
endif()
# libpq, PostgreSQL's own C client, for the PostgreSQL audit store (docs/audit.md): its header
# only; the library is loaded when a postgresql:// store is used (audit/libpq/libpq.cpp).
pkg_check_modules(LIBPQ REQUIRED IMPORTED_TARGET libpq)

# The netbox executable allocates with jemalloc: per request the proxy makes and frees
# dozens of small objects on two io threads, the audit writer frees them in batches on its
# own, and glibc's malloc/free were ~8% of the proxy's CPU under load (jemalloc's
# per-thread caches take most of that away; measured in tests/bench/RESULTS.md).
# Sanitizer builds keep their own allocator.
pkg_check_modules(JEMALLOC IMPORTED_TARGET jemalloc)
add_library(netbox_allocator INTERFACE)
# Its static archive where there is one: Debian's libjemalloc.so needs libstdc++.so (for its
# operator new), which would otherwise come back with it (see RE2 above).
find_library(NETBOX_JEMALLOC_ARCHIVE NAMES libjemalloc_pic.a)
if(JEMALLOC_FOUND AND NETBOX_JEMALLOC_ARCHIVE AND NOT CMAKE_BUILD_TYPE MATCHES "^(Asan|Tsan)$")
  target_link_libraries(netbox_allocator INTERFACE ${NETBOX_JEMALLOC_ARCHIVE} Threads::Threads ${CMAKE_DL_LIBS} m)
elseif(JEMALLOC_FOUND AND NOT CMAKE_BUILD_TYPE MATCHES "^(Asan|Tsan)$")
  target_link_libraries(netbox_allocator INTERFACE PkgConfig::JEMALLOC)
elseif(NOT CMAKE_BUILD_TYPE MATCHES "^(Asan|Tsan)$")
  message(WARNING "jemalloc not found (libjemalloc-dev): netbox falls back to glibc malloc")
endif()

# Boost.Asio/Beast are header-only here; keep one definition set for every TU.
add_library(netbox_boost INTERFACE)
target_link_libraries(netbox_boost INTERFACE Boost::headers Threads::Threads)
target_compile_definitions(netbox_boost INTERFACE BOOST_ASIO_NO_DEPRECATED)
