"""Clause units for triage from the document's structure, whatever chunk size the ingest used.

A unit is one numbered section (its ``(a)``/``(i)`` items folded in) with its heading path,
rebuilt from the chunks' section spans (absolute offsets of whole sections, so a section the
chunker split over several chunks comes back whole, and overlap text is not repeated). A
section over :data:`UNIT_MAX_TOKENS` (estimated tokens; the design's policy chunk cap, so three
units fit the 1,200-token clause band) is split at paragraph joints into parts ``4.2#1``,
``4.2#2``, ...; a heading line inside a long section (a short line with no closing
punctuation, such as ``Exclusions``) starts a new part and joins the heading path of the parts
below it. A paragraph alone over the cap is split at sentence ends, then at words.

Each unit points at the chunk that holds most of its text (its vector ranks the unit in the
dense ranking; its id is what a citation names).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from longdoc.core.models import Chunk
from longdoc.core.tokens import estimate_tokens

UNIT_MAX_TOKENS = 400
"""Cap of one clause unit's text (estimated tokens): the design's policy chunk cap (docs/architecture.md)."""
MIN_UNIT_TOKENS = 8
"""A span shorter than this (estimated tokens) is a heading alone, not a clause."""

_ENDS_SENTENCE = re.compile(r"[.:;!?)\]\"”]\s*$")
_STARTS_PARAGRAPH = re.compile(r"^\s*(?:[\"“(\[]|\d{1,3}[.)]\s|[a-z]{1,3}[.)]\s|[A-Z•\-–])")
_SENTENCE_END = re.compile(r"(?<=[.;:!?])\s+(?=[\"“(A-Z0-9])")


@dataclass(frozen=True)
class Unit:
    """One clause unit: cited id (``4.2``, ``4.2#1``), heading path, text, and where it sits.

    ``start`` / ``end`` are absolute character offsets in the document text; ``chunk_id`` is the
    chunk holding most of it.
    """

    unit_id: str
    heading_path: tuple[str, ...]
    text: str
    start: int
    end: int
    chunk_id: str


def document_text(chunks: Sequence[Chunk]) -> str:
    """The document text the chunks cover (``text == doc[char_start:char_end]``); gaps become newlines."""
    size = max((c.char_end for c in chunks), default=0)
    buf = ["\n"] * size
    for chunk in chunks:
        buf[chunk.char_start:chunk.char_end] = list(chunk.text)
    return "".join(buf)


def _sections(chunks: Sequence[Chunk]) -> list[tuple[str | None, tuple[str, ...], int, int]]:
    """Whole sections ``(id, heading path, start, end)`` in document order, items folded into their section."""
    seen: dict[tuple[int, int], tuple[str | None, tuple[str, ...]]] = {}
    for chunk in chunks:
        spans = chunk.section_spans or []
        if not spans:
            seen.setdefault((chunk.char_start, chunk.char_end), (chunk.section_id, tuple(chunk.heading_path)))
        for s in spans:
            seen.setdefault((s.char_start, s.char_end), (s.section_id, tuple(s.heading_path)))
    ordered = sorted(seen.items())
    out: list[tuple[str | None, tuple[str, ...], int, int]] = []
    for (start, end), (sid, path) in ordered:
        if out and start < out[-1][3]:  # nested or overlapping span: already inside the previous section
            prev = out[-1]
            out[-1] = (prev[0], prev[1], prev[2], max(prev[3], end))
            continue
        if out and _base(out[-1][0]) == _base(sid):  # an item, or the rest, of the section before
            out[-1] = (out[-1][0] and _base(out[-1][0]), out[-1][1], out[-1][2], end)
        else:
            out.append((sid, path, start, end))
    return out


def _base(section_id: str | None) -> str | None:
    """A section id without split suffix and items: ``3(2)#5`` -> ``3``; None stays None."""
    if section_id is None:
        return None
    bare = section_id.split("#", 1)[0]
    return bare.split("(", 1)[0].strip() or bare


def _is_heading(line: str, previous: str) -> bool:
    """A short line without closing punctuation after a finished line: a heading inside a section."""
    words = line.split()
    return (0 < len(words) <= 8 and len(line) <= 70 and not _ENDS_SENTENCE.search(line)
            and line[:1].isupper() and (not previous or bool(_ENDS_SENTENCE.search(previous))))


def paragraphs(text: str) -> list[tuple[int, int, bool]]:
    """``(start, end, is_heading)`` of the paragraphs of ``text``: blank lines, or a line that ends a
    sentence followed by one that starts a paragraph (a capital, a quote, an item marker), are joints."""
    out: list[tuple[int, int, bool]] = []
    pos, start, previous = 0, 0, ""
    lines = text.splitlines(keepends=True)
    for i, raw in enumerate(lines):
        line = raw.strip()
        heading = _is_heading(line, previous) and i + 1 < len(lines)
        joint = (not line or heading or (previous and _ENDS_SENTENCE.search(previous)
                                          and _STARTS_PARAGRAPH.match(line)))
        if joint and pos > start:
            out.append((start, pos, False))
            start = pos
        if heading:
            out.append((pos, pos + len(raw), True))
            start = pos + len(raw)
        pos += len(raw)
        previous = line if line else previous
    if pos > start:
        out.append((start, pos, False))
    return [p for p in out if text[p[0]:p[1]].strip()]


def _cut_long(text: str, start: int, end: int, cap: int) -> list[tuple[int, int]]:
    """Pieces of ``text[start:end]`` of at most ``cap`` tokens each: at sentence ends, then at spaces."""
    cuts = [start] + [start + m.end() for m in _SENTENCE_END.finditer(text[start:end])] + [end]
    pieces: list[tuple[int, int]] = []
    a = start
    for i in range(1, len(cuts)):
        if estimate_tokens(text[a:cuts[i]]) > cap and cuts[i - 1] > a:
            pieces.append((a, cuts[i - 1]))
            a = cuts[i - 1]
    pieces.append((a, end))
    out: list[tuple[int, int]] = []
    for a, b in pieces:
        while estimate_tokens(text[a:b]) > cap:
            mid = text.rfind(" ", a, a + max(1, (b - a) * cap // max(estimate_tokens(text[a:b]), 1)))
            mid = mid if mid > a else a + (b - a) // 2
            out.append((a, mid))
            a = mid
        out.append((a, b))
    return out


def _parts(text: str, cap: int) -> list[tuple[int, int, tuple[str, ...]]]:
    """``(start, end, sub-headings)`` of the parts of one section's text, each at most ``cap`` tokens."""
    parts: list[tuple[int, int, tuple[str, ...]]] = []
    heads: tuple[str, ...] = ()
    cur: tuple[int, int] | None = None
    for a, b, heading in paragraphs(text):
        if heading:
            if cur:
                parts.append((*cur, heads))
                cur = None
            heads = (text[a:b].strip(),)
            continue
        if estimate_tokens(text[a:b]) > cap:
            if cur:
                parts.append((*cur, heads))
                cur = None
            parts += [(x, y, heads) for x, y in _cut_long(text, a, b, cap)]
        elif cur is None:
            cur = (a, b)
        elif estimate_tokens(text[cur[0]:b]) > cap:
            parts.append((*cur, heads))
            cur = (a, b)
        else:
            cur = (cur[0], b)
    if cur:
        parts.append((*cur, heads))
    return parts


def _chunk_of(chunks: Sequence[Chunk], start: int, end: int) -> str:
    best = max(chunks, key=lambda c: (min(c.char_end, end) - max(c.char_start, start), -c.ordinal))
    return best.chunk_id


def clause_units(chunks: Sequence[Chunk], *, cap: int = UNIT_MAX_TOKENS, preamble: str = "preamble",
                 count: Callable[[str], int] = estimate_tokens) -> list[Unit]:
    """The clause units of one document version's chunks, in document order (see the module docstring).

    ``cap`` is the unit cap in tokens as ``count`` measures them. A section within the cap is one
    unit with its own id; a longer one gives ``id#1``, ``id#2``, ... Heading-only spans (under
    :data:`MIN_UNIT_TOKENS`) are left out. Returns ``[]`` for no chunks.
    """
    chunks = sorted(chunks, key=lambda c: c.ordinal)
    if not chunks:
        return []
    doc = document_text(chunks)
    out: list[Unit] = []
    used: dict[str, int] = {}
    for sid, path, start, end in _sections(chunks):
        body = doc[start:end]
        base = _base(sid) or preamble
        pieces = [(0, len(body), ())] if count(body.strip()) <= cap else _parts(body, cap)
        pieces = [p for p in pieces if estimate_tokens(body[p[0]:p[1]].strip()) >= MIN_UNIT_TOKENS]
        first = used.get(base, 0)  # the same number met again later (a parse that lost a heading): go on counting
        used[base] = first + len(pieces)
        for n, (a, b, heads) in enumerate(pieces, start=first + 1):
            uid = base if len(pieces) == 1 and not first else f"{base}#{n}"
            heads = heads if not path or heads != path[-1:] else ()
            text = body[a:b].strip()
            lead = len(body[a:b]) - len(body[a:b].lstrip())
            out.append(Unit(uid, path + heads, text, start + a + lead, start + a + lead + len(text),
                            _chunk_of(chunks, start + a, start + b)))
    return out
