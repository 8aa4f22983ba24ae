#!/usr/bin/env python3
"""Turns bench.py's results.json into the report: every target with its measured ratio
and met / not met (printed), and for a full run tests/bench/RESULTS.md plus a PNG plot.

Anything in an existing RESULTS.md after the ANALYSIS_MARKER line (the hand-written
profile notes) is kept when the file is regenerated.
"""
import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import time

ANALYSIS_MARKER = "<!-- analysis below is written by hand and kept when the harness rewrites this file -->"

NAMES = {"direct": "direct (no proxy)", "nginx": "nginx reverse proxy", "squid": "squid",
         "tinyproxy": "tinyproxy", "netbox": "netbox", "bwrap": "bwrap --unshare-net",
         "unshare": "unshare -n"}


def rerun_lines(f):
    """Benchmarks measured again alone after the run (facts["<bench>_rerun"])."""
    out = []
    for key in sorted(k for k in f if k.endswith("_rerun")):
        r = f[key]
        load = ", ".join(f"{x:.2f}" for x in r.get("load_before", []))
        out.append(f"- {key[:-6].upper()} measured again alone: {r.get('started', '?')}, netbox commit "
                   f"{r.get('commit', '?')}, load before {load} ({r.get('note', '')})")
    return out


def med(results, bench, contender, param, metric):
    for r in results:
        if (r["bench"], r["contender"], str(r["param"]), r["metric"]) == (bench, contender, str(param), metric):
            return statistics.median(r["values"])
    return float("nan")


def values(results, bench, contender, param, metric):
    for r in results:
        if (r["bench"], r["contender"], str(r["param"]), r["metric"]) == (bench, contender, str(param), metric):
            return r["values"]
    return []


def targets(data):
    res = data["results"]
    f = data["facts"]
    t = []

    def ratio(label, num, den, op, bound, unit="×"):
        r = num / den if den and not math.isnan(den) else float("nan")
        met = (r >= bound) if op == ">=" else (r <= bound)
        t.append({"target": label, "measured": f"{r:.2f}{unit}", "met": bool(met and not math.isnan(r))})

    for c in (50, 500):
        ratio(f"B1 keep-alive c={c}: netbox req/s ≥ 0.9× nginx reverse proxy",
              med(res, "B1", "netbox", c, "rps"), med(res, "B1", "nginx", c, "rps"), ">=", 0.9)
        ratio(f"B1 keep-alive c={c}: netbox req/s ≥ 3× squid",
              med(res, "B1", "netbox", c, "rps"), med(res, "B1", "squid", c, "rps"), ">=", 3)
        ratio(f"B1 keep-alive c={c}: netbox p99 latency ≤ 1.5× nginx reverse proxy",
              med(res, "B1", "netbox", c, "p99_ms"), med(res, "B1", "nginx", c, "p99_ms"), "<=", 1.5)
    ratio("B2 Connection: close: netbox req/s ≥ 3× squid",
          med(res, "B2", "netbox", 50, "rps"), med(res, "B2", "squid", 50, "rps"), ">=", 3)
    for d in ("down", "up"):
        ratio(f"B3 bulk {d} through one tunnel ≥ 0.9× direct",
              med(res, "B3bulk", "netbox", d, "gbit_s"), med(res, "B3bulk", "direct", d, "gbit_s"), ">=", 0.9)
    ratio("B3 tunnel set-up rate ≥ 3× squid",
          med(res, "B3setup", "netbox", 50, "rate"), med(res, "B3setup", "squid", 50, "rate"), ">=", 3)
    b4 = [r for r in res if r["bench"] == "B4" and r["contender"] == "netbox" and r["metric"] == "kib_per_tunnel"]
    if b4:
        v = statistics.median(b4[0]["values"])
        t.append({"target": f"B4 RSS per idle tunnel ({b4[0]['param']} tunnels) ≤ 16 KiB",
                  "measured": f"{v:.2f} KiB", "met": v <= 16})
    w = med(res, "B5writer", "netbox", 2, "rows_per_s")
    t.append({"target": "B5 audit store sustains ≥ 100,000 rows/s", "measured": f"{w:,.0f} rows/s",
              "met": w >= 100000})
    lost = sum(values(res, "B5", "netbox", 50, "lost")) + sum(values(res, "B5writer", "netbox", 2, "lost"))
    t.append({"target": "B5 no audit row lost (row count == requests sent)", "measured": f"{lost} lost",
              "met": lost == 0})
    integ = [f.get("netbox_integrity", "?")] + f.get("writer_integrity", [])
    t.append({"target": "B5 PRAGMA integrity_check ok", "measured": ", ".join(sorted(set(integ))),
              "met": all(i == "ok" for i in integ)})
    runs = next((r["param"] for r in res if r["bench"] == "B6"), 0)
    ratio("B6 launch median ≤ 2× bwrap's", med(res, "B6", "netbox", runs, "median_ms"),
          med(res, "B6", "bwrap", runs, "median_ms"), "<=", 2)
    if any(r["bench"] == "B6" and r["contender"] == "netbox-sandbox" for r in res):
        ratio("B6 sandboxed launch (--memory 1G --pids 256) median ≤ 2× bwrap --unshare-all's",
              med(res, "B6", "netbox-sandbox", runs, "median_ms"), med(res, "B6", "bwrap-sandbox", runs, "median_ms"),
              "<=", 2)
    c = next((r["param"] for r in res if r["bench"] == "B6concurrent"), None)
    if c is not None:
        p99 = med(res, "B6concurrent", "netbox", c, "p99_ms")
        t.append({"target": f"B6 {c} launches at once: p99 ≤ 50 ms", "measured": f"{p99:.1f} ms", "met": p99 <= 50})
    if any(r["bench"] == "B6attach" for r in res):
        rate = med(res, "B6attach", "netbox", 8, "agents_per_s")
        t.append({"target": "B6 a shared proxy attaches ≥ 100 agents/s", "measured": f"{rate:.1f} agents/s",
                  "met": rate >= 100})
    return t


