#!/usr/bin/env bash
# Installs everything, builds, and runs the whole test suite through ctest.
# Usage: scripts/test.sh            (the normal build, then the ASan+UBSan build)
#        NETBOX_TEST_SANITIZE=0 scripts/test.sh   (skip the sanitizer build)
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
run_suite() {
  local type=$1 dir
  if ! dir=$(bash scripts/build.sh "$type" | tail -n 1); then
    echo "== build ($type) FAILED: see the compiler output above ==" >&2
    status=1
    return
  fi
  echo "== ctest ($type, $dir) =="
  (cd "$dir" && ctest --output-on-failure -j"$(nproc)" --timeout 600) || status=1
}
run_suite RelWithDebInfo
if [ "${NETBOX_TEST_SANITIZE:-1}" = 1 ]; then
  run_suite Asan
fi
bash tests/packaging/check_package.sh || status=1  # tests-off build, cmake --install, the .deb installed with apt, systemd-analyze verify
# The README's Quick start demo as a newcomer runs it (in the package's build folder, built
# just above): the allowed fetch arrives and the metadata request is refused and recorded.
demo_log=$(mktemp)
if bash scripts/demo.sh >"$demo_log" 2>&1 && grep -q "hello from the allowed upstream" "$demo_log" &&
   grep -Eq "deny +http +GET +169\.254\.169\.254" "$demo_log"; then
  echo "== demo: ok =="
else
  cat "$demo_log"; echo "== demo FAILED ==" >&2; status=1
fi
rm -f "$demo_log"
bash scripts/bench.sh --smoke || status=1  # benchmark harness smoke (seconds, no targets), so it cannot rot
[ "${NETBOX_TEST_FUZZ:-1}" = 0 ] || bash scripts/fuzz.sh || status=1  # libFuzzer targets, fixed short run (NETBOX_TEST_FUZZ=0 skips)
exit $status
