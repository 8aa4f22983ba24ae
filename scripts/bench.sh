#!/usr/bin/env bash
# Benchmarks netbox against direct, nginx (reverse proxy), squid and tinyproxy on loopback.
# Usage: scripts/bench.sh            full run (5 rounds; writes tests/bench/RESULTS.md and bench.png)
#        scripts/bench.sh --smoke    one short round, no targets enforced, nothing written to the tree (CI)
# Extra arguments go to tests/bench/bench.py (e.g. --rounds 3 --duration 3 --keep-tmp).
# Needs root: it installs Debian packages, raises the fd limit and runs `netbox launch`.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=full
if [ "${1:-}" = --smoke ]; then mode=smoke; shift; fi

bash scripts/install-deps.sh
# squid-openssl: Debian's squid with TLS, for the ssl-bump contender of inspect_bench.py (it
# replaces the squid package: the two conflict, and provide the same /usr/sbin/squid).
pkgs=(squid-openssl tinyproxy wrk bubblewrap gnuplot-nox hyperfine nginx-light)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# nginx-light or full nginx: either provides /usr/sbin/nginx.
if command -v nginx >/dev/null; then
  missing=("${missing[@]/nginx-light}")
fi
if [ -n "${missing[*]// /}" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # policy-rc.d (containers) or the packages' own units may start squid/tinyproxy system
  # services; the harness never uses them, it runs its own instances on free ports.
  apt-get install -y -qq --no-install-recommends ${missing[*]} >/dev/null
fi

# Release build of netbox plus the two bench tools (scripts/build.sh's configuration, only
# the targets the benchmark needs). The smoke run (CI) builds into the test suite's build/.
if [ "$mode" = smoke ]; then
  dir=${BUILD_DIR:-build} type=${BENCH_BUILD_TYPE:-RelWithDebInfo}
else
  dir=${BUILD_DIR:-build-release} type=${BENCH_BUILD_TYPE:-Release}
fi
# An existing build directory keeps its configuration (test.sh's build/ stays -Werror).
# A new one gets NETBOX_WERROR off: GCC 12 at -O3 reports a false -Wrestrict in std::string code.
if [ ! -f "$dir/CMakeCache.txt" ]; then
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" -DNETBOX_WERROR=OFF >/dev/null
fi
cmake --build "$dir" -j"$(nproc)" --target netbox bench_client audit_writer_bench tls_mint_bench >/dev/null

out=$(mktemp -d /tmp/netbox-bench-results.XXXXXX)
trap 'rm -rf "$out"' EXIT
python3 tests/bench/bench.py $([ "$mode" = smoke ] && echo --smoke) \
  --netbox "$dir/netbox" --client "$dir/tests/bench/bench_client" \
  --writer-bench "$dir/tests/bench/audit_writer_bench" --out "$out" "$@"
# TLS inspection (issue 16): inspected HTTPS against a plain tunnel and squid ssl-bump,
# idle memory per inspected connection, leaf minting. Printed; RESULTS.md records a run.
if [ "$mode" = smoke ]; then
  python3 tests/bench/inspect_bench.py --build "$dir" --rounds 1 --seconds 1 --idle 50
else
  python3 tests/bench/inspect_bench.py --build "$dir"
fi
# Transparent capture (issue 15): captured plain HTTP and TLS against CONNECT tunnels to
# the same upstreams, inside one launch. Printed; RESULTS.md records a run.
if [ "$mode" = smoke ]; then
  python3 tests/bench/capture_bench.py --build "$dir" --smoke
else
  python3 tests/bench/capture_bench.py --build "$dir"
fi
# Heap allocations per proxied request (issue 24's B1 shape; jemalloc's own counters).
# Printed; RESULTS.md records a run.
if [ "$mode" = smoke ]; then
  python3 tests/bench/alloc_bench.py --smoke --netbox "$dir/netbox" --client "$dir/tests/bench/bench_client"
else
  python3 tests/bench/alloc_bench.py --netbox "$dir/netbox" --client "$dir/tests/bench/bench_client"
fi
if [ "$mode" = smoke ]; then
  python3 tests/bench/report.py "$out/results.json" --png "$out/bench.png" --require-clean
  echo "bench smoke ok (targets are only judged in the full run)"
else
  cp "$out/results.json" tests/bench/results.json
  python3 tests/bench/report.py tests/bench/results.json --markdown tests/bench/RESULTS.md --png tests/bench/bench.png
fi
