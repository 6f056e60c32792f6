"""Passage-level evidence for triage: a clause unit scored by its best item or sentence group.

A clause unit (up to 400 tokens, :mod:`longdoc.triage.units`) is often a list: an exclusions
section whose deciding line is one item of twenty, a claims-conditions block whose deciding duty
is one sentence. Scored as a whole, such a unit's one matching line is diluted by the rest (BM25's
length normalisation; a mean-pooled vector). Scoring a long document by its best passage
("MaxP", Dai & Callan, SIGIR 2019) keeps that line's evidence:

- **sparse** (:func:`passage_bm25_ranking`): BM25 over the units' :func:`items` (sentences and
  list items, each with its unit's heading path); a unit ranks by its best item;
- **dense** (:func:`dense_passage_ranking`): a unit's score is ``PASSAGE_MIX`` x its best
  :func:`passages` vector's cosine plus the rest x its whole-unit vector's, so a unit whose one
  group of sentences matches the query rises without losing what the whole unit says.

Measured in ``docs/benchmarks.md`` ("Triage: passage-level evidence"), offline, on two blind sets
of claims over wordings not in this repository and the two sets in ``tests/data/triage``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from longdoc.search.bm25 import BM25, bm25_tokens
from longdoc.triage.clauses import Clause

PASSAGE_WORDS = 100
"""Most words in one dense passage (sentences are grouped up to this; a longer sentence stays whole).
MiniLM reads 254 word pieces, about 180 English words, so a passage is read whole."""
PASSAGE_MIX = 0.5
"""Share of the best passage's cosine in a unit's dense score (the whole unit's has the rest)."""
MIN_ITEM_WORDS = 3
"""An item shorter than this (a bare heading, ``(a)``) is not scored on its own."""

_ITEM = re.compile(r"(?<=[.;:!?])\s+|\n(?=\s*(?:\(?[a-z0-9ivx]{1,4}[.)]|[•\-–]))")
"""Item joints: after a sentence end, ``;`` or ``:``, and before a line that starts a list item."""
_SENTENCE = re.compile(r"(?<=[.;:!?])\s+|\n\s*\n")


def items(text: str) -> list[str]:
    """The sentences and list items of a unit's ``text`` (each at least :data:`MIN_ITEM_WORDS` words);
    ``[text]`` when none is that long."""
    out = [p.strip() for p in _ITEM.split(text) if p and len(p.split()) >= MIN_ITEM_WORDS]
    return out or [text]


def passages(text: str, size: int = PASSAGE_WORDS) -> list[str]:
    """``text``'s sentences grouped in order into passages of at most ``size`` words (a longer
    sentence is a passage alone); ``[text]`` for a text with no sentence."""
    out: list[str] = []
    cur = ""
    for sentence in (s.strip() for s in _SENTENCE.split(text)):
        if not sentence:
            continue
        if cur and len(cur.split()) + len(sentence.split()) > size:
            out.append(cur)
            cur = sentence
        else:
            cur = f"{cur} {sentence}".strip()
    if cur:
        out.append(cur)
    return out or [text]


def passage_text(clause: Clause, passage: str) -> str:
    """What is embedded for one passage: the unit's heading path on the first line, then the passage."""
    return " > ".join(clause.heading_path) + "\n" + passage


def passage_bm25_ranking(clauses: Sequence[Clause], query: str, whole: Sequence[str] = ()) -> list[str]:
    """Clause keys by the BM25 score of their best item for ``query`` (items with the unit's heading
    path), best first; then the keys of ``whole`` (a unit-level ranking) that no item matched."""
    docs: list[list[str]] = []
    owner: list[str] = []
    for clause in clauses:
        head = " ".join(clause.heading_path)
        for item in items(clause.text):
            docs.append(bm25_tokens(head + " " + item))
            owner.append(clause.key)
    out: list[str] = []
    seen: set[str] = set()
    for i, _ in BM25(docs).rank(bm25_tokens(query)) if docs else []:
        if owner[i] not in seen:
            seen.add(owner[i])
            out.append(owner[i])
    return out + [k for k in whole if k not in seen]


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    """The dot product of two vectors (the cosine, for L2-normalised ones); extra components of the longer are ignored."""
    return sum(x * y for x, y in zip(a, b, strict=False))


def dense_passage_ranking(clauses: Sequence[Clause], vectors: dict[str, list[float]],
                          passage_vectors: dict[str, list[list[float]]], query: Sequence[float],
                          mix: float = PASSAGE_MIX) -> list[str]:
    """Clause keys by ``mix`` x their best passage's cosine with ``query`` + ``(1 - mix)`` x their unit
    vector's (vectors L2-normalised, so the dot product is the cosine); a unit without passage vectors
    scores by its unit vector alone. Units without a unit vector are left out."""
    scored = []
    for c in clauses:
        if c.key not in vectors:
            continue
        whole = dot(vectors[c.key], query)
        parts = passage_vectors.get(c.key)
        best = max(dot(v, query) for v in parts) if parts else whole
        scored.append((mix * best + (1 - mix) * whole, c.order, c.key))
    return [key for _, _, key in sorted(scored, key=lambda s: (-s[0], s[1]))]
