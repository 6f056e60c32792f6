"""Confidence from evidence, not self-report (issue 29): a score in [0, 1] and its reasons.

Computed by the harness when an extraction or ``not_found`` is stored, from what it checked; the
model is never asked how sure it is. The evidence and what each does to the score (ours; tuned on the
CUAD dev set, docs/benchmarks.md "Confidence calibration"):

found (starts at :data:`FOUND_BASE`):

- how the quote verified: verbatim as written (``+0.10``) or only after whitespace/ligature/hyphen
  normalisation (``-0.05``; :func:`longdoc.search.quotes.find_quotes`);
- the cited chunk's rank in the session's retrieval for the clause type (dense and BM25 fused,
  :func:`longdoc.search.fusion.rrf`): 1st ``+0.20``, 2nd-3rd ``+0.10``, within top-k ``0``, past it ``-0.10``;
- dense and BM25 agreement: the chunk in both rankings' top-k ``+0.10``, in neither ``-0.10``;
- the clause type's hints (``data/clause_types.yaml``) in the quote: ``+0.10``, none ``-0.05``;
- citations rejected for this clause type before the accepted one: ``-0.10`` each (at most ``-0.30``).

not_found (starts at :data:`NOT_FOUND_BASE`):

- the strongest candidate chunk (best fused rank among chunks holding a hint phrase, else the best
  fused chunk), which a ``not_found`` never quoted: a hint phrase in it ``-0.20``; its dense
  similarity >= :data:`STRONG_SIMILARITY` ``-0.15``; never shown to the model ``-0.10``;
- no hint phrase anywhere in the document ``+0.10``;
- searches that ran for it: ``+0.05`` each (at most ``+0.10``), none ``-0.05``.

Capped: a ``not_found`` scores at most :data:`WEAK_ABSENCE_CAP` (below the default accept threshold,
0.8, so it reaches the review queue) unless the evidence for absence is strong: at least one search
ran for it, and the best-scoring chunk it never quoted is weak in both rankings: dense similarity
under :data:`WEAK_SIMILARITY` and, under BM25, the top chunk holds under half of the clause name's
words (:func:`weak_absence`). Missing hint words alone never make a confident absence: "Agreement
Date" has no hint in "is entered into as of October 13, 2016".

A *possible omission* is a ``not_found`` whose candidate holds a hint phrase and ranks in the top
:data:`OMISSION_RANK` of the dense or BM25 ranking: it always goes to review.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from longdoc.core.models import Chunk
from longdoc.core.records import Citation, Confidence, NotFoundEvidence, SearchRecord
from longdoc.extract.catalogue import ClauseType
from longdoc.extract.retrieve import Retriever
from longdoc.search.bm25 import bm25_terms
from longdoc.search.fusion import rrf

FOUND_BASE = 0.5
NOT_FOUND_BASE = 0.75
STRONG_SIMILARITY = 0.5
"""Dense cosine similarity (0-1) from which an unquoted candidate counts as strong (MiniLM scale)."""
OMISSION_RANK = 3
"""A hint-bearing candidate within this rank of the dense or BM25 ranking makes a possible omission."""
WEAK_SIMILARITY = 0.35
"""Dense cosine similarity (MiniLM scale) under which the best unquoted chunk counts as weak (ours, untuned)."""
WEAK_ABSENCE_CAP = 0.7
"""Highest score of a ``not_found`` without strong evidence for absence (under the 0.8 default threshold)."""
FLOOR, CEILING = 0.02, 0.98


def _clamp(x: float) -> float:
    return round(min(CEILING, max(FLOOR, x)), 3)


def _fold(text: str) -> str:
    return " ".join(re.sub(r"[^\w$%]+", " ", text.casefold()).split())


def hints_in(text: str, clause: ClauseType) -> list[str]:
    """The clause type's hint phrases occurring in ``text`` (case, punctuation and whitespace aside)."""
    folded = f" {_fold(text)} "
    return [h for h in clause.hints if f" {_fold(h)} " in folded]


