"""Hybrid retrieval over one document version, and token-budgeted context assembly.

Ranking happens only among the chunks that pass the filters (``doc_id``, ``doc_version``,
and ``term`` / ``line_of_business`` when given), so a motor claim is never ranked against
household wording or another term. Three rankings are fused with weighted reciprocal rank
fusion (Cormack, Clarke & Büttcher, SIGIR 2009: ``score = sum w / (k + rank)``, ``k = 60``):

* dense: the :class:`~longdoc.core.ports.VectorIndex` asked for every vector of the version
  (a document has a few hundred chunks, so asking for all of them costs little and keeps
  the port unchanged), filtered to the allowed chunks;
* BM25 (Okapi, ``k1 = 1.2``, ``b = 0.75``, Robertson & Zaragoza 2009) over the same
  chunks, as loaded from the blob store (the chunk text's source of truth), each with
  its locator header (:func:`~longdoc.ingest.pipeline.embedding_text`) unless switched off.
  Its terms are words and the pairs of adjacent words within a phrase
  (:func:`longdoc.search.bm25.bm25_terms`),
  so a chunk that has a hint's words in the hint's order ("minimum purchase") outranks one
  that has them scattered (the ordered-pair feature of Metzler & Croft's sequential
  dependence model, SIGIR 2005);
* best passage: BM25 over the chunks' passages, a passage being one section span of a
  chunk (a section, an item ``4.2(b)``, a split section's part), each chunk ranked by its
  best passage (the max-passage idea of Dai & Callan, SIGIR 2019). A long chunk holding
  one strongly matching item is no longer outranked by a short chunk that merely repeats
  the query's words: whole-chunk BM25 divides by the long chunk's length.

An optional :class:`Reranker` reorders the fused top candidates; the default does nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from longdoc.core.documents import embedding_text
from longdoc.core.tokens import estimate_tokens
from longdoc.core.models import Chunk
from longdoc.core.ports import Reranker, VectorIndex
from longdoc.search.bm25 import BM25, bm25_terms
from longdoc.search.fusion import rrf

Mode = Literal["dense", "bm25", "hybrid"]
MODES: tuple[str, ...] = ("dense", "bm25", "hybrid")
DENSE_WEIGHT = 0.3
"""Dense ranking's weight in the fusion (BM25's is 1): measured on cuad-dev.jsonl with the local
MiniLM embedder (docs/benchmarks.md, "Retrieval"); 0.2-0.3 beat 0.5 and 1.0 there."""
PASSAGE_WEIGHT = 1.5
"""Best-passage ranking's weight in the fusion (chunk BM25's is 1): measured on cuad-dev.jsonl
(docs/benchmarks.md, "Retrieval"); 1.0-2.0 all beat no passage ranking there, 1.5-2.0 most."""
LEAD_RANK = 2
"""The document's opening chunk is moved up to this rank (dates, parties and titles live there;
docs/benchmarks.md, "Retrieval")."""


def passages(chunk: Chunk, headers: bool = True) -> list[str]:
    """A chunk's passages for best-passage ranking: the text of each of its section spans.

    A span is clipped to the chunk; a blank one is left out; a chunk without spans is one
    passage. With ``headers``, each passage opens with the chunk's locator header line
    (:func:`embedding_text`), as the chunk's own BM25 text does.
    """
    head = embedding_text(chunk).split("\n", 1)[0] + "\n" if headers else ""
    spans = [(max(s.char_start, chunk.char_start) - chunk.char_start, min(s.char_end, chunk.char_end) - chunk.char_start)
             for s in chunk.section_spans] or [(0, len(chunk.text))]
    return [head + chunk.text[a:b] for a, b in spans if chunk.text[a:b].strip()]


class NoRerank:
    """The default :class:`Reranker`: keeps the fused order, cut to ``top_k``."""

    def rerank(self, query: str, chunks: Sequence[Chunk], top_k: int) -> list[Chunk]:
        """Return the first ``top_k`` chunks unchanged."""
        return list(chunks[:top_k])


def allowed(chunks: Sequence[Chunk], *, term: str | None = None, line_of_business: str | None = None) -> list[Chunk]:
    """The chunks whose ``term`` / ``line_of_business`` match the given values (``None`` = no filter).

    Comparison ignores case and surrounding space. A chunk without the field set does not
    match a filter on it (wording of unknown term is not wording of the term in force).
    """
    def same(a: str | None, b: str | None) -> bool:
        return b is None or (a is not None and a.strip().lower() == b.strip().lower())

    return [c for c in chunks if same(c.term, term) and same(c.line_of_business, line_of_business)]


@dataclass
class Retriever:
    """Ranks one document version's chunks for a query.

    ``chunks`` are the version's chunks (from the blob store); ``index`` holds their
    vectors. ``headers`` puts each chunk's locator header into its BM25 text (the dense
    vectors already include it, see :func:`embedding_text`). ``mode`` is ``dense``,
    ``bm25`` or ``hybrid``. ``term`` / ``line_of_business`` filter before ranking.
    ``dense_weight`` scales the dense ranking's share in the fusion (BM25's is 1).
    ``lead_rank`` (1-based), when set, moves the document's first allowed chunk (its opening:
    title, date, parties, defined terms) up to that rank if it ranks lower.
    ``passage_weight`` is the best-passage ranking's share in the hybrid fusion (0: left out).
    """

    chunks: Sequence[Chunk]
    index: VectorIndex | None = None
    mode: str = "hybrid"
    headers: bool = True
    term: str | None = None
    line_of_business: str | None = None
    reranker: Reranker | None = None
    dense_weight: float = 1.0
    lead_rank: int | None = None
    passage_weight: float = PASSAGE_WEIGHT

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown retrieval mode {self.mode!r}; expected one of {MODES}")
        if self.mode != "bm25" and self.index is None:
            raise ValueError(f"mode {self.mode!r} needs a vector index")
        self.pool = allowed(self.chunks, term=self.term, line_of_business=self.line_of_business)
        self.by_id = {c.chunk_id: c for c in self.pool}
        self._bm25: BM25 | None = None
        self._passages: tuple[BM25, list[int]] | None = None
        self._similarity: dict[str, dict[str, float]] = {}

    def bm25(self) -> BM25:
        """The BM25 index over the allowed chunks (built on first use)."""
        if self._bm25 is None:
            self._bm25 = BM25([bm25_terms(embedding_text(c) if self.headers else c.text) for c in self.pool])
        return self._bm25

    def dense_ranking(self, vector: Sequence[float], query: str | None = None) -> list[str]:
        """Allowed chunk ids by cosine similarity to ``vector``, best first; with ``query``, the
        similarities are kept for :meth:`similarity`."""
        if not self.pool or self.index is None:
            return []
        doc_id, version = self.pool[0].doc_id, self.pool[0].doc_version
        hits = [(cid, score) for cid, score in self.index.query(vector, doc_id, version, max(len(self.chunks), 1))
                if cid in self.by_id]
        if query is not None:
            self._similarity[query] = dict(hits)
        return [cid for cid, _ in hits]

    def similarity(self, query: str) -> dict[str, float]:
        """Chunk id -> the index's cosine similarity to ``query``, kept from its last dense ranking by
        :meth:`rank` (no second index query; empty when ``query`` was not ranked densely)."""
        return dict(self._similarity.get(query, {}))

    def passage_ranking(self, query: str) -> list[str]:
        """Allowed chunk ids by the BM25 score of their best passage (:func:`passages`), best first.

        The passage index is built over every passage of the allowed chunks on first use;
        chunks with no passage scoring above zero are left out.
        """
        if self._passages is None:
            owners: list[int] = []
            texts: list[list[str]] = []
            for i, c in enumerate(self.pool):
                for passage in passages(c, self.headers):
                    owners.append(i)
                    texts.append(bm25_terms(passage))
            self._passages = (BM25(texts), owners)
        index, owners = self._passages
        best: dict[int, float] = {}
        for p, score in index.rank(bm25_terms(query)):
            best.setdefault(owners[p], score)  # passages come best first: the first is the chunk's best
        return [self.pool[i].chunk_id for i in best]

    def bm25_ranking(self, query: str) -> list[str]:
        """Allowed chunk ids by BM25 score for ``query``, best first (zero scores left out)."""
        return [self.pool[i].chunk_id for i, _ in self.bm25().rank(bm25_terms(query))]

    def rank(self, query: str, vector: Sequence[float] | None = None, top_k: int | None = None) -> list[Chunk]:
        """The allowed chunks for ``query`` best first, at most ``top_k`` (all when ``None``).

        ``vector`` is the query's embedding (needed unless mode is ``bm25``). In hybrid
        mode the fused list is followed by any chunk neither ranking returned, in
        document order, so every allowed chunk has a rank (hybrid fuses dense, chunk BM25
        and best passage, weighted ``dense_weight``, 1 and ``passage_weight``). Raises ``ValueError`` when a
        dense mode gets no vector.
        """
        if self.mode != "bm25" and vector is None:
            raise ValueError(f"mode {self.mode!r} needs the query vector")
        if self.mode == "dense":
            ids = self.dense_ranking(vector or [], query)
        elif self.mode == "bm25":
            ids = self.bm25_ranking(query)
        else:
            rankings = [self.dense_ranking(vector or [], query), self.bm25_ranking(query)]
            weights = [self.dense_weight, 1.0]
            if self.passage_weight:
                rankings.append(self.passage_ranking(query))
                weights.append(self.passage_weight)
            ids = [cid for cid, _ in rrf(rankings, weights=weights)]
        seen = set(ids)
        ids += [c.chunk_id for c in self.pool if c.chunk_id not in seen]
        if self.lead_rank is not None and self.pool:
            lead = min(self.pool, key=lambda c: c.ordinal).chunk_id
            if ids.index(lead) >= self.lead_rank:
                ids.remove(lead)
                ids.insert(self.lead_rank - 1, lead)
        ranked = [self.by_id[cid] for cid in ids]
        limit = len(ranked) if top_k is None else top_k
        if self.reranker is not None:
            return self.reranker.rerank(query, ranked[: max(limit, 20)], limit)
        return ranked[:limit]


# --- token-budgeted context assembly ---------------------------------------------------------


def chunk_tokens(chunk: Chunk) -> int:
    """Estimated tokens a chunk costs in the prompt: its text with its locator header."""
    return estimate_tokens(embedding_text(chunk))


def budget_from_cost(cost_usd: float, input_price_per_mtok: float, output_price_per_mtok: float,
                     output_reserve_tokens: int) -> int:
    """Input-token budget for one extraction from a cost line.

    ``budget = (cost - output_reserve x output_price) / input_price`` with prices in USD
    per million tokens (as published on https://docs.anthropic.com/en/docs/about-claude/pricing).
    Returns whole tokens, rounded down. Raises ``ValueError`` when the input price is not
    positive or the output reserve alone costs more than the cost line.
    """
    if input_price_per_mtok <= 0:
        raise ValueError("input price must be positive")
    left = cost_usd - output_reserve_tokens * output_price_per_mtok / 1e6
    if left < 0:
        raise ValueError(f"the output reserve ({output_reserve_tokens} tokens) alone costs more than {cost_usd} USD")
    return int(left * 1e6 / input_price_per_mtok)


@dataclass(frozen=True)
class Assembly:
    """Chunks chosen for a prompt.

    ``chunks`` in the order to send; ``tokens`` their estimated total (with headers);
    ``whole_document`` True when every chunk fitted and they are sent in document order;
    ``top_over_budget`` True when the best-ranked chunk alone is larger than the budget
    (it is then sent alone, so the model still sees the best evidence).
    """

    chunks: list[Chunk]
    tokens: int
    whole_document: bool
    top_over_budget: bool


def assemble(ranked: Sequence[Chunk], budget_tokens: int, *, all_chunks: Sequence[Chunk] | None = None,
             cap: int | None = None, cost: Callable[[Chunk], int] = chunk_tokens) -> Assembly:
    """Take chunks in rank order until the next would pass ``budget_tokens``.

    When ``all_chunks`` (the whole document) fits within the budget, it is returned whole,
    in document order. ``cap`` bounds the number of chunks (``top_k``). The top chunk is
    always taken, even when it alone is over budget (flagged ``top_over_budget``). Raises
    ``ValueError`` for a negative budget.
    """
    if budget_tokens < 0:
        raise ValueError("budget must not be negative")
    if all_chunks:
        total = sum(cost(c) for c in all_chunks)
        if total <= budget_tokens:
            return Assembly(sorted(all_chunks, key=lambda c: c.ordinal), total, True, False)
    chosen: list[Chunk] = []
    used = 0
    top_over = False
    for chunk in ranked:
        if cap is not None and len(chosen) >= cap:
            break
        size = cost(chunk)
        if used + size > budget_tokens:
            if not chosen:
                top_over = True
                chosen.append(chunk)
                used += size
            break
        chosen.append(chunk)
        used += size
    return Assembly(chosen, used, False, top_over)
