"""Confidence from evidence, not self-report: a score in [0, 1] and its reasons.

Computed by the harness when an extraction or ``not_found`` is stored, from what it checked; the
model is never asked how sure it is. The evidence and what each does to the score (ours; the bases and
the no-hint bonus tuned on one half of the CUAD dev set split by document and checked on the other,
docs/benchmarks.md "Confidence calibration"):

Hints (``data/clause_types.yaml``) are matched by word stem (:func:`hints_in`: Snowball English stems,
every word of the hint in order, so "automatically renew" matches "shall be automatically renewed"); a
clause type's *vocabulary* (:func:`vocabulary`) is the stems of its name, description and hints less the
wording most clause types share (:func:`generic_stems`).

found (starts at :data:`FOUND_BASE`):

- how the quote verified: verbatim as written (``+0.10``) or only after whitespace/ligature/hyphen
  normalisation (``-0.05``; :func:`longdoc.search.quotes.find_quotes`);
- the cited chunk's rank in the session's retrieval for the clause type (dense and BM25 fused,
  :func:`longdoc.search.fusion.rrf`): 1st ``+0.20``, 2nd-3rd ``+0.10``, within top-k ``0``, past it ``-0.10``;
- dense and BM25 agreement: the chunk in both rankings' top-k ``+0.10``, in neither ``-0.10``;
- a hint phrase in the quote (by stem): ``+0.10``, none ``-0.05``;
- citations rejected for this clause type before the accepted one: ``-0.10`` each (at most ``-0.30``);
- a quote that shares no stem with the clause type's vocabulary is capped at :data:`OFF_VOCABULARY_CAP`
  (under the accept threshold: never auto-accepted).

not_found (starts at :data:`NOT_FOUND_BASE`):

- the strongest candidate chunk (best fused rank among chunks holding a hint phrase, else the best
  fused chunk), which a ``not_found`` never quoted: a hint phrase in it ``-0.20``; its dense
  similarity >= :data:`STRONG_SIMILARITY` ``-0.15``; never shown to the model ``-0.10``;
- no hint phrase anywhere in the document ``+``:data:`NO_HINT_BONUS`;
- searches that ran for it: ``+0.05`` each (at most ``+0.10``), none ``-0.05``.

Capped: a ``not_found`` scores at most :data:`WEAK_ABSENCE_CAP` (below the default accept threshold,
0.8, so it reaches the review queue) unless the evidence for absence is strong: every chunk carrying
the clause type's vocabulary (a hint by stem, or all of its name's own words: :func:`vocabulary_chunks`)
was shown to the model, at least one search ran for it, and the best-scoring chunk it never quoted is
weak in both rankings: dense similarity under :data:`WEAK_SIMILARITY` and, under BM25, the top chunk
holds under half of the clause name's words (:func:`weak_absence`). Missing hint words alone never make
a confident absence: "Agreement Date" has no hint in "is entered into as of October 13, 2016".

A *possible omission* is a ``not_found`` whose candidate holds a hint phrase and ranks in the top
:data:`OMISSION_RANK` of the dense or BM25 ranking: it always goes to review.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

import snowballstemmer

from longdoc.core.models import Chunk
from longdoc.core.records import Citation, Confidence, NotFoundEvidence, SearchRecord
from longdoc.extract.catalogue import ClauseType, load_catalogue
from longdoc.extract.retrieve import Retriever
from longdoc.search.bm25 import STOPWORDS, bm25_terms
from longdoc.search.fusion import rrf

FOUND_BASE = 0.3
"""Start of a ``found`` score (0.5 before; 0.3 on the tuning half: the offline baseline's best-evidenced
finds were right 61% of the time, so a found with every piece of evidence scores 0.8, not 0.98)."""
NOT_FOUND_BASE = 0.75
NO_HINT_BONUS = 0.05
"""What a ``not_found`` gains when no chunk holds a hint phrase by stem (hints are never complete)."""
STRONG_SIMILARITY = 0.5
"""Dense cosine similarity (0-1) from which an unquoted candidate counts as strong (MiniLM scale)."""
OMISSION_RANK = 3
"""A hint-bearing candidate within this rank of the dense or BM25 ranking makes a possible omission."""
WEAK_SIMILARITY = 0.35
"""Dense cosine similarity (MiniLM scale) under which the best unquoted chunk counts as weak (ours, untuned)."""
WEAK_ABSENCE_CAP = 0.7
"""Highest score of a ``not_found`` without strong evidence for absence (under the 0.8 default threshold)."""
OFF_VOCABULARY_CAP = 0.6
"""Highest score of a ``found`` whose quote shares no stem with the clause type's :func:`vocabulary`
(under the 0.8 default accept threshold: such a pick always reaches the review queue)."""
FLOOR, CEILING = 0.02, 0.98


def _clamp(x: float) -> float:
    return round(min(CEILING, max(FLOOR, x)), 3)


def _fold(text: str) -> str:
    return " ".join(re.sub(r"[^\w$%]+", " ", text.casefold()).split())


GENERIC_SHARE = 0.2
"""A word stem used by more than this share of the default catalogue's clause types (name, description
and hints) is generic contract wording ("agreement", "party", "the") and never counts as a clause type's
vocabulary (ours; docs/benchmarks.md "Confidence calibration")."""

_STEMMER = snowballstemmer.stemmer("english")
"""The Snowball English (Porter2) stemmer, https://snowballstem.org: "renewal", "renewed" -> "renew"."""


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return str(_STEMMER.stemWord(word))


