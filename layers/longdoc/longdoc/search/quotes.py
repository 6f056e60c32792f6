"""Finding a quote in a text, whitespace differences aside (the check behind every citation).

Only whitespace is normalised: runs of it compare as one space, so a quote copied across a
line break still matches; case, punctuation and spelling must be exact.
"""

from __future__ import annotations

import re

_WS = re.compile(r"\s+")


def _normalise_with_map(text: str) -> tuple[str, list[int]]:
    """Collapse whitespace runs to one space; return the text and each char's source offset."""
    out: list[str] = []
    offsets: list[int] = []
    for m in re.finditer(r"\s+|\S+", text):
        if m.group().isspace():
            if out and out[-1] != " ":
                out.append(" ")
                offsets.append(m.start())
        else:
            for i, ch in enumerate(m.group()):
                out.append(ch)
                offsets.append(m.start() + i)
    return "".join(out), offsets


def find_quotes(text: str, quote: str) -> list[tuple[int, int]]:
    """Every occurrence of ``quote`` in ``text`` ignoring whitespace differences, in order.

    Returns ``(start, end)`` offsets into ``text``; empty when the quote is not there (or
    is blank). Occurrences do not overlap.
    """
    needle = _WS.sub(" ", quote).strip()
    if not needle:
        return []
    hay, offsets = _normalise_with_map(text)
    found: list[tuple[int, int]] = []
    at = hay.find(needle)
    while at >= 0:
        found.append((offsets[at], offsets[at + len(needle) - 1] + 1))
        at = hay.find(needle, at + len(needle))
    return found


def find_quote(text: str, quote: str) -> tuple[int, int] | None:
    """Locate ``quote`` in ``text`` ignoring whitespace differences.

    Returns ``(start, end)`` offsets into ``text`` of the first occurrence, or None.
    """
    found = find_quotes(text, quote)
    return found[0] if found else None
