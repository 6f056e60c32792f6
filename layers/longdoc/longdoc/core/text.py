"""Text utilities shared by every pipeline: sentence spans, Roman numerals and one-line messages.

Offsets are character offsets into the text passed in (Python ``str`` indexes), half-open
``[start, end)``. Nothing here changes text; the functions only find joints in it.

Sentence rule: a sentence ends at ``.``, ``!`` or ``?`` (closing quotes and brackets
included) followed by whitespace and a capital letter, a digit or an opening quote or
bracket, unless the word before the stop is a common (legal) abbreviation such as
``Sec.``, ``Inc.``, ``e.g.`` or a single letter (``J. Smith``). Line breaks inside a
sentence do not end it. A CJK stop (``。``, ``！``, ``？``, or a full-width ``．`` not after a
digit, which would be a number such as ``１．２``), closing brackets and quotes included,
ends a sentence whatever follows: Chinese and Japanese put no space between sentences.
"""

from __future__ import annotations

import re
from itertools import pairwise

_SENT_END_RE = re.compile(r"[.!?][\"'”’)\]]*(?=\s+[\"'“‘(\[]?[A-Z0-9])")
"""A sentence stop: terminal punctuation (closers included) before whitespace and a sentence start."""
_CJK_END_RE = re.compile(r"(?:[。！？]|(?<![0-9０-９])．)[\"'”’)\]」』）】〕〉》]*")
"""A CJK sentence stop (closers included): no space or capital needed after it. A separate
pattern, only run on non-ASCII text, so ASCII text is scanned exactly as fast as before."""

_ABBREV = {
    "e.g", "i.e", "etc", "inc", "ltd", "co", "corp", "no", "nos", "sec", "art", "arts", "para",
    "paras", "cf", "vs", "v", "mr", "mrs", "ms", "dr", "st", "jr", "sr", "u.s", "u.k", "p", "pp",
    "fig", "vol", "ch", "cl", "approx", "dept", "est", "op", "seq", "viz", "al", "n.v", "s.a",
    "b.v", "l.p", "llc", "plc", "gmbh", "ag", "jan", "feb", "mar", "apr", "jun", "jul", "aug",
    "sep", "sept", "oct", "nov", "dec",
}
"""Words (lower case, without their final dot) whose dot never ends a sentence."""



def is_abbreviation(word: str) -> bool:
    """Whether ``word`` (any case, with or without its final dot: ``Inc.``, ``e.g``) is one of the common
    (legal) abbreviations whose dot never ends a sentence (:data:`_ABBREV`)."""
    return word.lower().rstrip(".") in _ABBREV


_ROMAN_VALUES = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100}
_ROMAN = ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"),
          (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"))


def sentence_breaks(text: str, start: int, end: int) -> list[int]:
    """Return the offsets (into ``text``, ascending) where a new sentence starts inside ``text[start:end]``.

    Each offset is the first non-space character after a sentence stop (see the module
    docstring); ``start`` itself is never included, and a stop whose next sentence would
    begin at or after ``end`` gives no offset.
    """
    breaks: list[int] = []
    segment = text[start:end]
    for m in _SENT_END_RE.finditer(segment):
        before = segment[max(0, m.start() - 12) : m.start()]
        word = re.split(r"[\s(\[]", before)[-1].lower().rstrip(".")
        if word in _ABBREV or (len(word) == 1 and word.isalpha()):
            continue
        _append_next_start(breaks, segment, m.end(), start)
    if not segment.isascii():
        for m in _CJK_END_RE.finditer(segment):
            _append_next_start(breaks, segment, m.end(), start)
        breaks = sorted(set(breaks))
    return breaks


def _append_next_start(breaks: list[int], segment: str, nxt: int, offset: int) -> None:
    """Append ``offset`` + the first non-space position of ``segment`` from ``nxt``, if any (in place)."""
    while nxt < len(segment) and segment[nxt].isspace():
        nxt += 1
    if nxt < len(segment):
        breaks.append(offset + nxt)


def trim_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Return ``(start, end)`` moved inwards past whitespace of ``text``; ``start == end`` when blank."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Return ``(start, end)`` offsets of the sentences of ``text`` (trimmed, in order).

    Uses the same boundary rules as the chunker (terminal punctuation followed by a capital,
    digit or opening quote, with common legal abbreviations such as ``Sec.`` and ``Inc.`` kept
    inside the sentence, or a CJK stop such as ``。``, see the module docstring); line breaks inside a sentence do not end it. Blank text gives ``[]``.
    """
    cuts = [0, *sentence_breaks(text, 0, len(text)), len(text)]
    out: list[tuple[int, int]] = []
    for a, b in pairwise(cuts):
        a, b = trim_span(text, a, b)
        if a < b:
            out.append((a, b))
    return out


def roman_to_int(token: str) -> int | None:
    """Value of a Roman numeral made of I, V, X, L, C in either case (``"iv"`` -> 4); None otherwise.

    Subtractive pairs are read as such (``"xl"`` -> 40); the numeral is not checked for
    canonical form (``"iiii"`` -> 4). The empty string and any other letter give None.
    """
    token = token.lower()
    if not token or any(ch not in _ROMAN_VALUES for ch in token):
        return None
    total = 0
    for i, ch in enumerate(token):
        v = _ROMAN_VALUES[ch]
        total += -v if i + 1 < len(token) and _ROMAN_VALUES[token[i + 1]] > v else v
    return total


def int_to_roman(n: int) -> str:
    """Upper-case Roman numeral of ``n`` >= 1 (``4`` -> ``IV``, ``1999`` -> ``MCMXCIX``)."""
    out = []
    for value, symbol in _ROMAN:
        count, n = divmod(n, value)
        out.append(symbol * count)
    return "".join(out)


def cut_near_space(text: str, limit: int, reach: int = 200) -> str:
    """``text``'s first ``limit`` characters, cut back to the last space when one is within ``reach``
    characters of the cut (a word is not split), else where the limit falls (a script written without
    spaces keeps its ``limit`` characters instead of losing all after the last space). ``text`` itself
    when it is not longer than ``limit``."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return cut[:space] if space > 0 and space >= limit - reach else cut


def one_line(text: str, limit: int = 400) -> str:
    """Collapse a message to one line of at most ``limit`` characters (a longer one ends with ``…``)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
