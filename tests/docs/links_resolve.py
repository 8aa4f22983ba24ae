#!/usr/bin/env python3
"""Every relative link in README.md and docs/*.md names a file of the repository.

Usage: links_resolve.py SOURCE_DIR

Text moves between the README and docs/; a link left pointing at the old place is what a
reader meets first. Web links (http, https, mailto) and in-page anchors are not followed.
"""
import pathlib
import re
import sys

from report import finish


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = pathlib.Path(sys.argv[1])
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        text = page.read_text()
        text = re.sub(r"```.*?```", "", text, flags=re.S)  # code is not links
        for m in re.finditer(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", text):
            target = m.group(1)
            if re.match(r"[a-z]+:", target):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(root)}: link to {target}: no such file")
    return finish(broken, f"{len(pages)} pages checked, {len(broken)} broken links")


if __name__ == "__main__":
    sys.exit(main())
