#!/usr/bin/env python3
"""TLS inspection benchmark (issue 16), run by hand until bench.py runs it.

One nginx TLS upstream on loopback (a test CA's leaf for bench.test and plain.test), one
netbox proxy that inspects bench.test and tunnels plain.test blindly, in the same run:
- keep-alive HTTPS req/s and the proxy's CPU per request, inspected against the plain
  CONNECT tunnel to the same upstream (bench_client https: 50 connections, one TLS
  session each, GET /small);
- RSS per idle inspected connection (bench_client https-idle: N tunnels, TLS done and one
  request answered, then held), like B4;
- leaf minting (tls_mint_bench).
- squid ssl-bump (Debian's squid-openssl) on the same upstream: the same keep-alive load
  through its bump of every CONNECT, with a test CA of its own and the upstream's CA as
  its only trust anchor.
Only loopback is used; every wait is bounded.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import SMALL_BODY, cpu_seconds, free_port, rss_kib, squid_common, wait_port  # noqa: E402


def sh(*argv, **kw):
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kw)


def make_certs(tmp):
    sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
       "-subj", "/CN=bench upstream CA", "-keyout", f"{tmp}/up-ca.key", "-out", f"{tmp}/up-ca.pem",
       "-addext", "basicConstraints=critical,CA:true")
    sh("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=bench.test",
       "-keyout", f"{tmp}/up.key", "-out", f"{tmp}/up.csr")
    with open(f"{tmp}/up.ext", "w") as f:
        f.write("subjectAltName=DNS:bench.test,DNS:plain.test\n")
    sh("openssl", "x509", "-req", "-in", f"{tmp}/up.csr", "-CA", f"{tmp}/up-ca.pem", "-CAkey", f"{tmp}/up-ca.key",
       "-CAcreateserial", "-days", "2", "-extfile", f"{tmp}/up.ext", "-out", f"{tmp}/up.pem")


def nginx_upstream(tmp, http_port=None, tls_port=None):
    """An nginx config serving SMALL_BODY at /small on 127.0.0.1: plain HTTP on http_port
    and TLS (make_certs's up.pem) on tls_port, whichever are given. Returns its path."""
    www = f"{tmp}/www"
    os.makedirs(www, exist_ok=True)
    with open(f"{www}/small", "wb") as f:
        f.write(SMALL_BODY)
    servers = ""
    if http_port:
        servers += f"  server {{ listen 127.0.0.1:{http_port} backlog=4096; root {www}; }}\n"
    if tls_port:
        servers += f"""  server {{
    listen 127.0.0.1:{tls_port} ssl backlog=4096;
    ssl_certificate {tmp}/up.pem;
    ssl_certificate_key {tmp}/up.key;
    root {www};
  }}
"""
    conf = f"{tmp}/nginx.conf"
    with open(conf, "w") as f:
        f.write(f"""daemon off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 600s;
  client_body_temp_path {tmp}/b; proxy_temp_path {tmp}/p; fastcgi_temp_path {tmp}/f;
  uwsgi_temp_path {tmp}/u; scgi_temp_path {tmp}/s;
{servers}}}
""")
    return conf


def start_upstream(tmp, port):
    p = subprocess.Popen(["nginx", "-c", nginx_upstream(tmp, tls_port=port), "-p", tmp], stderr=subprocess.DEVNULL)
    wait_port(port, p, "nginx TLS upstream")
    return p


def start_netbox(tmp, netbox, up_port, port):
    sh(netbox, "ca", "init", "--dir", f"{tmp}/ca")
    policy = {"version": 1, "allow": ["bench.test", "plain.test"], "inspect": ["bench.test"], "ports": [up_port],
              "internal": {"allow": ["127.0.0.1/32"]},
              "limits": {"max_connections": 100000, "max_connections_per_agent": 100000,
                         "max_connections_per_host": 100000, "idle_timeout_ms": 600000},
              "resolve": {"bench.test": ["127.0.0.1"], "plain.test": ["127.0.0.1"]}}
    with open(f"{tmp}/policy.json", "w") as f:
        json.dump(policy, f)
    p = subprocess.Popen([netbox, "proxy", "--max-client-connections-per-agent", "20000", "--policy", f"{tmp}/policy.json", "--listen", f"127.0.0.1:{port}",
                          "--audit-db", f"{tmp}/db/audit.db", "--ca-dir", f"{tmp}/ca", "--upstream-ca",
                          f"{tmp}/up-ca.pem"], stderr=open(f"{tmp}/netbox.log", "w"))
    wait_port(port, p, "netbox proxy")
    return p


def start_squid_bump(tmp, up_port, port):
    d = f"{tmp}/squid"
    os.makedirs(d)
    sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
       "-subj", "/CN=bench squid bump CA", "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.pem",
       "-addext", "basicConstraints=critical,CA:true", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    sh("/usr/lib/squid/security_file_certgen", "-c", "-s", f"{d}/certs", "-M", "16MB")
    for root, dirs, files in os.walk(d):
        for x in [root] + [os.path.join(root, f) for f in files]:
            shutil.chown(x, "proxy", "proxy")
    conf = f"{tmp}/squid.conf"
    with open(conf, "w") as f:
        f.write(f"""http_port 127.0.0.1:{port} ssl-bump generate-host-certificates=on dynamic_cert_mem_cache_size=16MB tls-cert={d}/ca.pem tls-key={d}/ca.key
sslcrtd_program /usr/lib/squid/security_file_certgen -s {d}/certs -M 16MB
sslcrtd_children 4
tls_outgoing_options cafile={tmp}/up-ca.pem
sslproxy_cert_error deny all
acl step1 at_step SslBump1
ssl_bump peek step1
ssl_bump bump all
{squid_common(d)}hosts_file {tmp}/hosts
acl bench_port port {up_port}
http_access deny !bench_port
http_access allow all
""")
    with open(f"{tmp}/hosts", "w") as f:
        f.write("127.0.0.1 bench.test plain.test\n")
    os.chmod(f"{tmp}/hosts", 0o644)
    os.chmod(f"{tmp}/up-ca.pem", 0o644)
    p = subprocess.Popen(["squid", "-N", "-f", conf], stderr=open(f"{tmp}/squid.log", "w"))
    wait_port(port, p, "squid ssl-bump", timeout=40)
    return p


def load(client, proxy_port, up_port, name, seconds, conns, pid):
    c0 = cpu_seconds(pid)
    p = subprocess.run([client, "https", "--proxy", f"127.0.0.1:{proxy_port}", "--target", f"{name}:{up_port}",
                        "--seconds", str(seconds), "--conns", str(conns)], capture_output=True, text=True)
    if p.returncode != 0:
        print(f"bench_client https ({name}) exited {p.returncode}: {p.stderr.strip()}", file=sys.stderr)
    out = p.stdout or '{"done": 0, "errors": 1, "non200": 0, "rps": 0}'
    cpu = cpu_seconds(pid) - c0
    r = json.loads(out.strip().splitlines()[-1])
    r["cpu_us_per_req"] = cpu / max(r["done"], 1) * 1e6
    return r


def idle_rss(client, proxy_port, up_port, count, pid):
    before = rss_kib(pid)
    p = subprocess.Popen([client, "https-idle", "--proxy", f"127.0.0.1:{proxy_port}", "--target",
                          f"bench.test:{up_port}", "--count", str(count), "--hold-seconds", "120"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    time.sleep(1)
    after = rss_kib(pid)
    p.stdin.close()
    p.wait(timeout=30)
    return {"ready": line.strip(), "rss_before_kib": before, "rss_after_kib": after,
            "kib_per_connection": (after - before) / count}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--conns", type=int, default=50)
    ap.add_argument("--idle", type=int, default=1000)
    ap.add_argument("--only", default="", help="comma-separated loads to run (inspected, plain_tunnel, squid_bump), for profiling")
    a = ap.parse_args()
    failed = []
    netbox = f"{a.build}/netbox"
    client = f"{a.build}/tests/bench/bench_client"
    with tempfile.TemporaryDirectory(prefix="netbox-inspect-bench-") as tmp:
        os.chmod(tmp, 0o755)  # nginx's workers (not root) read www/ below it
        os.makedirs(f"{tmp}/db", mode=0o700)
        make_certs(tmp)
        up_port, proxy_port = free_port(), free_port()
        up = start_upstream(tmp, up_port)
        nb = start_netbox(tmp, netbox, up_port, proxy_port)
        squid_port = free_port()
        sq = start_squid_bump(tmp, up_port, squid_port)
        try:
            results = {"inspected": [], "plain_tunnel": [], "squid_bump": []}
            runs = [("inspected", proxy_port, nb, "bench.test"), ("plain_tunnel", proxy_port, nb, "plain.test"),
                    ("squid_bump", squid_port, sq, "bench.test")]
            if a.only:
                runs = [r for r in runs if r[0] in a.only.split(",")]
            for _ in range(a.rounds):
                random.shuffle(runs)
                for kind, port, proc, name in runs:
                    r = load(client, port, up_port, name, a.seconds, a.conns, proc.pid)
                    print(kind, json.dumps(r), flush=True)
                    results[kind].append(r)
                    if r.get("errors") or r.get("non200") or not r.get("done"):
                        failed.append(f"{kind}: {r}")
            med = {k: sorted(x["rps"] for x in v)[len(v) // 2] for k, v in results.items() if v}
            cpu = {k: sorted(x["cpu_us_per_req"] for x in v)[len(v) // 2] for k, v in results.items() if v}
            print("median rps", json.dumps(med), "cpu us/req", json.dumps(cpu))
            if len(med) == 3:
                print(f"inspected / plain tunnel: {med['inspected'] / med['plain_tunnel']:.2f}x (target >= 0.5x)")
                print(f"inspected / squid ssl-bump: {med['inspected'] / max(med['squid_bump'], 1):.2f}x (target >= 3x)")
            if results["squid_bump"]:
                # Bumped, not tunnelled: squid logged the requests inside the TLS.
                with open(f"{tmp}/squid/access.log") as f:
                    bumped = sum(1 for line in f if "GET https://bench.test" in line)
                print(f"squid logged {bumped} bumped GETs")
                if bumped == 0:
                    raise RuntimeError("squid did not bump: no GET https:// line in its access log")
            idle = idle_rss(client, proxy_port, up_port, a.idle, nb.pid)
            print("idle", json.dumps(idle), "(target <= 64 KiB per connection)")
            if f"opened={a.idle} errors=0" not in idle["ready"]:
                failed.append(f"idle: {idle['ready']}")
        finally:
            for p in (nb, sq, up):
                p.terminate()
            for p in (nb, sq, up):
                p.wait(timeout=30)
    mint = f"{a.build}/tests/bench/tls_mint_bench"
    if os.path.exists(mint):
        print("mint", sh(mint).stdout.strip(), "(target >= 2000 leaves/s)")
    # The harness must not rot: any contender's error, a non-200, or an idle connection
    # not opened fails the run (speed is only reported).
    if failed:
        print("inspect_bench: " + "; ".join(failed), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
