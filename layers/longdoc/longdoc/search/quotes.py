"""Finding a quote in a text, typographic differences aside (the check behind every citation).

What compares equal (both the text and the quote are read this way; nothing else is normalised,
so case, punctuation, digits and spelling must be exact):

- whitespace: runs of it compare as one space, so a quote copied across a line break matches;
- ligatures: ``ﬀ ﬁ ﬂ ﬃ ﬄ`` (U+FB00-U+FB04, the ones PDF text layers carry) compare as the
  letters they join (``ﬁle`` = ``file``);
- soft hyphens (U+00AD, an invisible break point) are ignored;
- a line-wrap hyphen, a ``-`` between two letters whose gap holds a line break in the text
  (any whitespace in a quote, where the break was flattened to a space), reads both as the
  joined word and as the hyphenated one: ``pre-\\ncondition`` matches ``precondition`` and
  ``pre-condition``;
- an intra-word hyphen of the text (a ``-`` with letters on both sides, ``obli-gations``) is
  optional where the quote has the word unhyphenated: ingest keeps a ``.txt`` file's U+00AD as a
  visible ``-`` (EDGAR files use it as a real hyphen, ``book-running``), so ``obligations`` and
  ``bookrunning`` find it; a hyphen the quote has must be in the text.

Offsets returned are always offsets into the original text, so a citation stores the text's own
characters (``ﬁle`` stays ``ﬁle``). :func:`quote_problem` bounds a quote's length.
"""

from __future__ import annotations

import re

from longdoc.core.text import split_sentences

LIGATURES = {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl"}
"""Latin ligatures (Unicode Alphabetic Presentation Forms, U+FB00-U+FB04) and the letters they stand for."""
SOFT_HYPHEN = "\u00ad"

MAX_QUOTE_CHARS = 600
"""Longest quote accepted, in characters after whitespace collapsing: a deciding sentence or a
few (ours; the offline baseline cuts its quotes at the same 600)."""
MAX_QUOTE_SENTENCES = 4
"""Most sentences a quote may span (:func:`longdoc.core.text.split_sentences`)."""

_WRAP_TEXT = re.compile(r"(?<=[^\W\d_])-[^\S\n]*\n\s*(?=[^\W\d_])")
"""A line-wrap hyphen in a text: letter, ``-``, a gap holding a line break, letter."""
_LETTER = re.compile(r"[^\W\d_]")
"""One letter (any script)."""
_WRAP_QUOTE = re.compile(r"(?<=[^\W\d_])-\s+(?=[^\W\d_])")
"""A line-wrap hyphen in a quote: the break may have been flattened to spaces."""


def _fold(text: str, wraps: re.Pattern[str], keep_hyphen: bool) -> tuple[str, list[int]]:
    """``text`` read as the module docstring says, and each output character's offset in ``text``.

    ``keep_hyphen``: a line-wrap hyphen stays (``pre-condition``) instead of joining (``precondition``).
    """
    joins = {m.start(): m.end() for m in wraps.finditer(text)}
    out: list[str] = []
    offsets: list[int] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if i in joins:
            if keep_hyphen:
                out.append("-")
                offsets.append(i)
            i = joins[i]
            continue
        if ch == SOFT_HYPHEN:
            pass
        elif ch.isspace():
            if out and out[-1] != " ":
                out.append(" ")
                offsets.append(i)
        else:
            for letter in LIGATURES.get(ch, ch):
                out.append(letter)
                offsets.append(i)
        i += 1
    while out and out[-1] == " ":
        out.pop()
        offsets.pop()
    return "".join(out), offsets


def _hyphen_optional(needle: str) -> re.Pattern[str]:
    """``needle`` as a pattern in which the text may hold a ``-`` between any two of its adjacent
    letters (``obligations`` finds ``obli-gations``); the needle's own hyphens stay required."""
    parts: list[str] = []
    for i, ch in enumerate(needle):
        parts.append(re.escape(ch))
        if i + 1 < len(needle) and _LETTER.match(ch) and _LETTER.match(needle[i + 1]):
            parts.append("-?")
    return re.compile("".join(parts))


def find_quotes(text: str, quote: str) -> list[tuple[int, int]]:
    """Every occurrence of ``quote`` in ``text``, typographic differences aside (module docstring), in order.

    Returns ``(start, end)`` offsets into ``text``; empty when the quote is not there (or
    is blank). Occurrences do not overlap.
    """
    found: set[tuple[int, int]] = set()
    for keep in (False, True):
        needle = _fold(quote, _WRAP_QUOTE, keep)[0].strip()
        if not needle:
            return []
        hay, offsets = _fold(text, _WRAP_TEXT, keep)
        for match in _hyphen_optional(needle).finditer(hay):
            found.add((offsets[match.start()], offsets[match.end() - 1] + 1))
    ordered: list[tuple[int, int]] = []
    for span in sorted(found):
        if not ordered or span[0] >= ordered[-1][1]:
            ordered.append(span)
    return ordered


def find_quote(text: str, quote: str) -> tuple[int, int] | None:
    """Locate ``quote`` in ``text`` as :func:`find_quotes` does.

    Returns ``(start, end)`` offsets into ``text`` of the first occurrence, or None.
    """
    found = find_quotes(text, quote)
    return found[0] if found else None


def quote_problem(quote: str) -> str | None:
    """Why ``quote`` is too long to be a citation, or None when it is within bounds.

    Bounds: :data:`MAX_QUOTE_CHARS` characters (whitespace runs counted as one) and
    :data:`MAX_QUOTE_SENTENCES` sentences. The message is short and tells the model what to do.
    """
    flat = " ".join(quote.split())
    sentences = len(split_sentences(flat))
    if len(flat) > MAX_QUOTE_CHARS or sentences > MAX_QUOTE_SENTENCES:
        return (f"quote too long ({len(flat)} characters, {sentences} sentences; at most {MAX_QUOTE_CHARS} "
                f"and {MAX_QUOTE_SENTENCES}): quote the sentence that decides it")
    return None
