#!/usr/bin/env python3
"""The README is the front page and docs/ the one reference: no text is in both.

Usage: readme_not_repeated.py README.md DOCS_DIR

Fails (exit 1, printing the README line and the docs file) when
- a README paragraph, or one of its sentences, of at least MIN_CHARS characters appears
  verbatim in a docs page, compared with whitespace collapsed so that re-wrapping a
  copied paragraph does not hide it; or
- RUN consecutive non-trivial README lines (code included) appear consecutively in a
  docs page. Fences, blank lines, table rulers, headings and lines shorter than
  MIN_LINE characters are trivial: they may repeat.
"""
import pathlib
import re
import sys

from report import finish

MIN_CHARS = 100   # a sentence this long is written once
RUN = 3           # this many consecutive lines are a copied block
MIN_LINE = 25


def squash(text):
    return re.sub(r"\s+", " ", text).strip()


def trivial(line):
    s = line.strip()
    return (len(s) < MIN_LINE or s.startswith("```") or s.startswith("#")
            or re.fullmatch(r"[|:\- ]+", s) is not None or s.startswith("<!--"))


def paragraphs(lines):
    """(first line number, text) of each prose paragraph: blank-line separated, outside fences."""
    out, cur, start, fenced = [], [], 0, False
    for n, line in enumerate(lines, 1):
        if line.strip().startswith("```"):
            fenced = not fenced
            if cur:
                out.append((start, " ".join(cur)))
                cur = []
            continue
        if fenced or not line.strip() or line.startswith("#") or line.lstrip().startswith("|"):
            if cur:
                out.append((start, " ".join(cur)))
                cur = []
            continue
        if not cur:
            start = n
        cur.append(line)
    if cur:
        out.append((start, " ".join(cur)))
    return out


def sentences(text):
    return [s for s in re.split(r"(?<=[.:;!?])\s+", text) if len(s) >= MIN_CHARS]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    readme = pathlib.Path(sys.argv[1])
    docs = sorted(pathlib.Path(sys.argv[2]).glob("*.md"))
    if not docs:
        sys.exit(f"no docs/*.md under {sys.argv[2]}")
    lines = readme.read_text().splitlines()
    pages = {p.name: p.read_text() for p in docs}
    flat = {name: squash(text) for name, text in pages.items()}
    page_lines = {name: [l.strip() for l in text.splitlines()] for name, text in pages.items()}
    found = []

    for n, para in paragraphs(lines):
        para = squash(para)
        pieces = [para] if len(para) >= MIN_CHARS else []
        pieces += [s for s in sentences(para) if s != para]
        for piece in pieces:
            hits = [name for name, text in flat.items() if piece in text]
            if hits:
                found.append(f"{readme}:{n}: repeated in docs/{hits[0]}: {piece[:90]}...")
                break

    for i in range(len(lines) - RUN + 1):
        window = [l.strip() for l in lines[i:i + RUN]]
        if any(trivial(l) for l in window):
            continue
        for name, pl in page_lines.items():
            if any(pl[j:j + RUN] == window for j in range(len(pl) - RUN + 1)):
                found.append(f"{readme}:{i + 1}: {RUN} lines repeated in docs/{name}: {window[0][:90]}")
                break

    return finish(found, f"{len(found)} repeats of README text in docs/ (the README links to docs/ instead)")


if __name__ == "__main__":
    sys.exit(main())
