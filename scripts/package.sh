#!/usr/bin/env bash
# Builds the netbox executable alone (no tests, no npm, no network) into build-package/
# and the .deb from it. Prints the .deb's path as its last line.
# Usage: scripts/package.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh build >&2
dir=${BUILD_DIR:-build-package}
# RelWithDebInfo like the test build, so its objects come from the same compiler cache;
# CPack strips the binary.
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNETBOX_BUILD_TESTS=OFF -DNETBOX_WERROR=ON \
  -DCMAKE_INSTALL_PREFIX=/usr >&2
cmake --build "$dir" -j"$(nproc)" >&2
rm -f "$dir"/netbox_*.deb
(cd "$dir" && cpack -G DEB >&2)
ls "$PWD/$dir"/netbox_*.deb
