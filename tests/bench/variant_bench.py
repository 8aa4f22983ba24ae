"""Variants of one netbox proxy measured side by side (for a feature's cost): each variant is a
`netbox proxy` with its own extra flags and policy keys, and B1 (wrk keep-alive, ~100-byte
answers) runs through each, rounds interleaved with the order rotated, so a busy machine
weighs on every variant alike. The proxy's own CPU per request is the figure that compares
variants on a loaded machine (bench.py, record_cpu); req/s and p99 are kept beside it.
Used by export_bench.py and guardian_bench.py.
"""
import argparse
import json
import os
import resource
import shutil
import statistics

import bench


class VariantBench(bench.Bench):
    def raise_fd_limit(self):
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        self.nofile = 1048576 if hard == resource.RLIM_INFINITY else hard
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, hard))

    def start_netbox_with(self, name, extra, policy_keys=None):
        """A netbox proxy allowing the upstream, with `policy_keys` merged into its policy
        (limits merged key by key). Returns (port, admin port, process, audit db)."""
        port, admin = bench.free_port(), bench.free_port()
        policy = {"version": 1, "allow": ["127.0.0.1"], "ports": [self.up], "internal": {"allow": ["127.0.0.1/32"]},
                  "limits": {"max_connections": 100000, "max_connections_per_agent": 100000,
                             "max_connections_per_host": 100000, "idle_timeout_ms": 600000}}
        for key, value in (policy_keys or {}).items():
            if key == "limits":
                policy["limits"].update(value)
            else:
                policy[key] = value
        path = self.write(f"{name}-policy.json", json.dumps(policy, indent=2))
        db = os.path.join(self.tmp, f"{name}-audit.db")
        p = self.spawn(name, [self.netbox, "proxy", "--policy", path, "--listen", f"127.0.0.1:{port}",
                              "--audit-db", db, "--admin", f"127.0.0.1:{admin}", "--admin-insecure"] + extra)
        bench.wait_port(port, p, name)
        bench.wait_port(admin, p, name + " admin")
        return port, admin, p, db

    def run_b1(self, proxies, rounds):
        """B1 c=50 through each of `proxies` (name -> start_netbox_with's tuple), `rounds`
        times. Returns (medians, every value, load before, load after)."""
        self.pids = {k: v[2].pid for k, v in proxies.items()}
        for port, *_ in proxies.values():
            self.wrk(port, 10, close=False)  # warm up
        res = {k: {"rps": [], "p99_ms": [], "cpu_us": []} for k in proxies}
        load_before = os.getloadavg()
        for rnd in range(rounds):
            order = list(proxies)
            order = order[rnd % len(order):] + order[:rnd % len(order)]  # rotate who goes first
            for k in order:
                cpu0 = self.proxy_cpu(k)
                r = self.wrk(proxies[k][0], 50, close=False)
                res[k]["rps"].append(r["rps"])
                res[k]["p99_ms"].append(r["p99_us"] / 1000)
                res[k]["cpu_us"].append((self.proxy_cpu(k) - cpu0) * 1e6 / r["requests"])
                if r["errors"] + r["status_errors"]:
                    raise RuntimeError(f"{k}: {r['errors']} errors, {r['status_errors']} non-2xx answers")
                bench.log(f"round {rnd + 1} {k}: B1 {r['rps']:.0f} req/s p99 {r['p99_us'] / 1000:.2f} ms, "
                          f"{res[k]['cpu_us'][-1]:.1f} us CPU/req (load {os.getloadavg()[0]:.2f})")
        med = {k: {m: statistics.median(v) for m, v in d.items()} for k, d in res.items()}
        return med, res, load_before, os.getloadavg()


def bench_main(cls):
    """The command line every variant bench takes: --netbox, --client, --rounds, --duration."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--netbox", required=True)
    ap.add_argument("--client", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    a = ap.parse_args()
    args = argparse.Namespace(smoke=False, rounds=a.rounds, duration=a.duration, netbox=a.netbox, client=a.client,
                              writer_bench=None)
    b = cls(args)
    try:
        b.main(a.rounds)
    finally:
        b.stop_all()
        shutil.rmtree(b.tmp, ignore_errors=True)