BENCH_TITLES = {
    "B1": "B1 keep-alive, ~100-byte responses (wrk, absolute-form targets)",
    "B2": "B2 Connection: close (wrk, 50 connections)",
    "B3setup": "B3 CONNECT tunnel set-up, new tunnel per request (bench_client tunnels, 50 workers)",
    "B3bulk": "B3 bulk transfer through one tunnel vs direct (bench_client bulk)",
    "B4": "B4 RSS per idle tunnel (bench_client idle)",
    "B5": "B5 audit rows through the proxy: exact request count (bench_client http, 50 connections)",
    "B5writer": "B5 audit store alone: insert + complete as fast as 2 producers can (audit_writer_bench)",
    "B6": "B6 launch wall time (hyperfine -N)",
    "B6concurrent": "B6 launches started at once, each timed from its start to its exit",
    "B6attach": "B6 launches through one shared proxy, 8 at a time (--proxy-control)",
    "B6churn": "B6 sequential launches through one shared proxy: its descriptors and RSS after vs before",
}


def table(data):
    lines = []
    res = data["results"]
    for bench in BENCH_TITLES:
        rows = [r for r in res if r["bench"] == bench]
        if not rows:
            continue
        lines += [f"### {BENCH_TITLES[bench]}", "",
                  "| contender | param | metric | median | min | max | spread | rounds |",
                  "|---|---|---|---:|---:|---:|---:|---:|"]
        for r in rows:
            v = r["values"]
            m = statistics.median(v)
            spread = (max(v) - min(v)) / m * 100 if m else 0
            lines.append(f"| {NAMES.get(r['contender'], r['contender'])} | {r['param']} | {r['metric']} | "
                         f"{m:,.2f} | {min(v):,.2f} | {max(v):,.2f} | {spread:.0f}% | {len(v)} |")
        lines.append("")
    return lines


