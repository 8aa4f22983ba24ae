#!/usr/bin/env python3
"""The guardian's cost (issue 25's benchmark): B1 (wrk keep-alive, c=50, ~100-byte answers)
through two netbox proxies in the same run, rounds interleaved: one with no budget, rate,
content rule or guardian rule at all ("off": `guardian.content` secrets and encoded_labels
off, no limits but the connection caps), and one with all of them configured but none
reached ("guarded": byte budgets up and down, overall and for a destination pattern
(one the upstream, an address, does not match: patterns name hosts), a request
rate and a new-hosts rate, both content rules enforcing with the default 64K window, and
guardian rules watching denials, budgets, exfiltration, secrets and internal probes).
Every request must be answered 2xx in both (a limit that bites would make the comparison
meaningless, so the harness stops). Reports medians of req/s, p99 and the proxy's CPU per
request, and the load average; progress lines first, the result as JSON on the last line.

usage: guardian_bench.py --netbox build/netbox --client build/tests/bench/bench_client [--rounds 5]
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from variant_bench import VariantBench, bench_main  # noqa: E402

OFF = {"guardian": {"content": {"secrets": "off", "encoded_labels": "off"}}}

GUARDED = {
    "limits": {
        "bytes_up": "1T", "bytes_down": "1T",
        "requests_per_minute": 100000000, "burst": 1000000, "new_hosts_per_minute": 1000,
        "destinations": [{"host": "*.github.com", "bytes_up": "1T", "bytes_down": "1T",
                          "requests_per_minute": 100000000, "burst": 1000000}],
    },
    "guardian": {
        "rules": [
            {"on": ["denied >= 20 in 60s", "budget_exhausted", "exfiltration_attempt", "secret_in_request",
                    "internal_probe >= 5 in 60s"], "action": "report"},
            {"on": ["rate_limited >= 100 in 10m"], "action": "report"},
        ],
        "content": {"secrets": "enforce", "body_window": "64K", "encoded_labels": "enforce"},
    },
}


class GuardianBench(VariantBench):
    def main(self, rounds):
        self.raise_fd_limit()
        self.start_upstream()
        self.write_wrk_scripts()
        proxies = {"off": self.start_netbox_with("netbox-off", [], OFF),
                   "guarded": self.start_netbox_with("netbox-guarded", [], GUARDED)}
        med, res, load_before, load_after = self.run_b1(proxies, rounds)
        ratio = med["guarded"]["cpu_us"] / med["off"]["cpu_us"]
        print(json.dumps({"rounds": rounds, "duration_s": self.dur, "load_before": load_before,
                          "load_after": load_after, "median": med, "all": res, "cpu_ratio": ratio}))


if __name__ == "__main__":
    bench_main(GuardianBench)
