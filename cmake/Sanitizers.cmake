# Build types "Asan" (AddressSanitizer + UndefinedBehaviorSanitizer) and "Tsan".
# cmake -DCMAKE_BUILD_TYPE=Asan ...  The test suite must pass under both.
# GCC 12's -Wmaybe-uninitialized misfires inside libstdc++ (std::regex's
# std::function state) when sanitizer instrumentation changes inlining; it is
# a known false positive and would break the -Werror sanitizer build.
set(_san_common "-O1 -g -fno-omit-frame-pointer -Wno-maybe-uninitialized")
set(CMAKE_CXX_FLAGS_ASAN "${_san_common} -fsanitize=address,undefined -fno-sanitize-recover=undefined"
    CACHE STRING "" FORCE)
set(CMAKE_EXE_LINKER_FLAGS_ASAN "-fsanitize=address,undefined" CACHE STRING "" FORCE)
set(CMAKE_SHARED_LINKER_FLAGS_ASAN "-fsanitize=address,undefined" CACHE STRING "" FORCE)
set(CMAKE_CXX_FLAGS_TSAN "${_san_common} -fsanitize=thread -Wno-tsan" CACHE STRING "" FORCE)
set(CMAKE_EXE_LINKER_FLAGS_TSAN "-fsanitize=thread" CACHE STRING "" FORCE)
set(CMAKE_SHARED_LINKER_FLAGS_TSAN "-fsanitize=thread" CACHE STRING "" FORCE)