def cpu_table(data):
    """The proxies' own CPU per request side by side: the figure behind every rate target on
    2 shared cores, and one that a busy machine hardly moves."""
    res = data["results"]
    cols = [("B1", 50, "cpu_us_per_req", "B1 c=50"), ("B1", 500, "cpu_us_per_req", "B1 c=500"),
            ("B2", 50, "cpu_us_per_req", "B2 close"), ("B3setup", 50, "cpu_us_per_tunnel", "B3 tunnel")]
    if not any(values(res, b, c, p, m) for b, p, m, _ in cols for c in ("netbox",)):
        return []
    lines = ["| proxy | " + " | ".join(label for *_, label in cols) + " |", "|---|" + "---:|" * len(cols)]
    for c in ("nginx", "squid", "tinyproxy", "netbox"):
        cells = []
        for b, p, m, _ in cols:
            v = values(res, b, c, p, m)
            cells.append(f"{statistics.median(v):,.1f}" if v else "–")
        lines.append(f"| {NAMES.get(c, c)} | " + " | ".join(cells) + " |")
    return ["## CPU per request", "",
            "CPU time (user + system, all threads and worker processes) each proxy used during the "
            "measurement, divided by the requests (or tunnels) it served; medians of the rounds, in µs. "
            "Lower is better; the kernel's loopback TCP work done in the proxy's context is included.", ""] + \
        lines + [""]


def plot(data, png):
    res = data["results"]
    tmp = png + ".d"
    os.makedirs(tmp, exist_ok=True)
    panels = [("B1 keep-alive c=50 (req/s)", "B1", 50, "rps", ["direct", "nginx", "squid", "tinyproxy", "netbox"]),
              ("B1 keep-alive c=500 (req/s)", "B1", 500, "rps", ["direct", "nginx", "squid", "tinyproxy", "netbox"]),
              ("B2 Connection: close (req/s)", "B2", 50, "rps", ["direct", "nginx", "squid", "tinyproxy", "netbox"]),
              ("B3 tunnel set-up (tunnels/s)", "B3setup", 50, "rate", ["direct", "squid", "tinyproxy", "netbox"]),
              ("B3 bulk download (Gbit/s)", "B3bulk", "down", "gbit_s", ["direct", "squid", "tinyproxy", "netbox"]),
              ("B6 launch (ms, lower is better)", "B6", None, "median_ms",
               ["unshare", "bwrap", "bwrap-sandbox", "netbox-nocgroup", "netbox", "netbox-sandbox"])]
    script = ["set terminal png size 1500,900 font ',10'", f"set output '{png}'",
              "set multiplot layout 2,3 title 'netbox benchmarks (median of rounds; bars: min..max)'",
              "set style fill solid 0.6", "set boxwidth 0.6", "set yrange [0:*]", "unset key",
              "set xtics rotate by -25"]
    for i, (title, bench, param, metric, cs) in enumerate(panels):
        dat = os.path.join(tmp, f"p{i}.dat")
        with open(dat, "w") as f:
            for c in cs:
                p = param if param is not None else next((r["param"] for r in res if r["bench"] == bench), 0)
                v = values(res, bench, c, p, metric)
                if v:
                    f.write(f'"{c}" {statistics.median(v)} {min(v)} {max(v)}\n')
        script += [f"set title '{title}'",
                   f"plot '{dat}' using 0:2:xtic(1) with boxes lc rgb '#4a7ebb', "
                   f"'' using 0:2:3:4 with yerrorbars lc rgb 'black' pt 0"]
    script.append("unset multiplot")
    gp = os.path.join(tmp, "plot.gp")
    with open(gp, "w") as f:
        f.write("\n".join(script) + "\n")
    subprocess.run(["gnuplot", gp], check=True)
    for n in os.listdir(tmp):
        os.remove(os.path.join(tmp, n))
    os.rmdir(tmp)


