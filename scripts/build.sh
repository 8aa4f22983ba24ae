#!/usr/bin/env bash
# Installs dependencies and builds netbox into build/ (or $BUILD_DIR). Idempotent.
# Usage: scripts/build.sh [BUILD_TYPE]   (RelWithDebInfo by default; Asan, Tsan, Debug, Release)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
type=${1:-RelWithDebInfo}
dir=${BUILD_DIR:-build}
[ "$type" = RelWithDebInfo ] || dir=${BUILD_DIR:-build-$(echo "$type" | tr '[:upper:]' '[:lower:]')}
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" -DNETBOX_WERROR=ON >/dev/null
cmake --build "$dir" -j"$(nproc)"
echo "$dir"
