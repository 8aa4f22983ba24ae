# libFuzzer targets (tests/fuzz), built only with -DNETBOX_FUZZ=ON in a build directory of
# their own, configured with clang:
#   cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DNETBOX_FUZZ=ON
# scripts/fuzz.sh does that and runs every target.
option(NETBOX_FUZZ "Build the libFuzzer targets in tests/fuzz (clang only)" OFF)

if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "NETBOX_FUZZ needs clang (libFuzzer): configure a separate build directory with "
                      "-DCMAKE_CXX_COMPILER=clang++ (compiler here: ${CMAKE_CXX_COMPILER_ID})")
endif()

# ASan+UBSan on everything a fuzz target runs, and UB is fatal so libFuzzer keeps the input.
set(NETBOX_FUZZ_SANITIZERS -fsanitize=address,undefined -fno-sanitize-recover=undefined
    -fno-omit-frame-pointer -g)

# A library a fuzz target links: sanitizers plus libFuzzer's coverage hooks (no main).
# Called from tests/fuzz on targets defined elsewhere, so the normal build is untouched.
function(netbox_fuzz_instrument target)
  target_compile_options(${target} PRIVATE ${NETBOX_FUZZ_SANITIZERS} -fsanitize=fuzzer-no-link)
endfunction()

# One fuzz target: tests/fuzz/<name>.cpp plus extra sources, linked with libFuzzer's main.
function(netbox_add_fuzzer name)
  cmake_parse_arguments(F "" "" "SOURCES;LIBS;INCLUDES" ${ARGN})
  add_executable(${name} ${CMAKE_CURRENT_SOURCE_DIR}/${name}.cpp ${F_SOURCES})
  target_compile_options(${name} PRIVATE ${NETBOX_FUZZ_SANITIZERS} -fsanitize=fuzzer-no-link)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${F_INCLUDES})
  target_link_libraries(${name} PRIVATE ${F_LIBS} netbox_warnings)
  set_property(GLOBAL APPEND PROPERTY NETBOX_FUZZ_TARGETS ${name})
endfunction()
