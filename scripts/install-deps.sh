#!/usr/bin/env bash
# Installs every Debian 12 package netbox needs to build, test and demo.
# Idempotent: apt-get skips what is already installed.
# Usage: scripts/install-deps.sh [all|build]
#   all (default): everything the tests, the benchmarks and the demo use;
#   build: only what building the netbox executable alone and running it needs (the
#   demo and the package), so a newcomer's first run does not wait for a browser or a JDK.
set -euo pipefail
mode=${1:-all}
case "$mode" in all|build) ;; *) echo "install-deps: unknown mode '$mode' (all or build)" >&2; exit 2;; esac
PKGS=(
  build-essential cmake ninja-build pkg-config git ccache
  libboost1.81-dev libssl-dev libc-ares-dev libsqlite3-dev sqlite3 libpq-dev
  nlohmann-json3-dev libseccomp-dev libidn2-dev
  libcli11-dev libnftnl-dev libmnl-dev libcap-dev libjemalloc-dev libre2-dev zlib1g-dev
  iproute2 nftables curl python3 procps
)
if [ "$mode" = all ]; then
  PKGS+=(
    libgtest-dev libgmock-dev json-schema-test-suite dnsmasq-base nginx-light python3-requests
    postgresql
    openssl  # the tests' own certificates and Ed25519 keys (MCP upstream, audit signing, ca tests)
    chromium fonts-dejavu-core
    man-db systemd util-linux
  )
  # Node.js with npm installs playwright-core for the dashboard's browser test; the machine
  # image ships one, else Debian's.
  command -v npm >/dev/null 2>&1 || PKGS+=(nodejs npm)
  # A JDK for the launch test of a Java HttpClient program (JAVA_TOOL_OPTIONS); the machine
  # image may ship one, else Debian's default.
  command -v java >/dev/null 2>&1 || PKGS+=(default-jdk-headless)
fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages (${missing[*]}); run as root to install them" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# promtool checks the shipped Prometheus alert rules (tests). Only the tool is taken from
# Debian's prometheus package, unpacked rather than installed: installing it would start a
# Prometheus server on port 9090 of the machine.
if [ "$mode" = all ] && ! command -v promtool >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: promtool is missing; run as root to install it" >&2
    exit 1
  fi
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download -qq prometheus 2>/dev/null) || { apt-get update -qq && (cd "$tmp" && apt-get download -qq prometheus); }
  dpkg-deb --fsys-tarfile "$tmp"/prometheus_*.deb | tar -x -C "$tmp" ./usr/bin/promtool
  install -m 0755 "$tmp/usr/bin/promtool" /usr/local/bin/promtool
  rm -rf "$tmp"
fi
