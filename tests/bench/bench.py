#!/usr/bin/env python3
"""netbox benchmarks (issue 7), driven by scripts/bench.sh.

Starts an nginx upstream, nginx as a reverse proxy, squid, tinyproxy and netbox on
loopback (configs generated into a temp dir), measures B1..B6 interleaving the
contenders round by round, and writes a report: medians, spread, targets met or not.
Only loopback is used; every loop is bounded in count and time.
"""
import argparse
import json
import os
import platform
import random
import re
import resource
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

SMALL_BODY = b"netbox bench: a small response body of one hundred bytes, like a short JSON answer from an API.....\n"
assert len(SMALL_BODY) == 100


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def squid_common(d):
    """squid.conf lines every squid of the benchmarks shares: its files in `d`, no cache,
    no pinger, a quick shutdown."""
    return f"""pid_filename {d}/squid.pid
cache_log {d}/cache.log
access_log stdio:{d}/access.log
coredump_dir {d}
cache deny all
cache_mem 0 MB
cache_effective_user proxy
pinger_enable off
netdb_filename none
shutdown_lifetime 1 seconds
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, what, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with status {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {timeout}s")


def process_tree(pid):
    """The pid and every descendant's (children of any of its threads), each once."""
    todo = [pid]
    seen = set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        yield p
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except (FileNotFoundError, ProcessLookupError):
            pass