class Rankings:
    """One clause type's rankings over the session's chunks: dense (cosine kept by the session's
    retriever, no new embedding), BM25, and the two fused; ``top_k`` is the run's retrieval page size."""

    def __init__(self, ranker: Retriever, clause: ClauseType, top_k: int) -> None:
        query = clause.query_text()
        self.similarity = ranker.similarity(query)
        self.dense = sorted(self.similarity, key=lambda cid: -self.similarity[cid])
        self.bm25 = ranker.bm25_ranking(query)
        self.fused = [cid for cid, _ in rrf([r for r in (self.dense, self.bm25) if r])]
        self.top_k = top_k
        self.name_coverage = 0.0
        """Share of the clause name's BM25 terms in the top BM25 chunk's text (0 when BM25 ranks none)."""
        words = set(bm25_terms(clause.name))
        if self.bm25 and words:
            chunk = ranker.by_id.get(self.bm25[0])
            if chunk is not None:
                self.name_coverage = len(words & set(bm25_terms(chunk.text))) / len(words)

    @staticmethod
    def rank(ranking: Sequence[str], chunk_id: str) -> int | None:
        """1-based rank of ``chunk_id`` in ``ranking`` (None: not ranked)."""
        return ranking.index(chunk_id) + 1 if chunk_id in ranking else None


def found_confidence(citations: Sequence[Citation], raw_quotes: Sequence[str], chunks: dict[str, Chunk],
                     clause: ClauseType, rankings: Rankings, rejected_before: int) -> Confidence:
    """Confidence of a verified ``found`` (module docstring). ``raw_quotes`` are the quotes as the model
    wrote them (same order as ``citations``); ``rejected_before`` counts this clause type's rejected calls."""
    score, reasons = FOUND_BASE, []
    exact = all(q in chunks[c.chunk_id].text for c, q in zip(citations, raw_quotes, strict=False) if c.chunk_id in chunks)
    if exact:
        score += 0.10
        reasons.append("+0.10 quote verified exact")
    else:
        score -= 0.05
        reasons.append("-0.05 quote verified only after whitespace/typography normalisation")
    cited = citations[0].chunk_id
    rank = Rankings.rank(rankings.fused, cited)
    if rank is None:
        reasons.append("+0.00 cited chunk not ranked for the clause type")
    else:
        delta = 0.20 if rank == 1 else 0.10 if rank <= 3 else 0.0 if rank <= rankings.top_k else -0.10
        score += delta
        reasons.append(f"{delta:+.2f} cited chunk ranked {rank} of {len(rankings.fused)} (dense + BM25 fused)")
    in_dense = (Rankings.rank(rankings.dense, cited) or 10**6) <= rankings.top_k
    in_bm25 = (Rankings.rank(rankings.bm25, cited) or 10**6) <= rankings.top_k
    if in_dense and in_bm25:
        score += 0.10
        reasons.append(f"+0.10 dense and BM25 agree (both rank it in the top {rankings.top_k})")
    elif not rankings.dense:
        reasons.append("+0.00 no dense ranking in this session (BM25 only)")
    elif not in_dense and not in_bm25:
        score -= 0.10
        reasons.append(f"-0.10 neither dense nor BM25 ranks it in the top {rankings.top_k}")
    else:
        reasons.append(f"+0.00 only {'dense' if in_dense else 'BM25'} ranks it in the top {rankings.top_k}")
    hits = [h for q in (c.quote for c in citations) for h in hints_in(q, clause)]
    if hits:
        score += 0.10
        reasons.append(f"+0.10 clause-type hint in the quote: {hits[0]!r}")
    else:
        score -= 0.05
        reasons.append("-0.05 no clause-type hint in the quote")
    if rejected_before:
        delta = min(0.30, 0.10 * rejected_before)
        score -= delta
        reasons.append(f"-{delta:.2f} {rejected_before} citation(s) rejected before this one")
    return Confidence(score=_clamp(score), reasons=reasons)


