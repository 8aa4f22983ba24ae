# Every target of ours gets the same warning set through this interface library.
add_library(netbox_warnings INTERFACE)
target_compile_options(netbox_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
  -Wold-style-cast -Wcast-align -Woverloaded-virtual -Wimplicit-fallthrough)
if(NETBOX_WERROR)
  target_compile_options(netbox_warnings INTERFACE -Werror)
endif()
# GCC 12 at -O3 reports a false -Wrestrict inside libstdc++'s operator+ (string concatenation).
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(netbox_warnings INTERFACE -Wno-restrict)
endif()
