"""Clauses of the documents in force, ranked with the claim as the query, and the clause band.

A clause is one numbered section of a chunk (:attr:`~longdoc.core.models.Chunk.section_spans`),
its ``(a)``/``(i)`` items included: the unit handlers cite (``4.2``, ``4.2#1`` for a part of a
split section, ``Section 29``). Text outside every numbered section is cited by its heading path
(``Definitions > Accessories``), or ``preamble`` under no heading (:func:`longdoc.triage.units.clause_units`).
An endorsement's clause ids are prefixed with its doc_id (``home-water-endorsement:2``), so
they never collide with the wording's. Headings alone (under :data:`MIN_CLAUSE_TOKENS`) are
not clauses: their words are in the heading path of the clauses below them.

Ranking is a hybrid ranking (the shared :mod:`longdoc.search` machinery) over the pooled clauses of the
wording and its endorsements only (filter before ranking): BM25 over each clause's heading
path and text, the dense ranking of their chunks (each document's vectors asked for
separately, as the index filters by document version), fused by reciprocal rank fusion
with the dense ranking weighted :data:`DENSE_WEIGHT` (triage's own).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from longdoc.core.fence import NONCE_CHARS, fence
from longdoc.core.models import Chunk
from longdoc.core.ports import VectorIndex
from longdoc.core.tokens import estimate_tokens
from longdoc.search.bm25 import BM25, bm25_tokens
from longdoc.search.fusion import rrf

MIN_CLAUSE_TOKENS = 8
"""A span shorter than this (estimated tokens) is a heading alone, not a clause."""
PREAMBLE = "preamble"
DENSE_WEIGHT = 0.3
"""The dense ranking's weight in triage's fusion (BM25's is 1). Triage's to tune: it starts at the
value extraction measured for its own retrieval (0.3), and retuning extraction leaves it alone."""


@dataclass(frozen=True)
class Clause:
    """One clause: ``clause_id`` as cited, where it comes from, and its text (verbatim chunk text).

    ``key`` is unique in a pool (``chunk_id`` plus the span's position); ``order`` is its
    position in the pool (document order, wording first); ``tokens`` the estimate of its
    fenced block in the prompt.
    """

    key: str
    clause_id: str
    doc_id: str
    doc_version: str
    chunk_id: str
    heading_path: tuple[str, ...]
    text: str
    endorsement: bool
    order: int
    tokens: int


def clause_block(clause: Clause, nonce: str) -> str:
    """The clause as sent: fenced as the insurer's wording with its id, document and heading path."""
    return fence("wording", clause.text, nonce, clause=clause.clause_id, doc=clause.doc_id,
                 path=" > ".join(clause.heading_path))


def _spans(chunk: Chunk) -> list[tuple[str | None, int, int]]:
    """``(section id, start, end)`` of the chunk's spans, chunk-relative, items folded into their section."""
    spans = [(s.section_id, max(s.char_start, chunk.char_start) - chunk.char_start,
              min(s.char_end, chunk.char_end) - chunk.char_start) for s in chunk.section_spans]
    spans = [s for s in spans if s[2] > s[1]] or [(chunk.section_id, 0, len(chunk.text))]
    merged: list[tuple[str | None, int, int]] = []
    for sid, start, end in spans:
        if merged and merged[-1][0] is not None and sid is not None and sid.startswith(f"{merged[-1][0]}("):
            merged[-1] = (merged[-1][0], merged[-1][1], end)
        elif merged and merged[-1][0] == sid:
            merged[-1] = (sid, merged[-1][1], end)
        else:
            merged.append((sid, start, end))
    merged[0] = (merged[0][0], 0, merged[0][2])  # a chunk's overlap prefix belongs to its first clause
    return merged


def clauses_of(chunks: Sequence[Chunk], *, endorsement: bool = False, start: int = 0,
               count: Callable[[str], int] = estimate_tokens) -> list[Clause]:
    """The clauses of one document version's chunks, in document order (``order`` from ``start``);
    ``count`` measures a text in tokens (the offline estimate, or the token-counting endpoint with a key)."""
    out: list[Clause] = []
    for chunk in sorted(chunks, key=lambda c: c.ordinal):
        for i, (sid, begin, end) in enumerate(_spans(chunk)):
            text = chunk.text[begin:end].strip()
            if estimate_tokens(text) < MIN_CLAUSE_TOKENS:
                continue
            cid = sid or PREAMBLE
            clause = Clause(f"{chunk.chunk_id}/{i}", f"{chunk.doc_id}:{cid}" if endorsement else cid, chunk.doc_id,
                            chunk.doc_version, chunk.chunk_id, tuple(chunk.heading_path_of(begin)), text,
                            endorsement, start + len(out), 0)
            out.append(_sized(clause, count))
    return out


def _sized(clause: Clause, count: Callable[[str], int] = estimate_tokens) -> Clause:
    """``clause`` with its ``tokens``: its rendered block measured with ``count`` (tokens)."""
    tokens = count(clause_block(clause, "0" * NONCE_CHARS))
    return Clause(**{**clause.__dict__, "tokens": tokens})


def base_id(clause_id: str) -> str:
    """A clause id without its split-part suffix: ``4.2#1`` -> ``4.2`` (gold ids name whole clauses)."""
    return clause_id.split("#", 1)[0]


def enclosing_ids(clause_id: str) -> list[str]:
    """The clause id without its split-part suffix, then each enclosing level: ``Section 22(g)(ii)#2`` ->
    ``["Section 22(g)(ii)", "Section 22(g)", "Section 22"]`` (an item matches the gold id of its clause,
    as :func:`longdoc.eval.scoring.enclosing_section_keys` does for extraction)."""
    out = [base_id(clause_id)]
    while out[-1].endswith(")") and "(" in out[-1]:
        out.append(out[-1][: out[-1].rindex("(")].rstrip())
    return out


def gold_keys(clause_id: str) -> set[str]:
    """The gold ids a unit with ``clause_id`` counts as: the id itself, so a part id the band prints
    (``4.2#1``, ``Section D#2``) names that part only, and each of :func:`enclosing_ids` (``4.2`` matches
    every part of 4.2 and its enclosing levels). The scorer's match and the gold check's (issue 31).
    Keys are case-folded (compare a gold id's :meth:`str.casefold`): a gold file may write
    ``General Conditions > 1`` for the unit ``GENERAL CONDITIONS > 1``."""
    return {k.casefold() for k in (clause_id, *enclosing_ids(clause_id))}


def bm25_ranking(clauses: Sequence[Clause], query: str) -> list[str]:
    """Clause keys by BM25 score of ``query`` over heading path and text, best first (zero scores left out)."""
    index = BM25([bm25_tokens(" ".join(c.heading_path) + " " + c.text) for c in clauses])
    return [clauses[i].key for i, _ in index.rank(bm25_tokens(query))]


def dense_ranking(clauses: Sequence[Clause], index: VectorIndex, vector: Sequence[float]) -> list[str]:
    """Clause keys by their chunk's similarity to ``vector`` (every document of the pool asked), best first."""
    scores: dict[str, float] = {}
    versions = {(c.doc_id, c.doc_version) for c in clauses}
    for doc_id, version in sorted(versions):
        chunk_count = len({c.chunk_id for c in clauses if c.doc_id == doc_id})
        for chunk_id, score in index.query(vector, doc_id, version, max(chunk_count, 1) * 2):
            scores[chunk_id] = max(score, scores.get(chunk_id, float("-inf")))
    ranked = sorted((c for c in clauses if c.chunk_id in scores), key=lambda c: (-scores[c.chunk_id], c.order))
    return [c.key for c in ranked]


def rank(clauses: Sequence[Clause], query: str, *, index: VectorIndex | None = None,
         vector: Sequence[float] | None = None, dense_weight: float = DENSE_WEIGHT) -> list[Clause]:
    """Every clause of the pool, best first: hybrid with an index and a query vector, else BM25.

    ``dense_weight`` is the dense ranking's weight in the fusion (BM25's is 1). Clauses neither
    ranking returned follow in pool order, so every clause has a rank.
    """
    if not clauses:
        return []
    keys = bm25_ranking(clauses, query)
    if index is not None and vector is not None:
        keys = [k for k, _ in rrf([dense_ranking(clauses, index, vector), keys], weights=[dense_weight, 1.0])]
    seen = set(keys)
    keys += [c.key for c in clauses if c.key not in seen]
    by_key = {c.key: c for c in clauses}
    return [by_key[k] for k in keys]


@dataclass(frozen=True)
class Band:
    """The clause band: clauses in rank order, their tokens, the limit, and the top-over-band flag."""

    clauses: list[Clause]
    tokens: int
    limit: int
    top_over_band: bool


def fill_band(ranked: Sequence[Clause], limit: int) -> Band:
    """Take clauses in rank order until the next would pass ``limit`` tokens.

    The top clause is always taken, even when it alone is over the band (``top_over_band``):
    the model still sees the best evidence, and the prompt counts its tokens.
    """
    chosen: list[Clause] = []
    used = 0
    for clause in ranked:
        if chosen and used + clause.tokens > limit:
            break
        chosen.append(clause)
        used += clause.tokens
        if used > limit:
            break
    return Band(chosen, used, limit, bool(ranked) and ranked[0].tokens > limit)


def units_as_clauses(chunks: Sequence[Chunk], *, endorsement: bool = False, start: int = 0,
                     count: Callable[[str], int] = estimate_tokens) -> list[Clause]:
    """The clause units of one document version (:func:`longdoc.triage.units.clause_units`: sections
    capped at 400 tokens and split at paragraph joints as ``4.2#1``, whatever the chunk size), as
    :class:`Clause` objects in document order (``order`` from ``start``), each sized with ``count``."""
    from longdoc.triage.units import clause_units

    out: list[Clause] = []
    units = clause_units(chunks, preamble=PREAMBLE)
    doc_id = chunks[0].doc_id if chunks else ""
    version = chunks[0].doc_version if chunks else ""
    for unit in units:
        cid = f"{doc_id}:{unit.unit_id}" if endorsement else unit.unit_id
        clause = Clause(f"{doc_id}:{version}@{unit.start}", cid, doc_id, version, unit.chunk_id, unit.heading_path,
                        unit.text, endorsement, start + len(out), 0)
        out.append(_sized(clause, count))
    return out