def weak_absence(rankings: Rankings) -> tuple[bool, str]:
    """Whether the best chunk a ``not_found`` never quoted is weak under dense *and* BM25, and why (one line).

    Dense: the top similarity is under :data:`WEAK_SIMILARITY` (no dense ranking: not shown weak);
    BM25: the top BM25 chunk holds under half of the clause name's words (none ranked: weak)."""
    top_sim = max(rankings.similarity.values()) if rankings.similarity else None
    dense_weak = top_sim is not None and top_sim < WEAK_SIMILARITY
    bm25_weak = not rankings.bm25 or rankings.name_coverage < 0.5
    dense = "no dense ranking" if top_sim is None else f"best dense similarity {top_sim:.2f}"
    bm25 = "no BM25 match" if not rankings.bm25 else f"top BM25 chunk holds {rankings.name_coverage:.0%} of the name's words"
    return dense_weak and bm25_weak, f"{dense}, {bm25}"


def not_found_confidence(clause: ClauseType, chunks: dict[str, Chunk], rankings: Rankings, shown: set[str],
                         evidence: NotFoundEvidence | None, searches: Sequence[SearchRecord]) -> Confidence:
    """Confidence of a ``not_found`` and whether it is a possible omission (module docstring).

    ``shown``: chunk ids the model was shown; ``searches``: the run's ``search_chunks`` records.
    """
    score, reasons = NOT_FOUND_BASE, []
    hinted = {cid: h for cid in rankings.fused if cid in chunks for h in hints_in(chunks[cid].text, clause)[:1]}
    candidate = next((cid for cid in rankings.fused if cid in hinted), rankings.fused[0] if rankings.fused else None)
    omission, info = False, None
    if candidate is None:
        reasons.append("+0.00 no chunk ranked for the clause type")
    else:
        chunk, sim = chunks.get(candidate), rankings.similarity.get(candidate)
        info = {"chunk_id": candidate, "page": chunk.page_start if chunk else None,
                "score": round(sim, 3) if sim is not None else None}
        where = f"chunk {candidate}" + (f" (p. {chunk.page_start})" if chunk and chunk.page_start else "")
        if candidate in hinted:
            score -= 0.20
            reasons.append(f"-0.20 unquoted {where} holds the hint {hinted[candidate]!r}")
        if sim is not None and sim >= STRONG_SIMILARITY:
            score -= 0.15
            reasons.append(f"-0.15 unquoted {where} is similar to the clause type ({sim:.2f} >= {STRONG_SIMILARITY})")
        if candidate not in shown:
            score -= 0.10
            reasons.append(f"-0.10 {where} was never shown to the model")
        best = min(Rankings.rank(rankings.dense, candidate) or 10**6, Rankings.rank(rankings.bm25, candidate) or 10**6)
        omission = candidate in hinted and best <= OMISSION_RANK
        if omission:
            reasons.append(f"possible omission: {where} ranks {best} and holds a hint, but was not quoted")
    if not hinted:
        score += 0.10
        reasons.append("+0.10 no clause-type hint anywhere in the document")
    ran = [s for s in searches if s.clause_type == clause.name] or (
        [s for s in searches if s.query in evidence.queries] if evidence else [])
    if ran:
        delta = min(0.10, 0.05 * len(ran))
        score += delta
        reasons.append(f"+{delta:.2f} {len(ran)} search(es) ran for it")
    else:
        score -= 0.05
        reasons.append("-0.05 no search ran for it")
    weak, why = weak_absence(rankings)
    if not (ran and weak) and _clamp(score) > WEAK_ABSENCE_CAP:
        score = WEAK_ABSENCE_CAP
        missing = "no search ran" if not ran else "the best unquoted chunk is not weak in both dense and BM25"
        reasons.append(f"capped at {WEAK_ABSENCE_CAP:.2f}: absence not shown ({missing}: {why})")
    return Confidence(score=_clamp(score), reasons=reasons, possible_omission=omission, candidate=info)