def machine(data):
    def sh(cmd):
        try:
            return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=10).stdout.strip()
        except Exception:
            return "?"
    f = data["facts"]
    cpu = sh("lscpu | sed -n 's/^Model name: *//p'")
    mem = sh("free -h | awk '/Mem:/{print $2}'")
    distro = sh(". /etc/os-release && echo $PRETTY_NAME")
    commit = f.get("commit") or sh(f"git -C {os.path.dirname(os.path.abspath(__file__))} describe --always --dirty")
    kernel = f.get("kernel") or platform.release()
    versions = "; ".join(sh(c) for c in ("nginx -v 2>&1", "squid -v | head -1", "tinyproxy -v",
                                         "wrk -v 2>&1 | head -1 | cut -d' ' -f1-2", "bwrap --version",
                                         "hyperfine --version"))
    load_b = ", ".join(f"{x:.2f}" for x in f["load_before"])
    load_a = ", ".join(f"{x:.2f}" for x in f["load_after"])
    return [f"- Run started: {f.get('started') or time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
            f"- CPU: {cpu}, {os.cpu_count()} logical cores; memory {mem}; kernel {kernel}; {distro}",
            f"- Load average (1/5/15 min) before the run: {load_b}; after: {load_a} "
            f"(the machine is shared with other engineers' builds)",
            f"- netbox commit {commit}, Release build",
            f"- {versions}",
            f"- Rounds: {data['rounds']} (contenders interleaved, order shuffled per round), "
            f"{data['duration_s']} s per load measurement, bulk {data['bulk_bytes'] >> 20} MiB each way; "
            f"harness wall time {f['seconds'] / 60:.1f} min"] + rerun_lines(f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--markdown", help="write RESULTS.md here (full runs)")
    ap.add_argument("--png", help="write the plot here")
    ap.add_argument("--require-clean", action="store_true",
                    help="exit 1 if netbox had any request error, lost row or failed integrity check")
    a = ap.parse_args()
    with open(a.results) as f:
        data = json.load(f)
    ts = targets(data)
    print("\n== targets ==" if not data["smoke"] else
          "\n== targets (smoke run: far too short to judge; for information only) ==")
    for t in ts:
        print(f"{'MET    ' if t['met'] else 'NOT MET'}  {t['target']}: {t['measured']}")
    print("\n".join(table(data)))
    if a.png:
        plot(data, a.png)
    if a.require_clean:
        # The smoke run cannot judge speed, but it can catch a harness or netbox that broke:
        # every netbox request answered without error, every row written, the database sound.
        res = data["results"]
        bad = [f"{r['bench']} {r['metric']}={v}" for r in res if r["contender"] == "netbox"
               and r["metric"] in ("errors", "lost", "client_errors") for v in r["values"] if v]
        bad += [f"B4 opened {v} of {r['param']}" for r in res if r["bench"] == "B4" and r["contender"] == "netbox"
                and r["metric"] == "opened" for v in r["values"] if v != r["param"]]
        integ = [data["facts"].get("netbox_integrity")] + data["facts"].get("writer_integrity", [])
        bad += [f"integrity_check {i}" for i in integ if i != "ok"]
        if bad:
            print("bench smoke FAILED: " + "; ".join(bad))
            return 1
    if not a.markdown:
        return 0
    kept = ""
    if os.path.exists(a.markdown):
        with open(a.markdown) as f:
            old = f.read()
        if ANALYSIS_MARKER in old:
            kept = old.split(ANALYSIS_MARKER, 1)[1]
    f = data["facts"]
    md = ["# netbox benchmark results", "",
          "Generated by `bash scripts/bench.sh` (tests/bench/bench.py, tests/bench/report.py). "
          "Ratios compare medians from the same run.", "", "## Machine", ""] + machine(data) + [
          "", "## Targets", "", "| target | measured | |", "|---|---:|---|"]
    md += [f"| {t['target']} | {t['measured']} | {'met' if t['met'] else '**not met**'} |" for t in ts]
    md += ["", f"![benchmark plot]({os.path.basename(a.png)})" if a.png else "", "",
           ] + cpu_table(data) + [
           "## Measurements", "",
           f"netbox audit database after the run: {f.get('netbox_rows', '?'):,} rows, "
           f"`PRAGMA integrity_check` = {f.get('netbox_integrity', '?')}, "
           f"{f.get('netbox_incomplete', '?')} rows left without status or error. "
           f"Writer queue capacity {f.get('queue_capacity', '?')}.", ""]
    md += table(data)
    md += ["## Commands", "",
           "- B1: `wrk -t2 -c{50,500} -d5s --timeout 10s -s ka.lua http://127.0.0.1:PROXY/` where ka.lua sets "
           "`wrk.path = \"http://127.0.0.1:UPSTREAM/small\"` (absolute form) and prints p50/p99 in `done()`.",
           "- B2: the same with `wrk.headers[\"Connection\"] = \"close\"`, 50 connections.",
           "- B3: `bench_client tunnels --proxy P --target T --conns 50 --seconds 5` (CONNECT, 200, GET /small, "
           "close; direct = connect, GET, close); `bench_client bulk --direction down|up --bytes 1073741824` "
           "(GET of a 1 GiB file / POST of 1 GiB to nginx, through one tunnel or direct).",
           "- B4: a fresh proxy per measurement; `bench_client idle --count N` opens tunnels to the nginx "
           "upstream and holds them; RSS (VmRSS of the process tree) after minus before, divided by the tunnels "
           f"opened. N = 10,000, or fewer when the fd hard limit is lower (it was {f.get('nofile', '?')} here and "
           "cannot be raised without CAP_SYS_RESOURCE; a proxy needs two fds per tunnel).",
           "- B5: `bench_client http --requests 20000 --conns 50` through netbox (then `count(*)` of new rows "
           "must equal the requests answered; rows/s = rows / time until the last row is committed; backlog = answered − "
           "committed, sampled every 250 ms); `audit_writer_bench DB 200000 2`.",
           "- B6: `hyperfine -N --warmup 3 --runs 50` for `netbox launch --audit-db DB -- /bin/true` (its "
           "defaults: read-only root, workdir, cgroup limits), the same with `--memory unlimited --pids unlimited` "
           "(no cgroup layer) and with `--memory 1G --pids 256`, `bwrap --unshare-net --dev-bind / / /bin/true`, "
           "`bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --tmpfs /var/tmp --bind CWD CWD --chdir CWD /bin/true`, `unshare -n /bin/true`.",
           "- B6 at once: 50 `netbox launch --quiet --audit-db DB -- /bin/true` started together (one store), each "
           "timed from its own start to its exit (p50, p99). B6 shared proxy: `netbox proxy --control S --threads 2`, "
           "5 warm-up launches, then 400 `netbox launch --proxy-control S -- /bin/true`, 8 running at any time: "
           "agents/s, and the proxy's CPU per agent. B6 churn (once): 30 warm-up launches through a shared proxy, "
           "then 1,000 one after the other; the proxy's descriptors and RSS 1 s after the last minus 1 s before the first.",
           "- Contenders: nginx upstream (1 worker, sendfile, keep-alive); nginx reverse proxy (workers auto, "
           "upstream keepalive 256, access log buffered); squid (`-N`, cache off, allow list `dst 127.0.0.1/32` "
           "+ port, access log); tinyproxy (`-d`, filter `^127\\.0\\.0\\.1$` default deny, ConnectPort, log "
           "level Connect); netbox (`netbox proxy`, policy allowing 127.0.0.1 on the upstream port, audit on, "
           "default threads).", "", ANALYSIS_MARKER]
    with open(a.markdown, "w") as out:
        out.write("\n".join(md) + (kept if kept else "\n"))
    print(f"wrote {a.markdown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
