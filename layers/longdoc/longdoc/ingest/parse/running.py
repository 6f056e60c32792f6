"""Running section headers: a page header that repeats the heading of the section the page is in.

A booklet prints the current section at the top of each page it runs over (``Part A: Liability to
others continued``, ``Section 2 - Contents (continued)``). Such a header repeats on a few pages only
(the section's), so the document-wide repetition test (:func:`~longdoc.ingest.parse.cleanup.find_furniture`:
half the pages) misses it, and the chunker then reads it as a new heading in the middle of the
section. Two rules, both on the first :data:`~longdoc.ingest.parse.cleanup.EDGE_LINES` non-blank
lines of a page only:

* a line ending in a continuation mark (``continued``, ``(continued)``, ``cont'd``, ``contd.``, after
  a space, dash or colon) whose stem (the line without the mark) is a line of an earlier page, or the
  stem of such a line on the page before: it restates a heading already met;
* a line that heads :data:`RUN_PAGES` or more consecutive pages, the same each time (case and
  spacing aside; numbers count, so ``Article 8`` and ``Article 9`` opening two pages stay): every
  copy after the first; the first is the section's own heading and stays. Pages that are copies of
  one another (:func:`~longdoc.ingest.parse.copies.copy_groups`: the same notice issued three times)
  count as one page: their first line repeats because the whole page does.

A footer that only says the text goes on (``continued``, ``continued overleaf``, ``continued on next
page``) is furniture too. A line ending in ``:`` (it introduces a list) or ``,`` (it runs on) is never
removed, nor one over :data:`_MAX_CHARS` characters.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Literal

from longdoc.ingest.models import Furniture
from longdoc.ingest.parse.cleanup import EDGE_LINES as EDGE
from longdoc.ingest.parse.copies import copy_groups

Position = Literal["header", "footer"]

RUN_PAGES = 3
"""A header on this many consecutive pages or more (the same line each time) is a running header."""
_MAX_CHARS = 120
"""A running header is a short line: longer lines are body text."""
_CONTINUED = re.compile(r"^(?P<stem>.*?\S)[\s:–—-]*\(?\s*(?:continued|cont['’]?d\.?|cont\.)\s*\)?\.?$", re.IGNORECASE)
_GOES_ON = re.compile(
    r"^\(?(?:continued|continues)(?:\s+(?:overleaf|on\s+(?:the\s+)?next\s+page))?\)?\.?$", re.IGNORECASE
)


def _key(line: str) -> str:
    """A line compared page to page: case folded, spaces collapsed (numbers kept: ``Article 8`` then
    ``Article 9`` opening two pages are two headings)."""
    return " ".join(line.split()).casefold()


def _edge(lines: list[str], bottom: bool = False) -> list[int]:
    """Indexes of the first (or last) :data:`EDGE` non-blank lines of a page."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    return filled[-EDGE:] if bottom else filled[:EDGE]


def _removable(line: str) -> bool:
    """A short line that neither introduces a list nor runs on (ends in ``:`` or ``,``)."""
    text = line.strip()
    return 0 < len(text) <= _MAX_CHARS and not text.endswith((":", ","))


def running_headers(pages: list[str]) -> tuple[list[str], list[Furniture]]:
    """Remove running section headers and ``continued`` footers from page texts (rules: module docstring).

    Args:
        pages: the text of each physical page, in order (``"\\n"`` between lines), after the
            document-wide furniture is gone.

    Returns:
        ``(cleaned_pages, furniture)``: the pages without those lines (blank lines left at a page's
        edges dropped), and the removed lines with their 1-based page and position. Raises nothing.
    """
    split = [page.split("\n") for page in pages]
    drop = _continued(split)
    _runs(split, drop, copy_groups(pages))
    furniture: list[Furniture] = []
    cleaned: list[str] = []
    for number, (lines, gone) in enumerate(zip(split, drop, strict=True), start=1):
        furniture += [Furniture(page=number, position=gone[i], text=lines[i].strip()) for i in sorted(gone)]
        cleaned.append("\n".join(line for i, line in enumerate(lines) if i not in gone).strip("\n"))
    return cleaned, furniture


def _continued(split: list[list[str]]) -> list[dict[int, Position]]:
    """Per page, the ``continued`` header lines (restating a heading met before, or repeated at the top
    of another page) and ``continued`` footer lines to drop: line index -> position."""
    drop: list[dict[int, Position]] = [{} for _ in split]
    tops = [{_key(lines[i]) for i in _edge(lines) if _CONTINUED.match(lines[i].strip())} for lines in split]
    pages_with: Counter[str] = Counter(key for top in tops for key in top)  # key -> pages whose top holds it
    seen: set[str] = set()  # every line of the pages before
    for number, lines in enumerate(split):
        for i in _edge(lines):
            m = _CONTINUED.match(lines[i].strip())
            if not m or not _removable(lines[i]):
                continue
            key = _key(lines[i])
            again = pages_with[key] > (key in tops[number])  # at the top of another page too
            if _key(m.group("stem")) in seen or again:
                drop[number][i] = "header"
        for i in _edge(lines, bottom=True):
            if _GOES_ON.match(lines[i].strip()):
                drop[number][i] = "footer"
        seen.update(_key(line) for line in lines if line.strip())
    return drop


def _runs(split: list[list[str]], drop: list[dict[int, Position]], groups: list[int]) -> None:
    """Add to ``drop`` the first line of every page after the first of a run of :data:`RUN_PAGES` or more
    consecutive pages that open with the same short line, pages of one group of copies (``groups``)
    counting once."""
    firsts = [next((i for i in _edge(lines) if i not in gone), None) for lines, gone in zip(split, drop, strict=True)]
    keys = [_key(split[n][i]) if i is not None and _removable(split[n][i]) else "" for n, i in enumerate(firsts)]
    n = 0
    while n < len(split):
        end = n
        while keys[n] and end + 1 < len(split) and keys[end + 1] == keys[n]:
            end += 1
        for k in range(n + 1, end + 1) if len(set(groups[n:end + 1])) >= RUN_PAGES else ():
            first = firsts[k]
            if first is not None:
                drop[k][first] = "header"
        n = end + 1