def stems(text: str) -> list[str]:
    """The Snowball English stems of ``text``'s words in order (case folded; letters and digits only)."""
    return list(_stems(text))


@lru_cache(maxsize=4096)
def _stems(text: str) -> tuple[str, ...]:
    return tuple(_stem(w) for w in re.findall(r"[^\W_]+", text.casefold()))


def _clause_words(clause: ClauseType) -> set[str]:
    return set(stems(" ".join([clause.name, clause.description, *clause.hints])))


@lru_cache(maxsize=1)
def generic_stems() -> frozenset[str]:
    """Stems used by more than :data:`GENERIC_SHARE` of the packaged default catalogue's clause types,
    BM25's function words (:data:`longdoc.search.bm25.STOPWORDS`) and one- or two-letter tokens: wording
    every contract clause shares, not any one type's vocabulary."""
    catalogue = list(load_catalogue(None))
    counts: dict[str, int] = {}
    for clause in catalogue:
        for word in _clause_words(clause):
            counts[word] = counts.get(word, 0) + 1
    stop = {_stem(w) for w in STOPWORDS}
    return frozenset(w for w, n in counts.items() if n > GENERIC_SHARE * len(catalogue) or len(w) < 3) | stop


def vocabulary(clause: ClauseType) -> frozenset[str]:
    """The clause type's own vocabulary: the stems of its name, description and hints less
    :func:`generic_stems` (``{"renew", "term", "automat", ...}`` for Renewal Term)."""
    return _vocabulary(clause.name, clause.description, tuple(clause.hints))


@lru_cache(maxsize=512)
def _vocabulary(name: str, description: str, hints: tuple[str, ...]) -> frozenset[str]:
    return frozenset(set(stems(" ".join([name, description, *hints]))) - generic_stems())


def _content(words: Iterable[str]) -> list[str]:
    generic = generic_stems()
    return [w for w in words if w not in generic]


def hints_in(text: str, clause: ClauseType) -> list[str]:
    """The clause type's hint phrases occurring in ``text``, matched by stem: the hint's words, each
    reduced to its Snowball stem, occur in ``text`` as a run of words in the same order ("automatically
    renew" in "shall be automatically renewed", "renewal" in "renewed"); case, punctuation, line breaks and
    word endings aside, every word kept (so "shall not compete" never matches "shall compete")."""
    joined = f" {' '.join(_stems(text))} "
    return [h for h in clause.hints if _stems(h) and f" {' '.join(_stems(h))} " in joined]


def vocabulary_in(text: str, clause: ClauseType) -> list[str]:
    """The stems of ``text`` in the clause type's :func:`vocabulary` (sorted, each once)."""
    return sorted(set(stems(text)) & vocabulary(clause))


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
    quotes = " ".join(c.quote for c in citations)
    hits, words = hints_in(quotes, clause), vocabulary_in(quotes, clause)
    if hits:
        score += 0.10
        reasons.append(f"+0.10 clause-type hint in the quote (by stem): {hits[0]!r}")
    else:
        score -= 0.05
        reasons.append("-0.05 no clause-type hint in the quote"
                       + (f" (the clause type's words: {', '.join(words[:5])})" if words else ""))
    if rejected_before:
        delta = min(0.30, 0.10 * rejected_before)
        score -= delta
        reasons.append(f"-{delta:.2f} {rejected_before} citation(s) rejected before this one")
    if not words and _clamp(score) > OFF_VOCABULARY_CAP:
        score = OFF_VOCABULARY_CAP
        reasons.append(f"capped at {OFF_VOCABULARY_CAP:.2f}: the quote shares no word (by stem) with the clause "
                       "type's name, description or hints")
    return Confidence(score=_clamp(score), reasons=reasons)


def vocabulary_chunks(clause: ClauseType, chunks: dict[str, Chunk]) -> list[str]:
    """Ids of the chunks (in ``chunks`` order) that carry the clause type's vocabulary: a hint phrase by
    stem (:func:`hints_in`), or every non-generic stem of its name ("renew" for Renewal Term)."""
    name = set(_content(stems(clause.name)))
    return [cid for cid, chunk in chunks.items()
            if hints_in(chunk.text, clause) or (name and name <= set(stems(chunk.text)))]


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
        score += NO_HINT_BONUS
        reasons.append(f"+{NO_HINT_BONUS:.2f} no clause-type hint anywhere in the document")
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
    carriers = vocabulary_chunks(clause, chunks)
    unread = [cid for cid in carriers if cid not in shown]
    if unread and _clamp(score) > WEAK_ABSENCE_CAP:
        score = WEAK_ABSENCE_CAP
        reasons.append(f"capped at {WEAK_ABSENCE_CAP:.2f}: {len(unread)} of {len(carriers)} chunk(s) carrying the "
                       f"clause type's vocabulary never read (first: {unread[0]})")
    elif not (ran and weak) and _clamp(score) > WEAK_ABSENCE_CAP:
        score = WEAK_ABSENCE_CAP
        missing = "no search ran" if not ran else "the best unquoted chunk is not weak in both dense and BM25"
        reasons.append(f"capped at {WEAK_ABSENCE_CAP:.2f}: absence not shown ({missing}: {why})")
    return Confidence(score=_clamp(score), reasons=reasons, possible_omission=omission, candidate=info)

