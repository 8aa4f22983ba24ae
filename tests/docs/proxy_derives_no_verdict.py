#!/usr/bin/env python3
"""docs/architecture.md: "`Decision{verdict, rule, reason}` is made by `policy` only; the
proxy never re-derives a verdict" (issue 23, item 3). Spot-checked on the source: outside
proxy/src/pipeline/outcome.hpp (where a policy verdict becomes an Outcome, outcome_of), no proxy
file names a policy verdict or a mode, spells a verdict's Outcome (allow, report, deny:
a refusal or a row gets it from the policy's Decision through outcome_of; the proxy's own
outcomes cap, error and budget are facts, not verdicts), or calls the helpers that used
to decide report mode and the rule merge in the proxy. Such a line is a verdict derived
beside the policy's: move it into policy/ (decide_request.hpp).

Usage: proxy_derives_no_verdict.py SOURCE_DIR   (exit 1 naming each offending line)."""
import pathlib
import re
import sys

FORBIDDEN = [
    (re.compile(r"\bVerdict::"), "names a policy verdict"),
    (re.compile(r"\bOutcome::(allow|report|deny)\b"),
     "spells a verdict (take it from the policy's Decision: outcome_of, or a predicate of outcome.hpp)"),
    (re.compile(r"\bMode::(report|enforce)\b"), "reads the profile's mode (report mode is the policy's)"),
    (re.compile(r"\.verdict\s*[!=]="), "compares a verdict (the policy merges decisions)"),
    (re.compile(r"\b(decide_request_rules|decide_blind_tunnel)\b"), "calls a proxy-side rule decision"),
]
CLAIM = "the proxy never re-derives a verdict"


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    arch = (root / "docs" / "architecture.md").read_text()
    problems = []
    if CLAIM not in " ".join(arch.split()):
        problems.append(f"docs/architecture.md no longer says '{CLAIM}': update this check with it")
    sources = sorted(p for p in (root / "proxy").rglob("*") if p.suffix in (".cpp", ".hpp", ".h", ".ipp"))
    if not sources:
        problems.append(f"no proxy sources under {root / 'proxy'}")
    for path in sources:
        if path.name == "outcome.hpp":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("//", 1)[0]
            for pattern, what in FORBIDDEN:
                if pattern.search(code):
                    problems.append(f"{path.relative_to(root)}:{number}: {what}: {line.strip()}")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
