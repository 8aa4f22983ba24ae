#!/usr/bin/env python3
"""Where B1's CPU goes, for two or more netbox executables side by side: each runs as
variant_bench's proxy (policy + SQLite audit on), takes wrk -t2 -c50 keep-alive GETs of the
~100-byte body for --duration s while `perf record -g -F 2000 -p PID` samples it, rounds
alternating (A B A B ...). Then per run: sampled CPU µs/request split into categories, and
the symbols whose µs/request changed most between the first two labels (mean over rounds).
1 sample at 2000 Hz = 500 µs of CPU, so µs/request = samples / requests * 500.

usage: b1_profile.py --netbox before=PATH --netbox after=PATH [--rounds 2] [--duration 8]
                     [--keep DIR]   (perf.data files kept there for perf report / perf diff)
Needs perf and wrk; perf_event_paranoid <= 2 (own processes) or root for kernel symbols.
"""
import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
from variant_bench import VariantBench  # noqa: E402

JEMALLOC = ("malloc", "free", "calloc", "realloc", "aligned_alloc")
CATEGORIES = [
    ("secret scan", lambda s, d: "re2::" in s or "secret" in s.lower()),
    ("audit chain", lambda s, d: d.startswith("libcrypto") or any(
        x in s for x in ("RowEncoding", "request_values", "append_pg_text", "sha256", "SHA256", "link_sha"))),
    ("jemalloc", lambda s, d: d.startswith("libjemalloc") or s.startswith(("je_", "operator new", "operator delete"))
     or s in JEMALLOC),
    ("sqlite", lambda s, d: d.startswith("libsqlite")),
    ("kernel", lambda s, d: d.startswith("[kernel")),
    ("libc", lambda s, d: d.startswith("libc")),
    ("netbox other", lambda s, d: d.startswith("netbox")),
    ("other", lambda s, d: True),
]


def samples(data):
    """symbol -> samples, category -> samples of one perf.data."""
    out = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "dso,sym", "-F",
                          "sample,dso,sym", "--stdio", "-g", "none"], capture_output=True, text=True).stdout
    syms, cats = collections.Counter(), collections.Counter()
    for line in out.splitlines():
        p = line.split(None, 2)
        if line.startswith("#") or len(p) < 3 or not p[0].isdigit():
            continue
        n, dso, sym = int(p[0]), p[1], p[2].strip()
        sym = sym[4:] if sym[:4] in ("[.] ", "[k] ") else sym
        syms[sym] += n
        cats[next(name for name, f in CATEGORIES if f(sym, dso))] += n
    return syms, cats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--netbox", action="append", required=True, help="LABEL=PATH; repeat")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--keep", help="directory for the perf.data files (default: discarded)")
    a = ap.parse_args()
    binaries = dict(spec.split("=", 1) for spec in a.netbox)
    keep = a.keep or tempfile.mkdtemp(prefix="b1prof-")
    os.makedirs(keep, exist_ok=True)
    b = VariantBench(argparse.Namespace(smoke=False, rounds=1, duration=a.duration, netbox=None, client=None,
                                        writer_bench=None))
    per = {k: collections.Counter() for k in binaries}
    try:
        b.raise_fd_limit()
        b.start_upstream()
        b.write_wrk_scripts()
        proxies = {}
        for label, path in binaries.items():
            b.netbox = path
            proxies[label] = b.start_netbox_with(f"prof-{label}", [])
            b.wrk(proxies[label][0], 10, close=False)  # warm up
        for rnd in range(a.rounds):
            for label in binaries:
                data = os.path.join(keep, f"r{rnd}-{label}.data")
                perf = subprocess.Popen(["perf", "record", "-F", "2000", "-g", "-p", str(proxies[label][2].pid), "-o",
                                         data], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                r = b.wrk(proxies[label][0], 50, close=False)
                perf.send_signal(2)
                perf.wait()
                syms, cats = samples(data)
                us = 500 / r["requests"]
                for s, n in syms.items():
                    per[label][s] += n * us / a.rounds
                bench.log(f"round {rnd + 1} {label}: {r['rps']:.0f} req/s, {sum(cats.values()) * us:.1f} us/req sampled "
                          f"(load {os.getloadavg()[0]:.2f}): " +
                          ", ".join(f"{c} {cats[c] * us:.2f}" for c, _ in CATEGORIES))
    finally:
        b.stop_all()
        shutil.rmtree(b.tmp, ignore_errors=True)
        if not a.keep:
            shutil.rmtree(keep, ignore_errors=True)
    first, second = list(binaries)[:2]
    x, y = per[first], per[second]
    rows = sorted(((y[s] - x[s], s) for s in set(x) | set(y)), reverse=True)
    print(f"us/request, {second} minus {first} (mean of {a.rounds} rounds):")
    for row in rows[:25] + [None] + rows[-10:]:
        if row is None:
            print("  ...")
            continue
        d, s = row
        print(f"  {d:+.3f}  {first} {x[s]:.3f}  {second} {y[s]:.3f}  {s[:110]}")


if __name__ == "__main__":
    sys.exit(main())
