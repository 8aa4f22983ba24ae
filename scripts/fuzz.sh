#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan, -DNETBOX_FUZZ=ON) into build-fuzz/ and
# runs each one, seeded from tests/fuzz/corpus/<target>/.
# Usage: scripts/fuzz.sh                 every target for a fixed number of inputs (CI)
#        scripts/fuzz.sh --long SECONDS  every target for SECONDS each (a long run)
#        scripts/fuzz.sh --findings      replay tests/fuzz/findings/ (open bugs; expected to fail)
#        scripts/fuzz.sh ... TARGET...   only these targets (fuzz_host, fuzz_policy_json, ...)
# Environment: FUZZ_RUNS (default 20000), FUZZ_SEED (short runs, default 1), FUZZ_DIR (build directory, default build-fuzz),
#              FUZZ_OUT (new corpus entries and crash files, default $FUZZ_DIR/fuzz-out).
# Exit status 1 when a target crashed, timed out or broke an invariant; the input that did
# it is written to $FUZZ_OUT/<target>/ and printed with the sanitizer's report.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=short
seconds=0
targets=()
while (($#)); do
  case $1 in
    --long)
      [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: --long needs a number of seconds, got '${2:-}'" >&2; exit 2; }
      mode=long seconds=$2
      shift 2 ;;
    --findings) mode=findings; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    fuzz_*) targets+=("$1"); shift ;;
    *) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
all=(fuzz_policy_json fuzz_host fuzz_http_request fuzz_seccomp_profile fuzz_audit_since fuzz_audit_format fuzz_client_hello fuzz_request_path fuzz_dns_query fuzz_socks_request fuzz_json_rpc fuzz_git_push fuzz_secret_scan fuzz_control_protocol)
((${#targets[@]})) || targets=("${all[@]}")
for t in "${targets[@]}"; do
  [[ " ${all[*]} " == *" $t "* ]] || { echo "fuzz.sh: unknown target '$t' (one of: ${all[*]})" >&2; exit 2; }
done

# clang and its libFuzzer/sanitizer runtimes are only needed here, not for the normal build.
need=()
command -v clang++ >/dev/null 2>&1 || need+=(clang)
compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null || need+=(libclang-rt-14-dev)
command -v llvm-symbolizer >/dev/null 2>&1 || need+=(llvm)
if ((${#need[@]})); then
  if [ "$(id -u)" -ne 0 ]; then
    echo "fuzz.sh: missing packages (${need[*]}); run as root to install them" >&2
    exit 1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
bash scripts/install-deps.sh

dir=${FUZZ_DIR:-build-fuzz}
out=${FUZZ_OUT:-$dir/fuzz-out}
runs=${FUZZ_RUNS:-20000}
# RelWithDebInfo: optimised like the real binary, with line numbers in the reports.
cmake -S . -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNETBOX_FUZZ=ON >/dev/null
cmake --build "$dir" -j"$(nproc)" --target "${targets[@]}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for t in "${targets[@]}"; do
  bin=$dir/tests/fuzz/$t
  seeds=tests/fuzz/corpus/$t
  if [ "$mode" = findings ]; then
    found=(tests/fuzz/findings/"$t"/*)
    [ -e "${found[0]}" ] || continue
    echo "== $t: replaying ${#found[@]} open finding(s); each is expected to fail until fixed"
    mkdir -p "$out"
    for f in "${found[@]}"; do
      NETBOX_FUZZ_OPEN_FINDINGS=1 "$bin" "$f" >"$out/$t-finding.log" 2>&1 && echo "   passes now (fixed? remove it and its gate): $f" \
        || echo "   still fails: $f ($(grep -m1 -E "invariant|ERROR|runtime error" "$out/$t-finding.log"))"
    done
    continue
  fi
  # New inputs go to a scratch corpus; the seeds in the repository stay as written. A short
  # run starts from the seeds alone with a fixed random seed, so CI runs the same inputs
  # each time; a long run keeps what earlier long runs found.
  if [ "$mode" = long ]; then
    limits=(-max_total_time="$seconds")
  else
    rm -rf "$out/$t/corpus"
    limits=(-runs="$runs" -seed="${FUZZ_SEED:-1}" -max_total_time=60)
  fi
  mkdir -p "$out/$t/corpus"
  echo "== $t (${limits[*]})"
  dict=tests/fuzz/$t.dict
  [ -f "$dict" ] && limits+=(-dict="$dict")
  if "$bin" "${limits[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$out/$t/" "$out/$t/corpus" "$seeds" >"$out/$t.log" 2>&1; then
    # "Done 20000 runs in 3 second(s)" and the coverage reached: "cov: 2213 ft: 5292".
    echo "   $(grep -E "^Done" "$out/$t.log" || echo "stopped at the time cap"), \
$(grep -E "^#[0-9]+" "$out/$t.log" | tail -n 1 | grep -oE "cov: [0-9]+ ft: [0-9]+")"
  else
    status=1
    echo "FAILED: $t; report and input below (full log: $out/$t.log)"
    grep -vE "^#[0-9]+|^INFO:|NEW_FUNC|^\s*$" "$out/$t.log" | head -n 60
  fi
done
exit $status
