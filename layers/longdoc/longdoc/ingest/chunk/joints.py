"""Paragraph joints: where a new paragraph or list item starts in wrapped text.

Shared by the heading pass (a heading must start a paragraph), the items pass (an item
is one paragraph) and the split pass (long sections are packed from paragraphs).
"""

from __future__ import annotations

import re

# List items: (a) (ii) (A) (12), bullets, "3. ", "a) ". Not "(DPC)": an acronym in brackets
# that starts a wrapped line is the middle of a sentence.
LIST_START_RE = re.compile(
    r"^\s*(?:\((?:[a-z]{1,2}|[ivxlc]{1,6}|[A-Z]|\d{1,3})\)|[•●▪◦·\-–]\s|\d{1,3}\.\s|[a-z]\)\s)"
)
"""A line that starts with a list marker: ``(a)``, ``(ii)``, ``(A)``, ``(12)``, a bullet, ``3. ``, ``a) ``."""
BULLET_START_RE = re.compile(r"^\s*[•●▪◦·\-–]\s")
"""A line that starts with a bullet."""
LIST_LEAD_RE = re.compile(r"(?:[.:;!?。：；！？]|\band|\bor|\band/or|\bbut)[\"'”’)\]]*$", re.IGNORECASE)
"""A line that may precede a list item: it closes a clause (CJK marks too), or ends "; and" / "; or"."""
SENTENCE_END = (".", ":", ";", "?", "!", "。", "：", "；", "？", "！")
"""Line endings that close a sentence or clause (the CJK full-width marks included)."""


def _opens_paragraph(prev: str, line: str, typical_line: int) -> bool:
    """Whether non-blank ``line`` starts a paragraph after the line ``prev`` (right-stripped)."""
    return bool(
        not prev
        or BULLET_START_RE.match(line)
        or (LIST_START_RE.match(line) and LIST_LEAD_RE.search(prev))
        or (prev.endswith(SENTENCE_END) and len(prev) < 0.75 * typical_line)
    )


def paragraph_breaks(text: str, start: int, end: int, typical_line: int) -> list[int]:
    """Offsets (into ``text``, ascending) where a new paragraph starts inside ``text[start:end]``.

    A paragraph starts after a blank line, at a bullet, after a short line (under 75 % of
    ``typical_line`` chars) that ends a sentence, or at a list marker (``(b)``, ``2.``,
    ``b)``) when the line before closes a clause (``.``, ``;``, ``:``, or ``and``/``or``):
    ``claims under paragraph`` + ``(b) above ...`` is one sentence wrapped at a
    cross-reference, not a new item. Each offset is a line start; ``start`` is never one.
    """
    breaks: list[int] = []
    pos = start
    prev: str | None = None
    for line in text[start:end].split("\n"):
        if prev is not None and line.strip() and _opens_paragraph(prev.rstrip(), line, typical_line):
            breaks.append(pos)
        prev = line
        pos += len(line) + 1
    return breaks
