"""Map units: the document's sections as headed pieces, grouped into whole-section groups, ranked by focus.

A *piece* is the text of one section inside one chunk (a chunk holding sections 9, 10 and
11 gives three pieces), under the header line ``[doc: policy.pdf | section: 3.2 | page: 14]``.
Chunks are already cut at the document's joints (a long section is split at its own
paragraphs and sentences, ``4.2#1``, ``4.2#2``), so a *group* is a run of whole consecutive
chunks of about ``min_tokens``-``max_tokens`` tokens that closes, once big enough, where a
new top-level part of the document starts. The overlap a continuation chunk repeats from
the chunk before is left out, so no text is summarised twice.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from longdoc.core.batching import pack
from longdoc.core.models import Chunk
from longdoc.core.tokens import estimate_tokens
from longdoc.summarize.models import Group

PREAMBLE = "preamble"
"""Citation id of text before the first numbered section (a cover page, recitals without numbers)."""

_WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)
_STOP = frozenset({
    "the", "and", "for", "any", "are", "was", "were", "with", "this", "that", "from", "under", "shall", "such",
    "their", "there", "these", "which", "will", "within", "without", "into", "upon", "other", "than", "all",
    "has", "have", "not", "its", "may", "must", "each", "been", "being", "what", "about", "summary", "summarise",
})


@dataclass(frozen=True)
class Piece:
    """The text of one section inside one chunk: ``chunk.text[offset:offset + len(text)] == text``."""

    section_id: str
    chunk_id: str
    offset: int
    text: str
    page_start: int | None
    page_end: int | None
    page_label: str | None
    heading_path: tuple[str, ...]


def cite_id(section_id: str | None) -> str:
    """The id a statement cites for a stored section id: ``4.2#2`` -> ``4.2``, None -> ``preamble``."""
    return section_id.split("#")[0] if section_id else PREAMBLE


def pieces_of(chunk: Chunk) -> list[Piece]:
    """The chunk's text cut at its section starts (overlap with the previous chunk left out), blank pieces dropped."""
    begin = min(chunk.overlap_chars, len(chunk.text))
    cuts = {begin, len(chunk.text)}
    for span in chunk.section_spans:
        relative = span.char_start - chunk.char_start
        if begin < relative < len(chunk.text):
            cuts.add(relative)
    ordered = sorted(cuts)
    merged: list[tuple[str, int, int]] = []
    for a, b in zip(ordered, ordered[1:], strict=False):
        sid = cite_id(chunk.section_of(a))
        if merged and merged[-1][0] == sid:
            merged[-1] = (sid, merged[-1][1], b)
        else:
            merged.append((sid, a, b))
    out: list[Piece] = []
    for sid, a, b in merged:
        while a < b and chunk.text[a].isspace():
            a += 1
        while b > a and chunk.text[b - 1].isspace():
            b -= 1
        if a < b:
            out.append(Piece(sid, chunk.chunk_id, a, chunk.text[a:b], chunk.page_of(a), chunk.page_of(b - 1),
                             chunk.label_of(a), tuple(chunk.heading_path_of(a))))
    return out


def header(piece: Piece, source: str) -> str:
    """``[doc: policy.pdf | section: 3.2 | page: 14]`` (``14-15`` across pages, ``14 (p. 12)`` with a printed label)."""
    if piece.page_start is None:
        page = "n/a"
    else:
        page = str(piece.page_start)
        if piece.page_label and piece.page_label != page:
            page += f" (p. {piece.page_label})"
        if piece.page_end is not None and piece.page_end != piece.page_start:
            page += f"-{piece.page_end}"
    return f"[doc: {source} | section: {piece.section_id} | page: {page}]"


def render(piece: Piece, source: str) -> str:
    """The header line, then the piece's own text."""
    return f"{header(piece, source)}\n{piece.text}"


def _top(chunk: Chunk) -> str:
    """The top-level part a chunk belongs to (its first heading, else its section's root)."""
    if chunk.heading_path:
        return chunk.heading_path[0]
    return cite_id(chunk.section_id).split("(")[0].split(".")[0]


