#!/usr/bin/env python3
"""Heap allocations per request through the proxy (issue 24's B1 shape), and, with
--cpu-rounds, B1's CPU per request, for one or more netbox executables side by side.

The shape: keep-alive GETs of the ~100-byte body, absolute-form, through `netbox proxy`
with a policy and the audit store on (variant_bench's proxy: allow 127.0.0.1, its SQLite
audit database), `bench_client http` sending an exact number of requests over --conns
connections.

How allocations are counted: netbox links jemalloc, and every netbox this harness starts
runs with MALLOC_CONF=stats_print:true, so jemalloc prints its own counters when the
process exits. The figure read is `nrequests` of the merged arenas' "total:" line: every
malloc, calloc, realloc and operator new of every thread (tcache hits included; jemalloc
merges each thread's cache counts into its arena). A proxy serves --base requests, another
(fresh) one --requests, each over the same --conns connections, then each is stopped; the
difference of their counts divided by the difference of the requests is the allocations
per request, start-up, shutdown and per-connection work cancelling out. Every request must
be answered 200 and have its audit row, or the harness stops. Rounds alternate the
executables (A B A B ...); medians are reported.

--cpu-rounds N then runs B1 itself (wrk -t2 -c50 keep-alive, --duration s) through one
proxy of each executable, rounds interleaved with the order rotated (variant_bench): the
proxy's CPU seconds (user + system, all threads) / requests.

usage: alloc_bench.py --netbox main=/work/main/build/netbox --netbox branch=build/netbox
                      --client build/tests/bench/bench_client [--rounds 3] [--cpu-rounds 5]
       alloc_bench.py --smoke --netbox build/netbox --client build/tests/bench/bench_client
Progress lines first, the result as JSON on the last line.
"""
import argparse
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
from variant_bench import VariantBench  # noqa: E402

# jemalloc's stats_print: "total:  allocated  nmalloc (#/sec)  ndalloc (#/sec)  nrequests ..."
# under "Merged arenas stats:"; the first "total:" after that heading is the merged one.
TOTAL = re.compile(r"^total:\s+(\d+)\s+(\d+)\s+\d+\s+(\d+)\s+\d+\s+(\d+)", re.M)


def jemalloc_requests(text):
    """Allocation requests (nrequests) of the merged arenas in a jemalloc stats_print dump."""
    at = text.find("Merged arenas stats:")
    m = TOTAL.search(text, at) if at >= 0 else None
    if not m:
        raise RuntimeError("no jemalloc statistics in the proxy's output: is this netbox linked with jemalloc?")
    return int(m.group(4))


class AllocBench(VariantBench):
    def counted_run(self, label, binary, requests, conns, seq):
        """Allocation requests of a fresh proxy (start to exit) that served `requests`."""
        self.netbox = binary
        name = f"alloc-{label}-{seq}"
        port, _admin, proc, db = self.start_netbox_with(name, [], self.policy_keys.get(label))
        r = self.client_json(["http", "--proxy", f"127.0.0.1:{port}", "--target", f"127.0.0.1:{self.up}",
                              "--requests", str(requests), "--conns", str(conns), "--max-seconds", "120"], 180)
        self.stop(proc, timeout=60)
        if r["done"] != requests or r["errors"] or r["non200"]:
            raise RuntimeError(f"{name}: {r['done']}/{requests} answered, {r['errors']} errors, "
                               f"{r['non200']} not 200")
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        rows = con.execute("SELECT count(*) FROM requests").fetchone()[0]
        con.close()
        if rows != requests:
            raise RuntimeError(f"{name}: {rows} audit rows for {requests} requests")
        with open(os.path.join(self.tmp, f"{name}.out")) as f:
            return jemalloc_requests(f.read())

    def count(self, binaries, rounds, base, requests, conns):
        per = {k: [] for k in binaries}
        seq = 0
        for rnd in range(rounds):
            for label, binary in binaries.items():
                seq += 1
                small = self.counted_run(label, binary, base, conns, f"{seq}a")
                big = self.counted_run(label, binary, requests, conns, f"{seq}b")
                per[label].append((big - small) / (requests - base))
                bench.log(f"round {rnd + 1} {label}: {small} allocations for {base} requests, {big} for {requests}: "
                          f"{per[label][-1]:.2f} per request (load {os.getloadavg()[0]:.2f})")
        return per

    def main(self, a, binaries):
        os.environ["MALLOC_CONF"] = "stats_print:true"  # printed at exit only: no cost while measuring
        self.raise_fd_limit()
        self.start_upstream()
        self.write_wrk_scripts()
        load_before = os.getloadavg()
        per = self.count(binaries, a.rounds, a.base, a.requests, a.conns)
        out = {"requests": a.requests, "base": a.base, "conns": a.conns, "rounds": a.rounds,
               "load_before": load_before,
               "allocations_per_request": {k: statistics.median(v) for k, v in per.items() if v}, "all": per}
        if a.cpu_rounds:
            proxies = {}
            for label, binary in binaries.items():
                self.netbox = binary
                proxies[label] = self.start_netbox_with(f"cpu-{label}", [], self.policy_keys.get(label))
            med, res, b1_before, b1_after = self.run_b1(proxies, a.cpu_rounds)
            out["b1"] = {"rounds": a.cpu_rounds, "duration_s": self.dur, "load_before": b1_before,
                         "load_after": b1_after, "median": med, "all": res}
        out["load_after"] = os.getloadavg()
        print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--netbox", action="append", required=True, help="LABEL=PATH or PATH; repeat to compare")
    ap.add_argument("--client", required=True)
    ap.add_argument("--smoke", action="store_true", help="one short round, no B1 (CI: seconds)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=50000)
    ap.add_argument("--base", type=int, default=10000)
    ap.add_argument("--conns", type=int, default=50)
    ap.add_argument("--cpu-rounds", type=int, default=0)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--policy-keys", action="append", default=[],
                    help="LABEL=JSON: keys merged into that label's policy (e.g. a feature turned off, to "
                         "tell its cost from the rest); the same binary may run under two labels")
    a = ap.parse_args()
    if a.smoke:
        a.rounds, a.requests, a.base, a.conns, a.cpu_rounds = 1, 3000, 1000, 10, 0
    if a.requests <= a.base:
        ap.error(f"--requests ({a.requests}) must be more than --base ({a.base})")
    binaries = {}
    for spec in a.netbox:
        label, _, path = spec.rpartition("=")
        binaries[label or f"netbox{len(binaries) + 1}"] = path
    args = argparse.Namespace(smoke=False, rounds=a.rounds, duration=a.duration, netbox=None, client=a.client,
                              writer_bench=None)
    b = AllocBench(args)
    b.policy_keys = {}
    for spec in a.policy_keys:
        label, _, keys = spec.partition("=")
        if label not in binaries:
            ap.error(f"--policy-keys {spec}: no --netbox labelled {label!r}")
        b.policy_keys[label] = json.loads(keys)
    try:
        b.main(a, binaries)
    finally:
        b.stop_all()
        shutil.rmtree(b.tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
