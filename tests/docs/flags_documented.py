#!/usr/bin/env python3
"""Every flag `netbox ... --help` prints, for every subcommand, appears somewhere in docs/.

Usage: flags_documented.py NETBOX_BINARY DOCS_DIR

The subcommands are read from the help itself (its "Subcommands:" section, recursively),
so a new subcommand or flag is checked without touching this script. A flag counts as
documented when docs/*.md holds it as a whole word (`--audit-db` is not found in
`--audit-db-path`). Exit 1, naming each missing flag and its subcommand.
"""
import pathlib
import re
import subprocess
import sys

from report import finish

ALWAYS_THERE = {"-h", "--help"}  # CLI11 adds them to every subcommand


def help_text(binary, path):
    run = subprocess.run([binary, *path, "--help"], capture_output=True, text=True, timeout=30)
    if run.returncode != 0:
        sys.exit(f"`netbox {' '.join(path)} --help` exited {run.returncode}: {run.stderr.strip()}")
    return run.stdout


def sections(text):
    """Maps a help section's title ("Options", "Subcommands") to its lines."""
    out, current = {}, None
    for line in text.splitlines():
        title = re.fullmatch(r"(\w[\w ]*):", line)
        if title:
            current = out.setdefault(title.group(1), [])
        elif current is not None and line.strip():
            current.append(line)
    return out


def flags_of(option_lines):
    # An option line starts with its names, e.g. "  --agent,--name TEXT  ..." or
    # "  -q,--quiet  ..."; continuation lines of a long description start with spaces only.
    found = []
    for line in option_lines:
        m = re.match(r"^ {1,4}(-[^\s]+)", line)
        if m:
            found += [f for f in m.group(1).split(",") if f.startswith("-")]
    return found


def walk(binary, path, seen):
    text = help_text(binary, path)
    parts = sections(text)
    seen.append((path, flags_of(parts.get("Options", []))))
    for line in parts.get("Subcommands", []):
        m = re.match(r"^ {1,4}(\w[\w-]*)", line)  # not a wrapped description line
        if m:
            walk(binary, path + [m.group(1)], seen)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, docs = sys.argv[1], pathlib.Path(sys.argv[2])
    corpus = "\n".join(p.read_text() for p in sorted(docs.glob("*.md")))
    if not corpus:
        sys.exit(f"no docs/*.md under {docs}")
    commands = []
    walk(binary, [], commands)
    if len(commands) < 2:
        sys.exit("`netbox --help` listed no subcommands; the help format changed?")
    missing, checked = [], 0
    for path, flags in commands:
        for flag in flags:
            if flag in ALWAYS_THERE:
                continue
            checked += 1
            if not re.search(r"(?<![\w-])" + re.escape(flag) + r"(?![\w-])", corpus):
                missing.append(f"netbox {' '.join(path) or '(top level)'}: {flag} is in --help but nowhere in {docs}/*.md")
    return finish(missing, f"{checked} flags of {len(commands)} commands checked, {len(missing)} missing")


if __name__ == "__main__":
    sys.exit(main())