def chunk_tokens(chunk: Chunk, count: Callable[[str], int] = estimate_tokens) -> int:
    """Tokens of the chunk's rendered pieces (headers included), each measured with ``count``
    (default: the offline estimate; a :class:`~longdoc.core.ports.TokenCounter`'s ``count_text``
    with a key)."""
    return sum(count(render(p, chunk.source)) + 1 for p in pieces_of(chunk))


def group_chunks(chunks: Sequence[Chunk], min_tokens: int = 1500, max_tokens: int = 3000,
                 count: Callable[[str], int] = estimate_tokens) -> list[list[Chunk]]:
    """Consecutive whole chunks in groups of about ``min_tokens``-``max_tokens`` estimated tokens.

    A group closes before a chunk that would take it over ``max_tokens``, and, once it has
    ``min_tokens``, before a chunk that opens a new top-level part. A chunk over
    ``max_tokens`` on its own (an oversize sentence) is a group of its own. Chunks without
    text after their overlap are skipped. ``count`` measures a text in tokens (see :func:`chunk_tokens`).
    """
    def cost(chunk: Chunk) -> int:
        return chunk_tokens(chunk, count)

    def new_part(current: list[Chunk], tokens: int, chunk: Chunk) -> bool:
        return tokens >= min_tokens and _top(chunk) != _top(current[-1])

    return list(pack((c for c in chunks if cost(c) > 0), cost, max_cost=max_tokens,
                     split_before=new_part))


def focus_terms(focus: str | None) -> list[str]:
    """Content-word stems (first 6 letters, lower case) of a focus; empty without one."""
    if not focus:
        return []
    return sorted({w.lower()[:6] for w in _WORD.findall(focus) if w.lower() not in _STOP})


def _stems(text: str) -> Counter[str]:
    return Counter(w.lower()[:6] for w in _WORD.findall(text))


def make_groups(chunks: Sequence[Chunk], focus: str | None, min_tokens: int = 1500,
                max_tokens: int = 3000, count: Callable[[str], int] = estimate_tokens) -> list[Group]:
    """The document's map groups, ranked: by focus relevance first (then document order), else document order.

    Relevance of a group = sum over the focus stems of ``log(1 + count) x idf`` (idf over
    the groups); lexical on purpose, so ranking needs no embedder and works offline.
    """
    grouped = group_chunks(chunks, min_tokens, max_tokens, count)
    terms = focus_terms(focus)
    counts = [_stems(" ".join(c.text for c in group)) for group in grouped]
    scores = []
    for stems in counts:
        score = 0.0
        for term in terms:
            df = sum(1 for c in counts if c[term])
            if stems[term]:
                score += math.log1p(stems[term]) * math.log(1 + len(counts) / df)
        scores.append(round(score, 4))
    order = sorted(range(len(grouped)), key=lambda i: (-scores[i], i)) if terms else list(range(len(grouped)))
    rank = {index: position for position, index in enumerate(order)}
    out = []
    for index, group in enumerate(grouped):
        sections = list(dict.fromkeys(p.section_id for c in group for p in pieces_of(c)))
        pages = [p for c in group for p in (c.page_start, c.page_end) if p is not None]
        out.append(Group(index=index, rank=rank[index], chunk_ids=[c.chunk_id for c in group], section_ids=sections,
                         page_start=min(pages) if pages else None, page_end=max(pages) if pages else None,
                         tokens=sum(chunk_tokens(c, count) for c in group), focus_score=scores[index]))
    return out


class SectionIndex:
    """Every piece of a document by citation id: what a statement's citations are checked against."""

    def __init__(self, chunks: Sequence[Chunk]):
        self.chunks = {c.chunk_id: c for c in chunks}
        self.pieces: dict[str, list[Piece]] = {}
        for chunk in chunks:
            for piece in pieces_of(chunk):
                self.pieces.setdefault(piece.section_id, []).append(piece)

    def covered(self, cited: str) -> list[Piece]:
        """The pieces a citation covers: the section itself and its items (``Section 1`` covers ``Section 1(a)``)."""
        return [p for sid, pieces in self.pieces.items() if sid == cited or sid.startswith(cited + "(")
                for p in pieces]

    def pieces_for(self, chunk_ids: Sequence[str]) -> list[Piece]:
        """The pieces of the given chunks, in order."""
        return [p for cid in chunk_ids if cid in self.chunks for p in pieces_of(self.chunks[cid])]
