#!/usr/bin/env bash
# The Quick start demo: builds netbox, starts a small upstream on loopback, runs a
# confined agent that fetches one allowed URL and is refused one denied URL, then
# prints the audit rows. Idempotent; needs root (network namespaces, nftables).
set -euo pipefail
cd "$(dirname "$0")/.."
# The executable alone, in the package's build folder: a newcomer's first run compiles
# netbox, not the test suite it does not run (scripts/test.sh builds that in build/).
build=$(NETBOX_BUILD_TESTS=OFF BUILD_DIR=build-package bash scripts/build.sh | tail -n 1)
netbox="$PWD/$build/netbox"

work=$(mktemp -d /tmp/netbox-demo-XXXXXX)
cleanup() {
  [ -n "${upstream_pid:-}" ] && kill "$upstream_pid" 2>/dev/null || true
  [ -n "${proxy_pid:-}" ] && kill "$proxy_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# The upstream: a static page on 127.0.0.1:18080, which the demo policy pins
# demo.netbox.test to (and lets through internal.allow).
mkdir -p "$work/www"
echo "hello from the allowed upstream" >"$work/www/index.html"
python3 -m http.server 18080 --bind 127.0.0.1 --directory "$work/www" >/dev/null 2>&1 &
upstream_pid=$!
for _ in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:18080/ && break; sleep 0.1; done

db="$work/audit.db"
agent_script='
echo "agent> curl http://demo.netbox.test:18080/"
curl -sS http://demo.netbox.test:18080/ || true
echo
echo "agent> curl http://169.254.169.254/latest/meta-data/   (cloud metadata: an SSRF favourite)"
curl -sS -i http://169.254.169.254/latest/meta-data/ || true
echo
echo "agent> curl --noproxy \"*\" http://127.0.0.1:18080/   (going around the proxy)"
curl -sS --max-time 5 --noproxy "*" http://127.0.0.1:18080/ || true
'

echo "== netbox launch: a confined agent (sh + curl) =="
# The agent's project is a folder of its own: never this clone, which holds the policy it
# must not be able to rewrite (netbox refuses a policy inside the agent's workdir).
# Run as root, the agent is a uid of its own: the project is made writable for it (and
# mktemp's 0700 folder above it passable).
chmod 0755 "$work"
mkdir -p -m 0777 "$work/project"
"$netbox" launch --policy "$PWD/examples/demo-policy.json" --audit-db "$db" --name demo-agent \
  --workdir "$work/project" -- sh -c "$agent_script"

echo
echo "== netbox audit --db $db =="
"$netbox" audit --db "$db"
