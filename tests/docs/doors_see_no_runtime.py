#!/usr/bin/env python3
"""docs/architecture.md: "the doors see only `DoorServices`" (issues 23 and 24): what a door,
a session or a step of the pipeline uses of the running proxy is `DoorServices`
(proxy/src/base/door_services.hpp); the lifecycle, `ProxyRuntime` (start and stop, listeners,
reloads, the endpoint registry, attaching agents), is runtime/'s and agents'. Checked on the
source: no file under proxy/src/{doors,http,pipeline,inspect,upstream} names `ProxyRuntime`,
and none includes, directly or through the headers it includes, base/proxy_runtime.hpp or a
header of runtime/. So the compiler refuses a door that reaches into the lifecycle: give
DoorServices what it needs instead (or a callback, as ApprovalBook's reload_policy).

Usage: doors_see_no_runtime.py SOURCE_DIR   (exit 1 naming each offending file)."""
import pathlib
import re
import sys

DOOR_DIRS = ("doors", "http", "pipeline", "inspect", "upstream")
NAMES = re.compile(r"\bProxyRuntime\b")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
CLAIM = "the doors see only `DoorServices`"


def includes(path: pathlib.Path, src: pathlib.Path) -> list[pathlib.Path]:
    found = []
    for line in path.read_text().splitlines():
        m = INCLUDE.match(line)
        if m and (src / m.group(1)).is_file():
            found.append(src / m.group(1))
    return found


def reaches_runtime(start: pathlib.Path, src: pathlib.Path) -> list[pathlib.Path] | None:
    """The include chain from `start` to a runtime header, or None."""
    seen = {start}
    todo = [[start]]
    while todo:
        chain = todo.pop()
        for inc in includes(chain[-1], src):
            rel = inc.relative_to(src).as_posix()
            if rel == "base/proxy_runtime.hpp" or rel.startswith("runtime/"):
                return chain + [inc]
            if inc not in seen:
                seen.add(inc)
                todo.append(chain + [inc])
    return None


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    src = root / "proxy" / "src"
    problems = []
    arch = (root / "docs" / "architecture.md").read_text()
    if CLAIM not in " ".join(arch.split()):
        problems.append(f"docs/architecture.md no longer says '{CLAIM}': update this check with it")
    if not (src / "base" / "door_services.hpp").is_file():
        problems.append("proxy/src/base/door_services.hpp is gone: update this check")
    sources = sorted(p for d in DOOR_DIRS for p in (src / d).rglob("*") if p.suffix in (".cpp", ".hpp", ".ipp"))
    if len(sources) < 20:
        problems.append(f"only {len(sources)} door sources under {src}: update this check")
    for path in sources + [src / "base" / "door_services.hpp"]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if NAMES.search(line.split("//", 1)[0]):
                problems.append(f"{path.relative_to(root)}:{number}: names ProxyRuntime: {line.strip()}")
        chain = reaches_runtime(path, src)
        if chain:
            problems.append(f"{path.relative_to(root)}: includes the lifecycle: "
                            + " -> ".join(p.relative_to(src).as_posix() for p in chain))
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
