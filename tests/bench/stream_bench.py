#!/usr/bin/env python3
"""First-byte delay of an inspected streaming answer (issue 23 item 2), run by hand.

A Python TLS upstream on loopback answers each request like a model API streaming
server-sent events: the head, then (after 50 ms of "thinking") event 1, then 200 ms later
event 2 and the end. The agent (this process, through a netbox proxy that inspects
bench.test) sends GET over a CONNECT and TLS trusting the netbox CA; the delay is the time
from the upstream's write of event 1 to its arrival at the agent (one clock: the same
process). Target: within 10 ms. A proxy that held the answer until it ended shows the
200 ms. Only loopback is used; every wait is bounded.

  python3 tests/bench/stream_bench.py --netbox build/netbox [--requests 50]
"""
import argparse
import json
import os
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import free_port, wait_port  # noqa: E402
from inspect_bench import make_certs, sh  # noqa: E402

SENT = {}  # request id -> monotonic time event 1 was written


def serve(tmp, listener):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(f"{tmp}/up.pem", f"{tmp}/up.key")
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=answer, args=(ctx, conn), daemon=True).start()


def answer(ctx, conn):
    try:
        with ctx.wrap_socket(conn, server_side=True) as s:
            s.settimeout(10)
            head = b""
            while b"\r\n\r\n" not in head:
                head += s.recv(4096)
            rid = head.split(b"\r\n")[0].split(b" ")[1].decode()
            s.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
                      b"Connection: close\r\n\r\n")
            time.sleep(0.05)
            event = b"data: one\n\n"
            SENT[rid] = time.monotonic()
            s.sendall(b"%x\r\n%s\r\n" % (len(event), event))
            time.sleep(0.2)
            event = b"data: two\n\n"
            s.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(event), event))
    except OSError:
        pass


def one(proxy_port, up_port, cafile, rid):
    raw = socket.create_connection(("127.0.0.1", proxy_port), timeout=10)
    raw.sendall(f"CONNECT bench.test:{up_port} HTTP/1.1\r\nHost: bench.test:{up_port}\r\n\r\n".encode())
    got = b""
    while b"\r\n\r\n" not in got:
        got += raw.recv(1)
    ctx = ssl.create_default_context(cafile=cafile)
    with ctx.wrap_socket(raw, server_hostname="bench.test") as s:
        s.sendall(f"GET /{rid} HTTP/1.1\r\nHost: bench.test:{up_port}\r\n\r\n".encode())
        body = b""
        while b"data: one" not in body:
            chunk = s.recv(65536)
            if not chunk:
                raise RuntimeError("the answer ended before event 1")
            body += chunk
        return time.monotonic() - SENT[f"/{rid}"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--netbox", default="build/netbox")
    ap.add_argument("--requests", type=int, default=50)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="netbox-stream-bench-") as tmp:
        make_certs(tmp)
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        up_port = listener.getsockname()[1]
        threading.Thread(target=serve, args=(tmp, listener), daemon=True).start()
        sh(a.netbox, "ca", "init", "--dir", f"{tmp}/ca")
        policy = {"version": 1, "allow": ["bench.test"], "inspect": ["bench.test"], "ports": [up_port],
                  "internal": {"allow": ["127.0.0.1/32"]}, "resolve": {"bench.test": ["127.0.0.1"]}}
        with open(f"{tmp}/policy.json", "w") as f:
            json.dump(policy, f)
        os.makedirs(f"{tmp}/db", mode=0o700)
        proxy_port = free_port()
        nb = subprocess.Popen([a.netbox, "proxy", "--policy", f"{tmp}/policy.json", "--listen",
                               f"127.0.0.1:{proxy_port}", "--audit-db", f"{tmp}/db/audit.db", "--ca-dir",
                               f"{tmp}/ca", "--upstream-ca", f"{tmp}/up-ca.pem"],
                              stderr=open(f"{tmp}/netbox.log", "w"))
        try:
            wait_port(proxy_port, nb, "netbox proxy")
            ms = sorted(1000 * one(proxy_port, up_port, f"{tmp}/ca/ca.crt", i) for i in range(a.requests))
        except Exception:
            print(open(f"{tmp}/netbox.log").read()[-2000:], file=sys.stderr)
            raise
        finally:
            nb.terminate()
            nb.wait(timeout=30)
        r = {"requests": len(ms), "median_ms": round(statistics.median(ms), 2),
             "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 2), "max_ms": round(ms[-1], 2),
             "load_average": os.getloadavg()}
        print(json.dumps(r))
        return 0 if r["median_ms"] <= 10 else 1


if __name__ == "__main__":
    sys.exit(main())
