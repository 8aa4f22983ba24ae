#!/usr/bin/env python3
"""The SIEM export's cost (issue 26 item 3): B1 (wrk keep-alive, c=50, ~100-byte answers)
through three netbox proxies in the same run: without --export, with --export
ocsf-jsonl:FILE, and with that and --export otlp-http to a receiver on loopback (python's
http.server, tests/integration/proxy/otlp_receiver.py), rounds interleaved. Reports medians
of req/s, p99 and the proxy's CPU per request, the records exported and dropped, and the
load average; progress lines first, the result as JSON on the last line.

usage: export_bench.py --netbox build/netbox --client build/tests/bench/bench_client [--rounds 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  the contenders and measurements of bench.py


class ExportBench(bench.Bench):
    def start_netbox_with(self, name, extra):
        port, admin = bench.free_port(), bench.free_port()
        policy = self.write(f"{name}-policy.json", json.dumps({
            "version": 1, "allow": ["127.0.0.1"], "ports": [self.up], "internal": {"allow": ["127.0.0.1/32"]},
            "limits": {"max_connections": 100000, "max_connections_per_agent": 100000,
                       "max_connections_per_host": 100000, "idle_timeout_ms": 600000}}))
        db = os.path.join(self.tmp, f"{name}-audit.db")
        p = self.spawn(name, [self.netbox, "proxy", "--policy", policy, "--listen", f"127.0.0.1:{port}",
                              "--audit-db", db, "--admin", f"127.0.0.1:{admin}", "--admin-insecure"] + extra)
        bench.wait_port(port, p, name)
        bench.wait_port(admin, p, name + " admin")
        return port, admin, p, db

    def export_counts(self, admin):
        text = urllib.request.urlopen(f"http://127.0.0.1:{admin}/metrics", timeout=10).read().decode()
        out = {}
        for line in text.splitlines():
            if line.startswith("netbox_export_"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def main(self, rounds):
        import resource
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        self.nofile = 1048576 if hard == resource.RLIM_INFINITY else hard
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, hard))
        self.start_upstream()
        self.write_wrk_scripts()
        rport = bench.free_port()
        receiver = self.spawn("otlp", [sys.executable, "-B", os.path.join(os.path.dirname(__file__), "..",
                                       "integration", "proxy", "otlp_receiver.py"), str(rport),
                                       os.path.join(self.tmp, "otlp.jsonl")])
        bench.wait_port(rport, receiver, "otlp receiver")
        jsonl = os.path.join(self.tmp, "export.jsonl")
        both = os.path.join(self.tmp, "export-both.jsonl")
        proxies = {
            "off": self.start_netbox_with("netbox-off", []),
            "jsonl": self.start_netbox_with("netbox-jsonl", ["--export", f"ocsf-jsonl:{jsonl}"]),
            "jsonl+otlp": self.start_netbox_with("netbox-both", ["--export", f"ocsf-jsonl:{both}",
                                                                  "--export", f"otlp-http://127.0.0.1:{rport}"]),
        }
        self.pids = {k: v[2].pid for k, v in proxies.items()}
        for port, *_ in proxies.values():
            self.wrk(port, 10, close=False)  # warm up
        res = {k: {"rps": [], "p99_ms": [], "cpu_us": []} for k in proxies}
        load_before = os.getloadavg()
        for rnd in range(rounds):
            order = list(proxies)
            order = order[rnd % len(order):] + order[:rnd % len(order)]  # rotate who goes first
            for k in order:
                port = proxies[k][0]
                cpu0 = self.proxy_cpu(k)
                r = self.wrk(port, 50, close=False)
                res[k]["rps"].append(r["rps"])
                res[k]["p99_ms"].append(r["p99_us"] / 1000)
                res[k]["cpu_us"].append((self.proxy_cpu(k) - cpu0) * 1e6 / r["requests"])
                bench.log(f"round {rnd + 1} {k}: B1 {r['rps']:.0f} req/s p99 {r['p99_us'] / 1000:.2f} ms, "
                          f"{res[k]['cpu_us'][-1]:.1f} us CPU/req (load {os.getloadavg()[0]:.2f})")
        time.sleep(3)  # the export thread and the receiver catch up
        counts = {k: self.export_counts(v[1]) for k, v in proxies.items() if k != "off"}
        load_after = os.getloadavg()
        med = {k: {m: statistics.median(v) for m, v in d.items()} for k, d in res.items()}
        print(json.dumps({"rounds": rounds, "duration_s": self.dur, "load_before": load_before,
                          "load_after": load_after, "median": med, "all": res, "export_metrics": counts}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--netbox", required=True)
    ap.add_argument("--client", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    a = ap.parse_args()
    args = argparse.Namespace(smoke=False, rounds=a.rounds, duration=a.duration, netbox=a.netbox, client=a.client,
                              writer_bench=None)
    b = ExportBench(args)
    try:
        b.main(a.rounds)
    finally:
        b.stop_all()
        import shutil
        shutil.rmtree(b.tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
