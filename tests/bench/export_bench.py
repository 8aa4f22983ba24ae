#!/usr/bin/env python3
"""The SIEM export's cost (issue 26 item 3): B1 (wrk keep-alive, c=50, ~100-byte answers)
through three netbox proxies in the same run: without --export, with --export
ocsf-jsonl:FILE, and with that and --export otlp-http to a receiver on loopback (python's
http.server, tests/integration/proxy/otlp_receiver.py), rounds interleaved. Reports medians
of req/s, p99 and the proxy's CPU per request, the records exported and dropped, and the
load average; progress lines first, the result as JSON on the last line.

usage: export_bench.py --netbox build/netbox --client build/tests/bench/bench_client [--rounds 3]
"""
import json
import os
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  the contenders and measurements of bench.py
from variant_bench import VariantBench, bench_main  # noqa: E402


class ExportBench(VariantBench):
    def export_counts(self, admin):
        text = urllib.request.urlopen(f"http://127.0.0.1:{admin}/metrics", timeout=10).read().decode()
        out = {}
        for line in text.splitlines():
            if line.startswith("netbox_export_"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def main(self, rounds):
        self.raise_fd_limit()
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
        med, res, load_before, _ = self.run_b1(proxies, rounds)
        time.sleep(3)  # the export thread and the receiver catch up
        counts = {k: self.export_counts(v[1]) for k, v in proxies.items() if k != "off"}
        load_after = os.getloadavg()
        print(json.dumps({"rounds": rounds, "duration_s": self.dur, "load_before": load_before,
                          "load_after": load_after, "median": med, "all": res, "export_metrics": counts}))


if __name__ == "__main__":
    bench_main(ExportBench)
