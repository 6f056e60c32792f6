"""Running text printed with other line breaks: a footer block wrapped differently on some pages.

A long running footer (``© 2022 Chubb. Coverages underwritten by ... Published 07/2022.``)
is usually found line by line by its repeating templates
(:func:`~longdoc.ingest.parse.cleanup.find_furniture`). On a page where the same words
are set in a different measure (page 9 of the Chubb wording, its back cover), every line
has a new shape and none repeats, so the block stayed in the body text, mid-chunk.

Rule: the *runs* of furniture lines removed from each page (consecutive lines, joined by a
space, digit runs as ``#``) are the document's furniture text. On any page, 2 to
:data:`MAX_WINDOW` consecutive lines whose joined words (digit runs as ``#``) occur, word
for word, inside a run found on at least :data:`~longdoc.ingest.parse.cleanup.MIN_REPEATS`
pages, and are at least :data:`MIN_WORDS` words long, are that furniture again, wherever
they stand on the page.
"""

from __future__ import annotations

import re
from collections import Counter

from longdoc.ingest.models import Furniture

MAX_WINDOW = 4
"""The most lines one re-wrapped furniture block may take."""
MIN_WORDS = 12
"""A re-wrapped block must be this many words long: distinctive, never a short phrase."""
_DIGITS = re.compile(r"\d+")


def words_of(text: str) -> str:
    """``text`` as single-spaced words with digit runs as ``#``, padded with a space at each end."""
    return " " + " ".join(_DIGITS.sub("#", text).split()) + " "


def furniture_runs(lines: list[str], dropped: set[int]) -> list[str]:
    """The runs of consecutive ``dropped`` line indexes of one page, as :func:`words_of` strings."""
    runs: list[str] = []
    current: list[str] = []
    for i, line in enumerate(lines):
        if i in dropped:
            current.append(line)
        elif current:
            runs.append(words_of(" ".join(current)))
            current = []
    if current:
        runs.append(words_of(" ".join(current)))
    return runs


def _block_at(lines: list[str], start: int, runs: list[str]) -> int:
    """How many lines from ``start`` (2 to :data:`MAX_WINDOW`) form a re-wrapped run; 0 when none."""
    for size in range(MAX_WINDOW, 1, -1):
        window = lines[start : start + size]
        if len(window) < size or not all(line.strip() for line in window):
            continue
        joined = words_of(" ".join(window))
        if joined.count(" ") - 1 >= MIN_WORDS and any(joined in run for run in runs):
            return size
    return 0


def drop_rewrapped(
    pages: list[str], runs_per_page: list[list[str]], min_pages: int,
) -> tuple[list[str], list[Furniture]]:
    """Remove re-wrapped furniture blocks from cleaned page texts.

    Args:
        pages: the page texts after line-by-line furniture removal, in page order.
        runs_per_page: each page's furniture runs (:func:`furniture_runs`).
        min_pages: how many pages a run must be found on to count.

    Returns:
        ``(pages, furniture)``: the page texts without the blocks (unchanged when none is
        found) and the removed lines, position ``header`` in a page's first half, else
        ``footer``.
    """
    counts = Counter(run for runs in runs_per_page for run in set(runs))
    runs = [run for run, n in counts.items() if n >= min_pages and run.count(" ") - 1 >= MIN_WORDS]
    if not runs:
        return list(pages), []
    out: list[str] = []
    removed: list[Furniture] = []
    for number, page in enumerate(pages, start=1):
        out.append(_drop_page(number, page, runs, removed))
    return out, removed


def _drop_page(number: int, page: str, runs: list[str], removed: list[Furniture]) -> str:
    """Page ``number``'s text without its re-wrapped blocks, which are appended to ``removed``."""
    lines = page.split("\n")
    keep: list[str] = []
    i = 0
    while i < len(lines):
        size = _block_at(lines, i, runs)
        if not size:
            keep.append(lines[i])
            i += 1
            continue
        for j in range(i, i + size):
            position = "header" if j < len(lines) / 2 else "footer"
            removed.append(Furniture(page=number, position=position, text=lines[j].strip()))
        i += size
    return "\n".join(keep).strip("\n") if len(keep) < len(lines) else page
