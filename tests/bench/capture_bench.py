#!/usr/bin/env python3
"""Transparent capture against CONNECT on the same upstreams (issue 15's benchmark).

One nginx on the host serves a 100-byte file over plain HTTP and over TLS (a test CA's
leaf for plain.test; not inspected) on 127.0.0.1. Capture is per namespace, so every load
runs inside one `netbox launch` (embedded proxy, --network transparent), from
bench_client, in an order shuffled per round:
  captured  bench_client dials the address the DNS view answered for plain.test, ignoring
            the proxy variables; nftables hands the connection to the proxy, which maps it
            back to plain.test (plain HTTP: its request loop, a row per request; TLS: the
            ClientHello's SNI is checked, then a blind relay);
  connect   the same requests inside a CONNECT tunnel to plain.test through $http_proxy
            (one row per tunnel, a blind relay);
  proxied   (keep-alive plain HTTP only, for reference) absolute-form requests through
            $http_proxy: the same per-request work as the captured request loop.
Rounds are shuffled, a load's paths back to back in a random order (a pair sees the
same load from other work on a shared machine).
Loads: ka_http and ka_tls (keep-alive, `--conns` connections), and new_http and new_tls
(a new connection per request). Per load and path: req/s and netbox's CPU per request
(user + system of the launch process, which hosts the embedded proxy; the agent's
processes, bench_client included, are its children and not counted), the median over
the rounds, and the median of the rounds' captured/CONNECT ratios. Target (judged in
the full run only): captured within 10 % of CONNECT, in req/s and in CPU per request. Run as root:
  sudo python3 tests/bench/capture_bench.py [--build build] [--rounds 3] [--seconds 5]
--smoke: one round of 1 s on 8 connections; fails on any error, judges nothing.
--only LOAD:PATH[,LOAD:PATH...] (e.g. ka_tls:captured) runs only those, for profiling
with perf; each result is printed as it comes.
Only loopback and the launch's own namespace addresses are used.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import free_port, wait_port  # noqa: E402
from inspect_bench import make_certs, nginx_upstream  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
NAME = "plain.test"  # in the test leaf's names (inspect_bench.make_certs)
LOADS = {
    "ka_http": ("captured", "connect", "proxied"),
    "ka_tls": ("captured", "connect"),
    "new_http": ("captured", "connect"),
    "new_tls": ("captured", "connect"),
}
HUGE = 1_000_000_000  # `bench_client http` counts requests; --max-seconds bounds it


def own_cpu_seconds(pid):
    """User + system CPU of one process (all its threads), not of its children."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def client_argv(load, path, a):
    """The bench_client command (a shell fragment: $ip, $proxy, $P, $T are the agent's)."""
    n = f"--conns {a.conns}"
    direct = path == "captured"
    via = "" if direct else "--proxy $proxy "
    if load == "ka_http":
        target = "$ip:$P" if direct else f"{NAME}:$P"
        extra = "--connect 1 " if path == "connect" else ""
        return (f"$client http {via}{extra}--target {target} --name {NAME} {n} "
                f"--requests {HUGE} --max-seconds {a.seconds}")
    if load == "new_http":
        target = "$ip:$P" if direct else f"{NAME}:$P"
        return f"$client tunnels {via}--target {target} --name {NAME} {n} --seconds {a.seconds}"
    target = "$ip:$T" if direct else f"{NAME}:$T"
    per = " --per-conn 1" if load == "new_tls" else ""
    return f"$client https {via}--target {target} --name {NAME} {n} --seconds {a.seconds}{per}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build", help="build directory (netbox, tests/bench/bench_client)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--conns", type=int, default=50)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--only", help="LOAD:PATH[,...]: only these loads (for profiling)")
    a = ap.parse_args()
    if a.smoke:
        a.rounds, a.seconds, a.conns = 1, 1, 8
    steps = [(load, path) for load, paths in LOADS.items() for path in paths]
    if a.only:
        only = [tuple(o.split(":", 1)) for o in a.only.split(",")]
        for o in only:
            if o not in steps:
                print(f"capture_bench: --only: '{':'.join(o)}' is none of "
                      f"{', '.join(f'{lo}:{p}' for lo, p in steps)}", file=sys.stderr)
                sys.exit(2)
        steps = only
    if os.geteuid() != 0:
        sys.exit("capture_bench: run as root (netbox launch)")
    netbox = os.path.abspath(f"{a.build}/netbox")
    tmp = tempfile.mkdtemp(prefix="netbox-capture-bench-")
    os.chmod(tmp, 0o755)
    # The agent's workdir: its own folder, whatever the caller's (not the audit's). The
    # agent sees only it and the read-only host, without the host's /tmp (where a CI clone
    # and its build may live): bench_client runs from a copy in it.
    work = f"{tmp}/work"
    os.mkdir(work, 0o755)
    client = f"{work}/bench_client"
    shutil.copy2(os.path.abspath(f"{a.build}/tests/bench/bench_client"), client)
    nginx = None
    try:
        make_certs(tmp)
        http_port, tls_port = free_port(), free_port()
        nginx = subprocess.Popen(["nginx", "-c", nginx_upstream(tmp, http_port, tls_port), "-p", tmp],
                                 stderr=subprocess.DEVNULL)
        wait_port(http_port, nginx, "nginx upstream")
        wait_port(tls_port, nginx, "nginx TLS upstream")
        policy = f"{tmp}/policy.json"
        with open(policy, "w") as f:
            f.write(f'{{"version": 1, "allow": ["{NAME}"], "ports": [{http_port}, {tls_port}], '
                    f'"internal": {{"allow": ["127.0.0.1/32"]}}, "resolve": {{"{NAME}": ["127.0.0.1"]}}, '
                    # A connection closed by the client holds its cap until the proxy has
                    # closed both ends: a new connection per request on 50 connections can
                    # briefly exceed the default 64 per host, on either path.
                    f'"limits": {{"max_connections_per_host": 1024, "max_connections_per_agent": 1024}}}}')
        # The agent resolves the name once through the DNS view (the mapping lives while
        # it is used) and finds the proxy in its variables.
        agent = [
            "set -e",
            f"client={client} P={http_port} T={tls_port}",
            f"ip=$(getent ahostsv4 {NAME} | awk 'NR==1{{print $1}}')",
            'case "$ip" in 198.1[89].*) ;; *) echo "no synthetic address for the name: \'$ip\'" >&2; exit 1;; esac',
            'proxy=${http_proxy#http://}; proxy=${proxy%/}',
        ]
        order = []
        # Shuffled per round, but a load's paths run back to back: on a shared machine the
        # load of other work drifts within seconds, and a pair sees the same drift.
        for _ in range(a.rounds):
            loads = list(dict.fromkeys(lo for lo, _ in steps))
            random.shuffle(loads)
            for lo in loads:
                pair = [s for s in steps if s[0] == lo]
                random.shuffle(pair)
                order += pair
        for load, path in order:
            agent += [f"echo start {load}:{path}", "sleep 0.2", client_argv(load, path, a), "sleep 0.2"]
        print(f"capture_bench: load average before: {loadavg()}", flush=True)
        # The launch's log and bench_client's complaints are shown only if it fails.
        log = open(f"{tmp}/launch.log", "w+")
        launch = subprocess.Popen([netbox, "launch", "-q", "--policy", policy, "--audit-db", f"{tmp}/audit.db",
                                   "--", "sh", "-c", "\n".join(agent)], stdout=subprocess.PIPE, stderr=log,
                                  text=True, cwd=work)
        results = {s: [] for s in steps}
        step, cpu0 = None, 0.0
        for line in launch.stdout:
            line = line.strip()
            if line.startswith("start "):
                step, cpu0 = tuple(line.split()[1].split(":")), own_cpu_seconds(launch.pid)
            elif line.startswith("{") and step:
                r = json.loads(line)
                ops = r.get("done", r.get("ops", 0))
                rate = r.get("rps", r.get("rate", 0.0))
                cpu = own_cpu_seconds(launch.pid) - cpu0
                results[step].append((rate, cpu * 1e6 / ops if ops else float("inf")))
                if a.only:
                    print(f"{step[0]}:{step[1]}: {rate:.0f} req/s, {results[step][-1][1]:.1f} µs/req", flush=True)
        launch.wait()
        missing = [f"{lo}:{p}" for (lo, p), v in results.items() if len(v) != a.rounds]
        if launch.returncode != 0 or missing:
            log.seek(0)
            sys.stderr.write(log.read()[-8000:])
            sys.exit(f"capture_bench: the launch failed (exit {launch.returncode}; loads without a result: "
                     f"{', '.join(missing) or 'none'})")
        print(f"capture_bench: load average after: {loadavg()}")
        med = {s: (statistics.median(r for r, _ in v), statistics.median(c for _, c in v)) for s, v in results.items()}
        for s, v in results.items():
            print(f"{s[0]:9s} {s[1]:9s} {med[s][0]:9.0f} req/s {med[s][1]:7.1f} µs netbox CPU/req   "
                  f"(rounds: {', '.join('%.0f' % r for r, _ in v)})")
        if a.only:
            return
        print("captured / CONNECT, median of the rounds' ratios "
              "(target within 10 %: req/s ≥ 0.90×, CPU per request ≤ 1.10×):")
        for load in LOADS:
            cap, con = results[(load, "captured")], results[(load, "connect")]
            rps = statistics.median(c[0] / k[0] for c, k in zip(cap, con))
            cpu = statistics.median(c[1] / k[1] for c, k in zip(cap, con))
            verdict = "" if a.smoke else ("  met" if rps >= 0.9 and cpu <= 1.1 else "  NOT MET")
            print(f"  {load:9s} {rps:.2f}× req/s, {cpu:.2f}× CPU per request{verdict}")
        if a.smoke:
            print("capture_bench smoke ok (targets are only judged in the full run)")
    finally:
        if nginx:
            nginx.terminate()
            nginx.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