def rss_kib(pid):
    """RSS of a process and all its descendants, in KiB."""
    total = 0
    for p in process_tree(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """User + system CPU time of a process and all its descendants (threads included)."""
    total = 0
    for p in process_tree(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total / CLK_TCK


class Bench:
    def __init__(self, args):
        self.args = args
        self.smoke = args.smoke
        self.rounds = args.rounds or (1 if self.smoke else 5)
        self.dur = args.duration or (1 if self.smoke else 5)
        self.tmp = tempfile.mkdtemp(prefix="netbox-bench-")
        os.chmod(self.tmp, 0o755)
        self.procs = []
        self.results = {}  # key -> list of values (one per round)
        self.facts = {}    # single values: row counts, integrity, versions
        self.netbox = args.netbox
        self.client = args.client
        self.writer_bench = args.writer_bench

    # ---------- processes ----------
    def spawn(self, name, cmd, **kw):
        out = open(os.path.join(self.tmp, f"{name}.out"), "w")
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, **kw)
        self.procs.append((name, p))
        return p

    def stop(self, proc, timeout=15):
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def stop_all(self):
        for _, p in reversed(self.procs):
            self.stop(p)

    def write(self, name, text, mode=0o644):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        return path

    # ---------- contenders ----------
    def start_upstream(self):
        self.up = free_port()
        www = os.path.join(self.tmp, "www")
        os.makedirs(www)
        os.chmod(www, 0o755)
        with open(os.path.join(www, "small"), "wb") as f:
            f.write(SMALL_BODY)
        self.bulk_bytes = (64 << 20) if self.smoke else (1 << 30)
        with open(os.path.join(www, "big"), "wb") as f:
            f.truncate(self.bulk_bytes)  # sparse: served from the page cache, costs no disk
        for n in ("small", "big"):
            os.chmod(os.path.join(www, n), 0o644)
        # Read it once so the first bulk measurement does not pay for filling the page cache.
        with open(os.path.join(www, "big"), "rb") as f:
            while f.read(1 << 20):
                pass
        conf = self.write("nginx-upstream.conf", f"""
daemon off;
worker_processes 1;
worker_rlimit_nofile {self.nofile};
pid {self.tmp}/nginx-upstream.pid;
error_log {self.tmp}/nginx-upstream-error.log warn;
events {{ worker_connections 30000; }}
http {{
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 100000000;
  keepalive_timeout 600s;
  client_header_timeout 600s;
  client_body_temp_path {self.tmp}/nginx-up-body;
  proxy_temp_path {self.tmp}/nginx-up-proxy;
  fastcgi_temp_path {self.tmp}/nginx-up-fcgi;
  uwsgi_temp_path {self.tmp}/nginx-up-uwsgi;
  scgi_temp_path {self.tmp}/nginx-up-scgi;
  default_type application/octet-stream;
  server {{
    listen 127.0.0.1:{self.up} backlog=4096;
    root {www};
    location = /sink {{ client_max_body_size 0; return 204; }}
  }}
}}
""")
        p = self.spawn("nginx-upstream", ["nginx", "-c", conf, "-p", self.tmp])
        wait_port(self.up, p, "nginx upstream")

    def start_nginx_proxy(self):
        self.ports["nginx"] = port = free_port()
        conf = self.write("nginx-proxy.conf", f"""
daemon off;
worker_processes auto;
worker_rlimit_nofile {self.nofile};
pid {self.tmp}/nginx-proxy.pid;
error_log {self.tmp}/nginx-proxy-error.log warn;
events {{ worker_connections 30000; }}
http {{
  access_log {self.tmp}/nginx-proxy-access.log combined buffer=64k flush=1s;
  keepalive_requests 100000000;
  client_body_temp_path {self.tmp}/nginx-rp-body;
  proxy_temp_path {self.tmp}/nginx-rp-proxy;
  fastcgi_temp_path {self.tmp}/nginx-rp-fcgi;
  uwsgi_temp_path {self.tmp}/nginx-rp-uwsgi;
  scgi_temp_path {self.tmp}/nginx-rp-scgi;
  upstream origin {{ server 127.0.0.1:{self.up}; keepalive 256; }}
  server {{
    listen 127.0.0.1:{port} backlog=4096;
    location / {{
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }}
  }}
}}
""")
        p = self.spawn("nginx-proxy", ["nginx", "-c", conf, "-p", self.tmp])
        wait_port(port, p, "nginx reverse proxy")
        self.pids["nginx"] = p.pid

    def start_squid(self, name="squid"):
        port = free_port()
        d = os.path.join(self.tmp, name)
        os.makedirs(d)
        shutil.chown(d, "proxy", "proxy")
        conf = self.write(f"{name}.conf", f"""
http_port 127.0.0.1:{port}
{squid_common(d)}max_filedescriptors {self.nofile}
acl bench_dst dst 127.0.0.1/32
acl bench_port port {self.up}
http_access deny !bench_port
http_access allow bench_dst
http_access deny all
""")
        p = self.spawn(name, ["squid", "-N", "-f", conf])
        wait_port(port, p, "squid", timeout=40)
        return port, p

    def start_tinyproxy(self, name="tinyproxy"):
        port = free_port()
        d = os.path.join(self.tmp, name)
        os.makedirs(d)
        shutil.chown(d, "nobody", "nogroup")
        filt = self.write(f"{name}.filter", "^127\\.0\\.0\\.1$\n")
        conf = self.write(f"{name}.conf", f"""
User nobody
Group nogroup
Port {port}
Listen 127.0.0.1
Timeout 600
LogFile "{d}/tinyproxy.log"
LogLevel Connect
PidFile "{d}/tinyproxy.pid"
MaxClients 20000
Filter "{filt}"
FilterDefaultDeny Yes
ConnectPort {self.up}
""")
        p = self.spawn(name, ["tinyproxy", "-d", "-c", conf])
        wait_port(port, p, "tinyproxy")
        return port, p

    def start_netbox(self, name="netbox"):
        port = free_port()
        policy = self.write(f"{name}-policy.json", json.dumps({
            "version": 1,
            "allow": ["127.0.0.1"],
            "ports": [self.up],
            "internal": {"allow": ["127.0.0.1/32"]},
            "limits": {"max_connections": 100000, "max_connections_per_agent": 100000,
                       "max_connections_per_host": 100000, "idle_timeout_ms": 600000},
        }, indent=2))
        db = os.path.join(self.tmp, f"{name}-audit.db")
        p = self.spawn(name, [self.netbox, "proxy", "--policy", policy, "--listen", f"127.0.0.1:{port}",
                              "--audit-db", db])
        wait_port(port, p, "netbox proxy")
        return port, p, db

    # ---------- measurement helpers ----------
    def record(self, key, value):
        self.results.setdefault(key, []).append(value)

    def write_wrk_scripts(self):
        for close in (False, True):
            self.write(f"wrk-{'close' if close else 'ka'}.lua", f"""
wrk.path = "http://127.0.0.1:{self.up}/small"
{'wrk.headers["Connection"] = "close"' if close else ''}
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRKJSON {{"requests":%d,"duration_us":%d,"errors":%d,"status_errors":%d,"p50_us":%d,"p99_us":%d}}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99)))
end
""")

    def proxy_cpu(self, contender):
        """CPU seconds the contender's processes have used so far (None for direct)."""
        pid = self.pids.get(contender)
        return None if pid is None else cpu_seconds(pid)

    def record_cpu(self, key, contender, before, ops):
        # CPU per request of the proxy itself: unlike the rate, it hardly depends on what
        # else the 2 cores are doing, so it compares proxies on a busy machine too.
        if before is not None and ops:
            self.record(key, (self.proxy_cpu(contender) - before) * 1e6 / ops)

    def wrk(self, port, conns, close):
        script = os.path.join(self.tmp, f"wrk-{'close' if close else 'ka'}.lua")
        cmd = ["wrk", "-t2", f"-c{conns}", f"-d{self.dur}s", "--timeout", "10s", "-s", script,
               f"http://127.0.0.1:{port}/"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=self.dur + 60)
        m = re.search(r"WRKJSON (\{.*\})", out.stdout)
        if not m:
            raise RuntimeError(f"wrk printed no result: {out.stdout}\n{out.stderr}")
        r = json.loads(m.group(1))
        r["rps"] = r["requests"] / (r["duration_us"] / 1e6)
        return r

    def client_json(self, argv, timeout):
        return self.run_json([self.client] + argv, timeout)

    def run_json(self, cmd, timeout):
        """Runs a tool that prints one JSON object as its last `{` line."""
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
        if not lines:
            raise RuntimeError(f"{' '.join(cmd)}: no result (status {out.returncode}): {out.stderr}")
        return json.loads(lines[-1])

    # ---------- benchmarks ----------
    def b1_b2(self, rnd):
        order = list(self.ports)
        random.Random(rnd).shuffle(order)
        for conns in (50, 500):
            for c in order:
                cpu0 = self.proxy_cpu(c)
                r = self.wrk(self.ports[c], conns, close=False)
                self.record_cpu(("B1", c, conns, "cpu_us_per_req"), c, cpu0, r["requests"])
                self.record(("B1", c, conns, "rps"), r["rps"])
                self.record(("B1", c, conns, "p50_ms"), r["p50_us"] / 1000)
                self.record(("B1", c, conns, "p99_ms"), r["p99_us"] / 1000)
                self.record(("B1", c, conns, "errors"), r["errors"] + r["status_errors"])
                log(f"B1 c={conns} {c}: {r['rps']:.0f} req/s p99 {r['p99_us'] / 1000:.2f} ms "
                    f"errors {r['errors']}+{r['status_errors']}")
        for c in order:
            cpu0 = self.proxy_cpu(c)
            r = self.wrk(self.ports[c], 50, close=True)
            self.record_cpu(("B2", c, 50, "cpu_us_per_req"), c, cpu0, r["requests"])
            self.record(("B2", c, 50, "rps"), r["rps"])
            self.record(("B2", c, 50, "errors"), r["errors"] + r["status_errors"])
            log(f"B2 {c}: {r['rps']:.0f} req/s errors {r['errors']}+{r['status_errors']}")

    def b3(self, rnd):
        order = ["direct", "squid", "tinyproxy", "netbox"]
        random.Random(rnd + 100).shuffle(order)
        target = f"127.0.0.1:{self.up}"
        for c in order:
            argv = ["tunnels", "--target", target, "--conns", "50", "--seconds", str(self.dur)]
            if c != "direct":
                argv += ["--proxy", f"127.0.0.1:{self.ports[c]}"]
            cpu0 = self.proxy_cpu(c)
            r = self.client_json(argv, self.dur + 60)
            self.record_cpu(("B3setup", c, 50, "cpu_us_per_tunnel"), c, cpu0, r["ops"])
            self.record(("B3setup", c, 50, "rate"), r["rate"])
            self.record(("B3setup", c, 50, "p99_ms"), r["p99_ms"])
            self.record(("B3setup", c, 50, "errors"), r["errors"])
            log(f"B3 set-up {c}: {r['rate']:.0f} tunnels/s errors {r['errors']}")
        for c in order:
            for direction in ("down", "up"):
                argv = ["bulk", "--target", target, "--direction", direction, "--bytes", str(self.bulk_bytes)]
                if c != "direct":
                    argv += ["--proxy", f"127.0.0.1:{self.ports[c]}"]
                r = self.client_json(argv, 300)
                self.record(("B3bulk", c, direction, "gbit_s"), r["gbit_s"])
                log(f"B3 bulk {direction} {c}: {r['gbit_s']:.2f} Gbit/s")

    def b4(self, rnd):
        # A proxy holds two sockets per tunnel; stay under the fd limit with room to spare.
        n = 500 if self.smoke else min(10000, (self.nofile - 200) // 2)
        order = ["squid", "tinyproxy", "netbox"]
        random.Random(rnd + 200).shuffle(order)
        for c in order:
            name = f"b4-{c}-{rnd}"
            if c == "squid":
                port, p = self.start_squid(name)
            elif c == "tinyproxy":
                port, p = self.start_tinyproxy(name)
            else:
                port, p, _ = self.start_netbox(name)
            try:
                time.sleep(0.5)
                before = rss_kib(p.pid)
                idle = subprocess.Popen([self.client, "idle", "--proxy", f"127.0.0.1:{port}", "--target",
                                         f"127.0.0.1:{self.up}", "--count", str(n), "--hold-seconds", "120"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                line = idle.stdout.readline()
                m = re.match(r"ready opened=(\d+)", line)
                opened = int(m.group(1)) if m else 0
                time.sleep(1.0)
                after = rss_kib(p.pid)
                idle.stdin.close()
                idle.wait(timeout=60)
                per = (after - before) / opened if opened else float("nan")
                self.record(("B4", c, n, "kib_per_tunnel"), per)
                self.record(("B4", c, n, "opened"), opened)
                log(f"B4 {c}: {opened}/{n} tunnels, RSS {before} -> {after} KiB, {per:.2f} KiB per tunnel")
            finally:
                self.stop(p)

    def b5(self, rnd):
        # Bounded by the proxy's own request rate, not the store's; the store alone is below.
        n = 5000 if self.smoke else 20000
        db = self.netbox_db
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
        first = con.execute("SELECT coalesce(max(id), 0) FROM requests").fetchone()[0]
        proc = subprocess.Popen([self.client, "http", "--proxy", f"127.0.0.1:{self.ports['netbox']}", "--target",
                                 f"127.0.0.1:{self.up}", "--requests", str(n), "--conns", "50",
                                 "--max-seconds", "120"], stdout=subprocess.PIPE, text=True)
        t0 = time.time()
        backlog = 0
        final = None
        for line in proc.stdout:
            m = re.match(r"progress t=\S+ done=(\d+)", line)
            if m:
                rows = con.execute("SELECT coalesce(max(id), 0) FROM requests").fetchone()[0] - first
                backlog = max(backlog, int(m.group(1)) - rows)
            elif line.startswith("{"):
                final = json.loads(line)
        proc.wait(timeout=30)
        deadline = time.time() + 60
        rows = 0
        while time.time() < deadline:
            rows = con.execute("SELECT count(*) FROM requests WHERE id > ?", (first,)).fetchone()[0]
            if rows >= n:
                break
            time.sleep(0.01)
        t_rows = time.time() - t0
        con.close()
        answered = final["done"] if final else 0
        self.record(("B5", "netbox", 50, "rows_per_s"), rows / t_rows)
        self.record(("B5", "netbox", 50, "max_backlog"), backlog)
        # Every request answered must have its row; client errors are reported separately.
        self.record(("B5", "netbox", 50, "lost"), max(0, answered - rows))
        self.record(("B5", "netbox", 50, "client_errors"), final["errors"] if final else n)
        log(f"B5 proxy: {n} requests, {answered} answered, {rows} rows in {t_rows:.2f}s "
            f"({rows / t_rows:.0f} rows/s), max backlog {backlog}")
        wdb = os.path.join(self.tmp, f"writer-{rnd}.db")
        r = self.run_json([self.writer_bench, wdb, str(n * 10), "2"], 180)
        self.record(("B5writer", "netbox", 2, "rows_per_s"), r["rows_per_s"])
        self.record(("B5writer", "netbox", 2, "max_queue_depth"), r["max_queue_depth"])
        self.record(("B5writer", "netbox", 2, "lost"), r["rows"] - r["counted"])
        self.facts.setdefault("writer_integrity", []).append(r["integrity"])
        self.facts["queue_capacity"] = r["queue_capacity"]
        log(f"B5 writer: {r['rows_per_s']:.0f} rows/s, max queue depth {r['max_queue_depth']}, "
            f"{r['counted']}/{r['rows']} rows, integrity {r['integrity']}")

    def b6(self, rnd):
        runs = 5 if self.smoke else 50
        db = os.path.join(self.tmp, "launch-audit.db")
        # netbox's defaults are a whole sandbox (read-only root, workdir, cgroup limits);
        # "netbox-nocgroup" leaves out the cgroup layer and "netbox-sandbox" sets the
        # issue's limits, so the table shows what each layer costs. Each bwrap is the
        # nearest like-for-like: network only, and --unshare-all with netbox's binds (a
        # read-only root, the workdir read-write, /tmp and /var/tmp in memory).
        cwd = os.getcwd()
        cmds = {
            "netbox": f"{self.netbox} launch --audit-db {db} -- /bin/true",
            "netbox-nocgroup": f"{self.netbox} launch --audit-db {db} --memory unlimited --pids unlimited -- /bin/true",
            "netbox-sandbox": f"{self.netbox} launch --audit-db {db} --memory 1G --pids 256 -- /bin/true",
            "bwrap": "bwrap --unshare-net --dev-bind / / /bin/true",
            "bwrap-sandbox": f"bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --tmpfs /var/tmp "
                             f"--bind {cwd} {cwd} --chdir {cwd} /bin/true",
            "unshare": "unshare -n /bin/true",
        }
        order = list(cmds)
        random.Random(rnd + 300).shuffle(order)
        for c in order:
            js = os.path.join(self.tmp, f"hyperfine-{c}-{rnd}.json")
            subprocess.run(["hyperfine", "-N", "--warmup", "3", "--runs", str(runs), "--export-json", js,
                            "--style", "none", cmds[c]], check=True, capture_output=True, timeout=600)
            with open(js) as f:
                res = json.load(f)["results"][0]
            self.record(("B6", c, runs, "median_ms"), res["median"] * 1000)
            if any(code != 0 for code in res.get("exit_codes", [])):
                raise RuntimeError(f"B6 {c}: a run exited non-zero: {cmds[c]}")
            log(f"B6 {c}: median {res['median'] * 1000:.2f} ms")

    def b6_concurrent(self, rnd):
        """Launches started at once: each one's wall time from its own start to its exit."""
        n = 10 if self.smoke else 50
        db = os.path.join(self.tmp, "launch-concurrent.db")
        cmd = [self.netbox, "launch", "--quiet", "--audit-db", db, "--", "/bin/true"]
        started, took, failed = {}, [], 0
        t0 = time.monotonic()
        for _ in range(n):
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            started[p.pid] = (p, time.monotonic())
        while started:
            pid, status = os.wait()
            if pid not in started:
                continue
            p, t = started.pop(pid)
            p.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
            took.append((time.monotonic() - t) * 1000)
            failed += p.returncode != 0
        if failed:
            raise RuntimeError(f"B6 concurrent: {failed} of {n} launches exited non-zero")
        took.sort()
        self.record(("B6concurrent", "netbox", n, "p50_ms"), took[len(took) // 2])
        self.record(("B6concurrent", "netbox", n, "p99_ms"), took[min(len(took) - 1, int(len(took) * 0.99))])
        self.record(("B6concurrent", "netbox", n, "all_done_ms"), (time.monotonic() - t0) * 1000)
        log(f"B6 {n} at once: p50 {took[len(took) // 2]:.1f} ms, p99 {took[-1]:.1f} ms")

    def start_shared_proxy(self, name):
        """`netbox proxy --control`: what `netbox launch --proxy-control` attaches agents to."""
        policy = self.write(f"{name}-policy.json", json.dumps({"version": 1, "allow": ["127.0.0.1"]}))
        sock = os.path.join(self.tmp, f"{name}.sock")
        p = self.spawn(name, [self.netbox, "proxy", "--policy", policy, "--listen", "127.0.0.1:0", "--threads", "2",
                              "--audit-db", os.path.join(self.tmp, f"{name}-audit.db"), "--control", sock])
        deadline = time.monotonic() + 20
        while not os.path.exists(sock):
            if p.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{name}: the shared proxy made no control socket")
            time.sleep(0.05)
        return p, [self.netbox, "launch", "--proxy-control", sock, "--", "/bin/true"]

    def b6_attach(self, rnd):
        """Agents a shared proxy attaches per second: launches through it, 8 at a time, and
        the proxy's own CPU per attached agent (what bounds its rate once launchers are elsewhere)."""
        n = 40 if self.smoke else 400
        proxy, cmd = self.start_shared_proxy(f"shared-{rnd}")
        for _ in range(5):
            subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        cpu0, t0, running, done = cpu_seconds(proxy.pid), time.monotonic(), [], 0
        while done < n:
            while len(running) < 8 and done + len(running) < n:
                running.append(subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                stderr=subprocess.DEVNULL))
            # Polled, not os.wait(): that would reap the harness's other children too.
            time.sleep(0.001)
            for p in [p for p in running if p.poll() is not None]:
                running.remove(p)
                done += 1
                if p.returncode != 0:
                    raise RuntimeError(f"B6 attach: a launch through the shared proxy failed: {cmd}")
        secs, cpu = time.monotonic() - t0, cpu_seconds(proxy.pid) - cpu0
        self.stop(proxy)
        self.record(("B6attach", "netbox", 8, "agents_per_s"), n / secs)
        self.record(("B6attach", "netbox", 8, "proxy_cpu_ms_per_agent"), cpu / n * 1000)
        log(f"B6 shared proxy: {n / secs:.1f} agents/s (8 launchers at once), proxy CPU {cpu / n * 1000:.2f} ms/agent")

    def b6_churn(self):
        """Sequential launches through one shared proxy: its descriptors and RSS before and after."""
        n = 50 if self.smoke else 1000
        proxy, cmd = self.start_shared_proxy("churn")
        for _ in range(30):
            subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        time.sleep(1)
        fds0, rss0, t0 = len(os.listdir(f"/proc/{proxy.pid}/fd")), rss_kib(proxy.pid), time.monotonic()
        for _ in range(n):
            subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        secs = time.monotonic() - t0
        time.sleep(1)
        fds1, rss1 = len(os.listdir(f"/proc/{proxy.pid}/fd")), rss_kib(proxy.pid)
        self.stop(proxy)
        self.record(("B6churn", "netbox", n, "ms_per_launch"), secs / n * 1000)
        self.record(("B6churn", "netbox", n, "proxy_fds_after_minus_before"), fds1 - fds0)
        self.record(("B6churn", "netbox", n, "proxy_rss_after_minus_before_kib"), rss1 - rss0)
        self.facts["churn_rss_kib"] = [rss0, rss1]
        log(f"B6 churn: {n} launches, {secs / n * 1000:.1f} ms each; proxy fds {fds0} -> {fds1}, RSS {rss0} -> {rss1} KiB")

    # ---------- driver ----------
    def run(self):
        # Raise the soft fd limit to the hard one (containers may cap the hard limit and
        # withhold CAP_SYS_RESOURCE); B4's tunnel count is sized to fit under it.
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        self.nofile = 1048576 if hard == resource.RLIM_INFINITY else hard
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, hard))
        self.facts["nofile"] = self.nofile
        self.ports, self.pids = {}, {}
        self.facts["load_before"] = os.getloadavg()
        self.facts["started"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        # What was measured, kept with the numbers: a report written later must not name
        # the tree or kernel it happens to be written on.
        self.facts["commit"] = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "describe",
                                               "--always", "--dirty"], capture_output=True, text=True).stdout.strip()
        self.facts["kernel"] = platform.release()
        self.start_upstream()
        self.write_wrk_scripts()
        self.ports["direct"] = self.up
        self.start_nginx_proxy()
        self.ports["squid"], sp = self.start_squid()
        self.ports["tinyproxy"], tp = self.start_tinyproxy()
        self.ports["netbox"], npr, self.netbox_db = self.start_netbox()
        self.pids.update(squid=sp.pid, tinyproxy=tp.pid, netbox=npr.pid)
        log(f"temp dir {self.tmp}; upstream :{self.up}; proxies {self.ports}")
        # Warm every path once (connection pools, page cache) before anything is measured.
        if not self.smoke:
            for port in self.ports.values():
                self.wrk(port, 10, close=False)
        if self.args.serve:
            # For profiling by hand: everything up, nothing measured.
            with open(os.path.join(self.tmp, "ports.json"), "w") as f:
                json.dump({"upstream": self.up, **self.ports, "pids": self.pids}, f)
            log(f"serving for {self.args.serve}s; ports in {self.tmp}/ports.json")
            time.sleep(self.args.serve)
            return
        t0 = time.time()
        for rnd in range(self.rounds):
            log(f"round {rnd + 1}/{self.rounds} (load {os.getloadavg()[0]:.2f})")
            only = set(self.args.only.split(",")) if self.args.only else {"B1", "B2", "B3", "B4", "B5", "B6"}
            if only & {"B1", "B2"}:
                self.b1_b2(rnd)
            if "B3" in only:
                self.b3(rnd)
            if "B5" in only:
                self.b5(rnd)
            if "B6" in only:
                self.b6(rnd)
                self.b6_concurrent(rnd)
                self.b6_attach(rnd)
            if "B4" in only and rnd < (1 if self.smoke else self.args.b4_rounds):
                self.b4(rnd)
        if "B6" in (set(self.args.only.split(",")) if self.args.only else {"B6"}):
            self.b6_churn()
        self.facts["seconds"] = time.time() - t0
        self.facts["load_after"] = os.getloadavg()
        # B5 afterwards: the proxy stops (draining its queue), then the whole file is checked.
        self.stop(npr, timeout=60)
        con = sqlite3.connect(self.netbox_db)
        self.facts["netbox_integrity"] = con.execute("PRAGMA integrity_check").fetchone()[0]
        self.facts["netbox_rows"] = con.execute("SELECT count(*) FROM requests").fetchone()[0]
        self.facts["netbox_incomplete"] = con.execute(
            "SELECT count(*) FROM requests WHERE status IS NULL AND error = ''").fetchone()[0]
        con.close()
        log(f"netbox audit db: {self.facts['netbox_rows']} rows, integrity {self.facts['netbox_integrity']}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--duration", type=int)
    ap.add_argument("--b4-rounds", type=int, default=3)
    ap.add_argument("--netbox", required=True)
    ap.add_argument("--client", required=True)
    ap.add_argument("--writer-bench", required=True)
    ap.add_argument("--serve", type=int, default=0, help="start the contenders, measure nothing, wait SECONDS")
    ap.add_argument("--only", help="comma-separated subset to measure, e.g. B1,B4 (B1 and B2 run together)")
    ap.add_argument("--keep-tmp", action="store_true", help="keep configs and logs for inspection")
    ap.add_argument("--out", required=True, help="directory for results.json")
    a = ap.parse_args()
    # SIGTERM/SIGINT unwind through `finally`, so no contender outlives the harness.
    def interrupted(signum, _frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)
    b = Bench(a)
    try:
        b.run()
    finally:
        b.stop_all()
        if not a.keep_tmp:
            shutil.rmtree(b.tmp, ignore_errors=True)
    if a.serve:
        return 0
    out = {"smoke": b.smoke, "rounds": b.rounds, "duration_s": b.dur, "bulk_bytes": b.bulk_bytes,
           "facts": b.facts,
           "results": [{"bench": k[0], "contender": k[1], "param": k[2], "metric": k[3], "values": v}
                       for k, v in b.results.items()]}
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
