#!/usr/bin/env python3
"""An OTLP/HTTP logs receiver on loopback for the export tests.

usage: otlp_receiver.py PORT OUT_FILE [ok|slow]
ok:   answers every POST /v1/logs 200 and appends its body (one JSON document) as a line to OUT_FILE.
slow: a hostile receiver: accepts, reads nothing, answers nothing, holds every connection.
"""
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port, out, mode = int(sys.argv[1]), sys.argv[2], (sys.argv[3] if len(sys.argv) > 3 else "ok")
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/logs" or self.headers.get("Content-Type") != "application/json":
            self.send_response(404)
            self.end_headers()
            return
        with lock, open(out, "ab") as f:
            f.write(body.replace(b"\n", b" ") + b"\n")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


if mode == "slow":
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(64)
    held = []
    while True:
        c, _ = s.accept()
        held.append(c)  # never read, never answered, never closed
else:
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
