#!/usr/bin/env bash
# The README's five-minute walk-through runs as written, from a fresh clone.
# Usage: readme_walkthrough.sh SOURCE_DIR [BUILD_DIR]
#
# Clones SOURCE_DIR's repository at its HEAD commit into a temporary folder, extracts the
# fenced blocks that follow a `<!-- walkthrough -->` line in the clone's README.md, and runs
# them in order with bash -euo pipefail, from the clone, with a HOME of their own. The block
# after `<!-- walkthrough:build -->` builds netbox; with BUILD_DIR it is skipped and the
# clone's build/ points at BUILD_DIR instead (a full build would take most of the test's
# time and prove nothing the build itself does not). Then checks what a reader would see:
# the agent fetched the allowed page and the audit log holds the allowed and the denied
# request. Needs root (netbox launch); exits 77 (skipped) otherwise.
set -euo pipefail
src=$(cd "${1:?usage: readme_walkthrough.sh SOURCE_DIR [BUILD_DIR]}" && pwd)
build=${2:-}
if [ "$(id -u)" != 0 ]; then
  echo "skipped: the walk-through runs netbox launch, which needs root"
  exit 77
fi
commit=$(git -C "$src" rev-parse HEAD) || { echo "FAIL: $src is not a git repository"; exit 1; }

tmp=$(mktemp -d /tmp/netbox-walkthrough-XXXXXX)
chmod 755 "$tmp"  # the agent runs as nobody and must reach its workdir under HOME
walk_pid=
cleanup() {
  # The walk-through starts a server in the background: end its whole process group.
  [ -n "$walk_pid" ] && kill -- "-$walk_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

git clone -q --no-local "$src" "$tmp/clone"
git -C "$tmp/clone" checkout -q "$commit"
mkdir -m 755 "$tmp/home"

extract() {  # extract MARKER: the fenced blocks that follow a line holding exactly MARKER
  awk -v marker="$1" '
    $0 == marker { want = 1; next }
    want && /^```/ { if (inside) { inside = 0; want = 0 } else inside = 1; next }
    inside { print }' "$tmp/clone/README.md"
}
extract '<!-- walkthrough -->' >"$tmp/walkthrough.sh"
extract '<!-- walkthrough:build -->' >"$tmp/build.sh"
if ! grep -q 'netbox launch' "$tmp/walkthrough.sh"; then
  echo "FAIL: README.md has no <!-- walkthrough --> block that runs netbox launch"
  exit 1
fi
if [ -n "$build" ]; then
  [ -s "$tmp/build.sh" ] || { echo "FAIL: README.md has no <!-- walkthrough:build --> block"; exit 1; }
  ln -s "$(cd "$build" && pwd)" "$tmp/clone/build"
  echo "== build step (reusing $build instead):" && cat "$tmp/build.sh"
  script="$tmp/walkthrough.sh"
else
  cat "$tmp/build.sh" "$tmp/walkthrough.sh" >"$tmp/all.sh"
  script="$tmp/all.sh"
fi
echo "== the walk-through:" && cat "$script"

# Its own session, so that cleanup can end everything it started; a root shell's usual
# umask, so that the agent (nobody) may enter the folders the walk-through makes; a time
# limit below ctest's, so that a hang is reported with the output so far.
(cd "$tmp/clone" && umask 022 && exec env -u XDG_STATE_HOME -u XDG_CONFIG_HOME HOME="$tmp/home" \
   setsid timeout 240 bash -euo pipefail -x "$script") >"$tmp/out.log" 2>&1 &
walk_pid=$!
status=0
wait "$walk_pid" || status=$?
echo "== its output:" && cat "$tmp/out.log"
if [ "$status" = 124 ]; then
  echo "FAIL: the walk-through did not finish within 240 s"
  exit 1
elif [ "$status" != 0 ]; then
  echo "FAIL: the walk-through exited $status"
  exit 1
fi
fail=0
expect() {  # expect WHAT WORD...: one line of the output holds every WORD (as a whole word)
  local what=$1 line word found=
  shift
  while IFS= read -r line; do
    found=1
    for word in "$@"; do
      [[ " $line " =~ [^[:alnum:]._-]"$word"[^[:alnum:]._-] ]] || { found=; break; }
    done
    [ -n "$found" ] && return 0
  done <"$tmp/out.log"
  echo "FAIL: $what (no line holds all of: $*)"
  fail=1
}
if ! grep -qx 'simple index' "$tmp/out.log"; then
  echo "FAIL: the agent did not print the page of the allowed host (no line 'simple index')"
  fail=1
fi
expect "the audit log has the allowed request" my-agent allow GET pkgs.walkthrough.test 18090 200
expect "the audit log has the refused CONNECT to example.com" my-agent deny CONNECT example.com 443 403
expect "the JSON output has the refusal" '"decision": "deny"'
[ "$fail" = 0 ] && echo "ok: the README walk-through ran as written"
exit "$fail"
