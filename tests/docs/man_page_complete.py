#!/usr/bin/env python3
"""The man page names every subcommand `netbox --help` lists, and shows each top-level one
in use under EXAMPLES.

Usage: man_page_complete.py NETBOX_BINARY MAN_PAGE

The subcommands are read from the help itself, recursively (as flags_documented.py does),
so a new subcommand fails this check until the man page has it. A subcommand counts as
named when "netbox PATH" (roff's escapes and font changes removed) is in the page; an
example is a line of the EXAMPLES section starting "netbox SUBCOMMAND" or "sudo netbox
SUBCOMMAND". Exit 1, naming each missing one.
"""
import pathlib
import re
import sys

from flags_documented import walk
from report import finish

NO_EXAMPLE_NEEDED = {"help", "version"}


def plain(roff):
    """The page's text as man shows it: escapes and font requests gone, one space between words."""
    text = re.sub(r"\\f[BIRP]", "", roff).replace("\\-", "-").replace("\\(em", "-")
    lines = []
    for line in text.splitlines():
        m = re.match(r"^\.(B|I|BR|RB|IR|RI|BI|IB)\s+(.*)", line)
        if m:
            line = m.group(2).replace('"', "")
        elif line.startswith("."):
            line = line  # a request such as .SH keeps its name, for the section split
        lines.append(line)
    return "\n".join(lines)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, page = sys.argv[1], pathlib.Path(sys.argv[2])
    text = plain(page.read_text())
    words = " ".join(text.split())
    commands = []
    walk(binary, [], commands)
    paths = [p for p, _ in commands if p]
    if not paths:
        sys.exit("`netbox --help` listed no subcommands; the help format changed?")
    examples = text.split(".SH EXAMPLES", 1)[1].split("\n.SH ", 1)[0] if ".SH EXAMPLES" in text else ""
    missing = []
    for path in paths:
        name = "netbox " + " ".join(path)
        if not re.search(re.escape(name) + r"(?![\w-])", words):
            missing.append(f"{page.name}: `{name}` is in --help but not in the man page")
    for path in (p for p in paths if len(p) == 1 and p[0] not in NO_EXAMPLE_NEEDED):
        if not re.search(r"^(sudo )?netbox " + re.escape(path[0]) + r"\b", examples, re.M):
            missing.append(f"{page.name}: no example of `netbox {path[0]}` under EXAMPLES")
    return finish(missing, f"{len(paths)} subcommands checked, {len(missing)} missing")


if __name__ == "__main__":
    sys.exit(main())
