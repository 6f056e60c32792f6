"""Runs too long for any embedder: a sentence far over ``max_tokens`` is cut, and its parts flagged.

The split pass cuts a long section at paragraphs, then a long paragraph at sentences; a
single sentence over ``max_tokens`` stays whole and is flagged ``oversize``. That is right
for a long legal sentence (the corpus has one of 2,100 tokens), but not for text with no
sentence end at all: a 2 MB single-paragraph file became one chunk of about 500,000 tokens
(148 s to embed locally, and far over Voyage's per-input context of 16K-32K tokens,
https://docs.voyageai.com/reference/embeddings-api).

So a sentence over :data:`HARD_LIMIT_FACTOR` x ``max_tokens`` (4,000 estimated tokens =
16,000 characters at the default 2,000; under Voyage's smallest context for voyage-law-2
and voyage-2, 16K, for any ASCII text, whose characters are at most one token each) is cut
into pieces of at most ``max_tokens``: at clause punctuation (``;`` ``:``, then ``,``, dashes
and closing brackets, CJK marks included), then between words, then, for a run with no
blank at all, every ``max_tokens x 4`` characters (weighted: a CJK character counts 4, so
a Chinese run is cut every ``max_tokens`` characters, :func:`~longdoc.core.tokens.weighted_chars`). Each piece is a :class:`Cut`; the chunks
built from them keep ``oversize = True`` (cut inside a sentence), and none is over
``max_tokens``. Sentences between ``max_tokens`` and the hard limit stay whole, as before, so
the chunk ids of the corpus do not change.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from longdoc.core.text import trim_span
from longdoc.core.tokens import CHARS_PER_TOKEN, estimate_tokens, weighted_chars
from longdoc.ingest.chunk.state import Draft

HARD_LIMIT_FACTOR = 2
"""A sentence over this many times ``max_tokens`` (estimated tokens) is cut; shorter ones stay whole."""

_JOINTS = (
    re.compile(r"[;:](?=\s)|[；：。！？]"),  # clause ends (and CJK sentence and clause marks)
    re.compile(r"[,\u2013\u2014)\]](?=\s)|[，、）]"),  # commas, dashes, closing brackets
    re.compile(r"\s+"),  # between words
)
"""Where a long run may be cut, strongest first; a cut falls just after the match."""


class Cut(NamedTuple):
    """A piece of a sentence that had to be cut: ``text[start:end]``, at most ``max_tokens``."""

    start: int
    end: int


def cut_long_sentence(text: str, start: int, end: int, max_tokens: int) -> list[tuple[int, int]]:
    """``[(start, end)]`` when the sentence is at most twice ``max_tokens``, else its :class:`Cut` pieces.

    Pieces are trimmed of surrounding whitespace, in order, cover every non-blank
    character of the sentence, and each is at most ``max_tokens`` estimated tokens.
    """
    if estimate_tokens(text[start:end]) <= HARD_LIMIT_FACTOR * max_tokens:
        return [(start, end)]
    max_chars = max(1, max_tokens * CHARS_PER_TOKEN)
    pieces: list[tuple[int, int]] = []
    for a, b in _pack(text, start, end, max_chars, 0, not text[start:end].isascii()):
        a, b = trim_span(text, a, b)
        if a < b:
            pieces.append(Cut(a, b))
    return pieces


def _pack(text: str, start: int, end: int, max_chars: int, level: int, weighted: bool) -> list[tuple[int, int]]:
    """Spans of ``text[start:end]`` of at most ``max_chars``, cut at joints of ``level`` or weaker, packed greedily.

    Lengths are :func:`~longdoc.core.tokens.weighted_chars` when ``weighted`` (text with
    non-ASCII characters), else plain ``end - start`` (the same number, without slicing).
    """
    if (weighted_chars(text[start:end]) if weighted else end - start) <= max_chars:
        return [(start, end)]
    if level == len(_JOINTS):  # no joint at all: a hard cut every max_chars (weighted) characters
        return _hard_cuts(text, start, end, max_chars)
    cuts = [m.end() for m in _JOINTS[level].finditer(text, start, end)]
    segments: list[tuple[int, int]] = []
    for a, b in zip([start, *cuts], [*cuts, end], strict=True):
        too_long = (weighted_chars(text[a:b]) if weighted else b - a) > max_chars
        segments.extend(_pack(text, a, b, max_chars, level + 1, weighted) if too_long else [(a, b)])
    packed: list[tuple[int, int]] = []
    used = 0  # weighted chars of packed[-1] (segments are contiguous, so weights add up)
    for a, b in segments:
        w = weighted_chars(text[a:b]) if weighted else b - a
        if packed and used + w <= max_chars:
            packed[-1], used = (packed[-1][0], b), used + w
        elif a < b:
            packed.append((a, b))
            used = w
    return packed


def _hard_cuts(text: str, start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """``text[start:end]`` in consecutive spans of at most ``max_chars`` weighted chars (the last may be shorter)."""
    if text[start:end].isascii():  # every character weighs 1: the plain cut
        return [(i, min(i + max_chars, end)) for i in range(start, end, max_chars)]
    spans: list[tuple[int, int]] = []
    a, used = start, 0
    for i in range(start, end):
        w = weighted_chars(text[i])
        if used + w > max_chars and i > a:
            spans.append((a, i))
            a, used = i, 0
        used += w
    spans.append((a, end))
    return spans


def flag_cut_parts(parts: Sequence[Draft], units: Sequence[tuple[int, int]]) -> None:
    """Flag ``oversize`` on every part that holds a :class:`Cut` (a piece of a sentence cut inside)."""
    cuts = [u for u in units if isinstance(u, Cut)]
    for part in parts:
        if any(part.start <= c.start < part.end for c in cuts):
            part.oversize = True
