"""Line-end hyphens of PDF text: PDFium's marker resolved into a soft break or a compound.

PDFium replaces a hyphen that ends a line before a letter with U+FFFE and drops the line break
(``core/fpdftext/ cpdf_textpage.cpp``). It does not know a soft break (``vis-itors``) from a
compound (``FAA-approved``, ``twenty-four``), so we decide from the document itself: the hyphen
stays when either side is not purely letters, when the right side starts with a capital or the left
side is an acronym, when the hyphenated form occurs elsewhere in the document, or when the left side
is a common compound prefix (``non``, ``self``, ...) and the joined word occurs nowhere; for the
prefixes that also begin plain words (``ex``, ``all``, ``anti``, ``multi``, ``post``) the right side
must also stand as a word of its own elsewhere (``ex-officio`` beside ``officio``, but ``ex-
panding`` is ``expanding``). Otherwise the halves are joined. The line break is not restored either
way (the word is whole on one line, as PDFium returns it).
"""

from __future__ import annotations

import bisect
import re
from collections import Counter

HYPHEN_MARKER = "\ufffe"
"""PDFium's line-end hyphen marker (older PDFium builds: U+0002, mapped to this one)."""

_COMPOUND_PREFIXES = frozenset({
    "non", "self", "cross", "well", "ex", "anti", "multi", "half", "twenty", "thirty", "forty",
    "fifty", "sixty", "seventy", "eighty", "ninety", "all", "post", "semi", "quasi",
})
_WORD_STARTS = frozenset({"ex", "all", "anti", "multi", "post"})
"""Compound prefixes that also begin many plain words (``expand``, ``allocate``, ``anticipate``)."""
_WORD = re.compile(r"[^\W\d_]+")
_HYPHENATED = re.compile(r"[^\W\d_]+-[^\W\d_]+")
_MARKED = re.compile(rf"(\S*?)([^\W\d_]*){HYPHEN_MARKER}([^\W\d_]*)")


def resolve_hyphens(pages: list[str]) -> list[str]:
    """Replace every :data:`HYPHEN_MARKER` with ``""`` (soft break) or ``"-"`` (compound).

    The decision uses the words of all ``pages`` together (see the module docstring).
    Returns new page texts; pages without a marker are returned unchanged.
    """
    if not any(HYPHEN_MARKER in page for page in pages):
        return list(pages)
    whole = "\n".join(pages)
    plain = whole.replace(HYPHEN_MARKER, " ")
    words = Counter(w.lower() for w in _WORD.findall(plain))
    # Words that stand on their own somewhere, outside any hyphen-marked fragment.
    elsewhere = sorted({w.lower() for w in _WORD.findall(_MARKED.sub(" ", whole))})

    def stands_alone(word: str) -> bool:
        """``word`` or another form of it (``insure``: ``insured``, ``insurance``) occurs on its own."""
        word = word[:-1] if len(word) >= 5 else word
        i = bisect.bisect_left(elsewhere, word)
        return i < len(elsewhere) and elsewhere[i].startswith(word)
    hyphenated = {w.lower() for w in _HYPHENATED.findall(plain)}

    def decide(m: re.Match[str]) -> str:
        """The marked hyphen resolved: kept (compound) or dropped (soft line-end break)."""
        lead, left, right = m.group(1), m.group(2), m.group(3)
        keep = (
            not left
            or not right
            or right[0].isupper()
            or any(ch.isupper() for ch in left[1:])
            or f"{left}-{right}".lower() in hyphenated
            or (
                left.lower() in _COMPOUND_PREFIXES
                and (left + right).lower() not in words
                and (left.lower() not in _WORD_STARTS or stands_alone(right.lower()))
            )
            or (lead and (lead[-1].isdigit() or lead[-1] in "-/_"))
        )
        return f"{lead}{left}{'-' if keep else ''}{right}"

    return [_MARKED.sub(decide, page) if HYPHEN_MARKER in page else page for page in pages]
