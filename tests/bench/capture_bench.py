#!/usr/bin/env python3
"""Captured plain HTTP against the proxy variables' path on the same upstream (issue 15).

Inside one `netbox launch` (embedded proxy, --network transparent), wrk sends keep-alive
GETs of a 100-byte file on an nginx upstream on 127.0.0.1, alternately:
  captured  wrk to http://allowed.test:PORT/small, ignoring the proxy variables: the DNS
            view answers a synthetic address, nftables captures the connection, netbox
            reads the request line and runs its request loop (a row per request);
  proxied   wrk to $http_proxy with absolute-form targets (the path every client that
            honours the proxy variables takes; a row per request as well).
Per mode: req/s and netbox's own CPU per request (user + system of the launch process,
which hosts the embedded proxy; the agent's processes are its children and not counted),
the median over the rounds. Run as root:
  sudo python3 tests/bench/capture_bench.py [--netbox build/netbox] [--rounds 3] [--duration 5]
TLS is not measured here: wrk cannot speak CONNECT, and a captured TLS connection to a
host that is not inspected is the same Tunnel as a CONNECT's.
"""
import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def own_cpu_seconds(pid):
    """User + system CPU of one process (all its threads), not of its children."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--netbox", default="build/netbox")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--conns", type=int, default=50)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("capture_bench: run as root (netbox launch)")
    netbox = os.path.abspath(args.netbox)
    tmp = tempfile.mkdtemp(prefix="netbox-capture-bench-")
    os.chmod(tmp, 0o755)
    procs = []
    try:
        www = os.path.join(tmp, "www")
        os.mkdir(www)
        with open(os.path.join(www, "small"), "w") as f:
            f.write("x" * 100)
        up = free_port()
        conf = os.path.join(tmp, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""daemon off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  keepalive_requests 100000000;
  client_body_temp_path {tmp}/b; proxy_temp_path {tmp}/p; fastcgi_temp_path {tmp}/f;
  uwsgi_temp_path {tmp}/u; scgi_temp_path {tmp}/s;
  server {{ listen 127.0.0.1:{up}; root {www}; }}
}}
""")
        procs.append(subprocess.Popen(["nginx", "-c", conf, "-p", tmp], stderr=subprocess.DEVNULL))
        for _ in range(100):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", up)) == 0:
                    break
            time.sleep(0.05)
        # Written by the agent into its own /tmp (the host's is not shown to it).
        lua = "/tmp/absolute.lua"
        write_lua = (f"printf '%s\\n' 'wrk.path = \"http://allowed.test:{up}/small\"' "
                     f"'wrk.headers[\"Host\"] = \"allowed.test:{up}\"' > {lua}")
        policy = os.path.join(tmp, "policy.json")
        with open(policy, "w") as f:
            f.write(f'{{"version": 1, "allow": ["allowed.test"], "ports": [{up}], '
                    f'"internal": {{"allow": ["127.0.0.1/32"]}}, "resolve": {{"allowed.test": ["127.0.0.1"]}}}}')
        wrk = f"wrk -t2 -c{args.conns} -d{args.duration}s --timeout 10s"
        steps = []
        for _ in range(args.rounds):
            steps.append(f"echo start captured; sleep 0.3; {wrk} http://allowed.test:{up}/small; echo end captured")
            steps.append(f"echo start proxied; sleep 0.3; {wrk} -s {lua} \"$http_proxy\"; echo end proxied")
        agent = write_lua + "; " + "; sleep 0.3; ".join(steps)
        launch = subprocess.Popen([netbox, "launch", "-q", "--policy", policy, "--audit-db",
                                   os.path.join(tmp, "audit.db"), "--", "sh", "-c", agent],
                                  stdout=subprocess.PIPE, text=True)
        results = {"captured": [], "proxied": []}
        mode, cpu0 = None, 0.0
        for line in launch.stdout:
            line = line.strip()
            if line.startswith("start "):
                mode, cpu0 = line.split()[1], own_cpu_seconds(launch.pid)
            elif line.startswith("Requests/sec:") and mode:
                rps = float(line.split()[1])
                results[mode].append({"rps": rps, "cpu": own_cpu_seconds(launch.pid) - cpu0})
            elif line.startswith("Requests:") or "requests in" in line:
                if mode and "requests in" in line:
                    results.setdefault(mode + "_n", []).append(int(line.split()[0]))
            elif "Non-2xx" in line or "Socket errors" in line:
                print(f"capture_bench: {mode}: {line}", file=sys.stderr)
        launch.wait()
        if launch.returncode != 0 or not results["captured"] or not results["proxied"]:
            sys.exit(f"capture_bench: the launch failed (exit {launch.returncode})")
        summary = {}
        for m in ("captured", "proxied"):
            rps = statistics.median(r["rps"] for r in results[m])
            per = [r["cpu"] * 1e6 / n for r, n in zip(results[m], results[m + "_n"])]
            summary[m] = (rps, statistics.median(per))
            print(f"{m:9s} {rps:10.0f} req/s  {summary[m][1]:6.1f} µs netbox CPU per request  "
                  f"(rounds: {', '.join('%.0f' % r['rps'] for r in results[m])})")
        print(f"captured / proxied: {summary['captured'][0] / summary['proxied'][0]:.2f}× req/s, "
              f"{summary['captured'][1] / summary['proxied'][1]:.2f}× CPU per request")
    finally:
        for p in procs:
            p.terminate()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
