#!/usr/bin/env bash
# Installs dependencies and builds netbox into build/ (or $BUILD_DIR). Idempotent.
# Usage: scripts/build.sh [BUILD_TYPE]   (RelWithDebInfo by default; Asan, Tsan, Debug, Release)
#        NETBOX_BUILD_TESTS=OFF scripts/build.sh   (the netbox executable alone: no test
#        dependencies installed, nothing but netbox compiled)
set -euo pipefail
cd "$(dirname "$0")/.."
tests=${NETBOX_BUILD_TESTS:-ON}
case "$tests" in ON) deps=all ;; OFF) deps=build ;; *) echo "build.sh: NETBOX_BUILD_TESTS is '$tests' (ON or OFF)" >&2; exit 2 ;; esac
bash scripts/install-deps.sh "$deps" >&2
type=${1:-RelWithDebInfo}
dir=${BUILD_DIR:-build}
[ "$type" = RelWithDebInfo ] || dir=${BUILD_DIR:-build-$(echo "$type" | tr '[:upper:]' '[:lower:]')}
# Build output goes to stderr: callers capture stdout for the build folder
# (its last line), and a compiler error must stay visible in CI logs.
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" -DNETBOX_WERROR=ON -DNETBOX_BUILD_TESTS="$tests" >&2
cmake --build "$dir" -j"$(nproc)" >&2
echo "$dir"
