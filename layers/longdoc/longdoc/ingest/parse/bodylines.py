"""Lines that are body however often they repeat: what introduces a list, and the list after it.

Used by the running-furniture detection (:func:`~longdoc.ingest.parse.cleanup.find_furniture`,
issue 27): ``We will not pay for loss or damage caused by:`` opening half the pages of a policy is
the heading of the exclusions that follow, never a running header.
"""

from __future__ import annotations

import re

_LIST_ITEM = re.compile(r"^\s*(?:\(?(?:[a-z]{1,2}|[ivxlc]{1,5}|\d{1,3})\)|\d{1,3}\.(?!\d)|[•▪◦·\-–*])\s")
"""The start of a list item: ``(a)``, ``b)``, ``(iv)``, ``3)``, ``3.``, a bullet or a dash."""


def introduces_list(lines: list[str], i: int) -> bool:
    """Whether line ``i`` introduces what follows: it ends with ``:`` (``We will not pay for loss or
    damage caused by:``), or the next non-blank line is a list item. Such a line is body, however
    often it repeats."""
    if lines[i].rstrip().endswith(":"):
        return True
    following = next((line for line in lines[i + 1:] if line.strip()), "")
    return bool(_LIST_ITEM.match(following))


def body_lines(lines: list[str]) -> set[int]:
    """Lines that are never furniture: those ending with ``:``, and the list items that follow one
    (``(a) wear and tear;`` after ``... caused by:``), item after item."""
    body: set[int] = set()
    previous: int | None = None
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        if line.rstrip().endswith(":") or (previous in body and _LIST_ITEM.match(line)):
            body.add(i)
        previous = i
    return body
