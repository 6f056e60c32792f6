"""The retrieved context of one session: each asked clause type's current page of top-K chunks.

Moved out of :mod:`longdoc.extract.session` unchanged in behaviour (hybrid retrieval over the
run's document version, see :mod:`longdoc.extract.retrieve`); ``names`` are the clause types
the session asks for (the pending ones, minus refused ones, see :mod:`longdoc.extract.refusals`).
"""

from __future__ import annotations

import logging

from longdoc.core.documents import embedding_text
from longdoc.core.models import Chunk
from longdoc.core.records import CaseFacts, RunRecord
from longdoc.core.tokens import document_measure
from longdoc.extract.catalogue import ClauseType
from longdoc.extract.retrieve import DENSE_WEIGHT, LEAD_RANK, Retriever, assemble
from longdoc.extract.session_types import Deps, Session

log = logging.getLogger(__name__)


def retriever(deps: Deps, run: RunRecord, chunks: dict[str, Chunk]) -> Retriever:
    """Hybrid retriever over the run's document version, filtered by the run's ``term`` /
    ``line_of_business`` facts when given (see :mod:`longdoc.extract.retrieve`), with the session's
    reranker (``deps.reranker``; None: the fused order). Every retrieval of a session goes through
    here: the clause types' pages (:func:`page`, :func:`retrieve`) and ``search_chunks``."""
    return document_retriever(deps, list(chunks.values()), term=run.facts.get("term"),
                              line_of_business=run.facts.get("line_of_business"))


def document_retriever(deps: Deps, chunks: list[Chunk], *, term: str | None = None,
                       line_of_business: str | None = None) -> Retriever:
    """The retriever of :func:`retriever` over one document version's ``chunks``, without a run:
    hybrid (dense + BM25 + best passage), the document's opening kept at :data:`LEAD_RANK`, ``deps.reranker``."""
    return Retriever(chunks, deps.index, mode="hybrid", dense_weight=DENSE_WEIGHT, lead_rank=LEAD_RANK,
                     term=term, line_of_business=line_of_business, reranker=deps.reranker)


def search_document(deps: Deps, chunks: list[Chunk], query: str, top_k: int) -> list[Chunk]:
    """The ``top_k`` best of one document version's ``chunks`` for ``query``, ranked as the model's own
    ``search_chunks`` ranks them (:func:`document_retriever`; one query embedding, one index query).

    Used by outside callers (the MCP ``search_chunks`` tool), which have no session: every ranked
    chunk is returned, none left out as already shown. Raises what the embedder and index raise.
    """
    return document_retriever(deps, chunks).rank(query, deps.embedder.embed_query(query), top_k)


def session_retriever(deps: Deps, s: Session) -> Retriever:
    """The session's :func:`retriever` over its loaded chunks, built once and kept on ``s.ranker``, so its
    BM25 indexes are built once per session for every page and search (rankings and scores unchanged)."""
    if s.ranker is None:
        s.ranker = retriever(deps, s.run, s.chunks)
    return s.ranker


def page(deps: Deps, run: RunRecord, clause: ClauseType, number: int, chunks: dict[str, Chunk],
         ranker: Retriever | None = None) -> list[Chunk]:
    """Page ``number`` (0-based) of the top-K retrieval for one clause type: ranks ``number*K .. number*K+K-1``."""
    if ranker is None:
        ranker = retriever(deps, run, chunks)
    query = clause.query_text()
    ranked = ranker.rank(query, deps.embedder.embed_query(query), run.top_k * (number + 1))
    return ranked[number * run.top_k:]


def retrieve(deps: Deps, run: RunRecord, facts: CaseFacts, names: list[str], chunks: dict[str, Chunk],
             budget_tokens: int | None = None, similarity: dict[str, dict[str, float]] | None = None,
             ranker: Retriever | None = None) -> list[Chunk]:
    """Each asked clause type's current retrieval page, merged in document order without repeats.

    With ``budget_tokens`` (estimated tokens), the pages are interleaved by rank (first of each
    clause type, then second, ...) and assembled within the budget (:func:`assemble`); a
    document that fits whole is sent whole. ``similarity``, when given, is filled with each
    clause type's chunk id -> cosine similarity from the same dense ranking (for
    :func:`initial_scores`: one embedding and one index query per clause type, as without it).
    ``ranker`` is the session's retriever (None: one built for this call).
    """
    if ranker is None:
        ranker = retriever(deps, run, chunks)
    clauses = deps.catalogue.resolve_many(names)
    pages = [page(deps, run, clause, facts.retrieval_pages.get(clause.name, 0), chunks, ranker)
             for clause in clauses]
    if similarity is not None:
        similarity.update((clause.name, ranker.similarity(clause.query_text())) for clause in clauses)
    picked: dict[str, Chunk] = {}
    for rank in range(max((len(p) for p in pages), default=0)):
        for one in pages:
            if rank < len(one):
                picked.setdefault(one[rank].chunk_id, one[rank])
    selected = list(picked.values())
    if budget_tokens is not None:
        measure = document_measure(deps.tokens, [embedding_text(c) for c in ranker.pool])
        assembly = assemble(selected, budget_tokens, all_chunks=ranker.pool,
                            cost=lambda c: measure(embedding_text(c)))
        if assembly.top_over_budget:
            log.warning("top chunk alone is over the %d-token context budget (%d tokens)", budget_tokens,
                        assembly.tokens)
        selected = assembly.chunks
    return sorted(selected, key=lambda c: c.ordinal)


def initial_scores(similarity: dict[str, dict[str, float]], shown: set[str]) -> dict[str, float]:
    """Each clause type's best cosine similarity among the chunks shown (0.0 when none is shown).

    ``similarity`` is what :func:`retrieve` filled in (the dense ranking of the clause type's
    query, :meth:`ClauseType.query_text`, over the allowed chunks). Unlike the fused rank it is
    an absolute measure; it decides whether ``not_found`` needs a search (:mod:`longdoc.extract.search_calls`).
    """
    return {name: max((score for cid, score in scores.items() if cid in shown), default=0.0)
            for name, scores in similarity.items()}


def earlier_searches(facts: CaseFacts, session: int, chunks: dict[str, Chunk]) -> list[Chunk]:
    """Chunks earlier sessions' searches returned for clause types still pending (or for none named).

    A resumed session (or the next batch round) is shown them again with its retrieved chunks,
    so it need not repeat those searches; CASE_FACTS lists the queries (``searched``).
    """
    ids = [cid for r in facts.searches if r.session < session
           and (r.clause_type is None or r.clause_type in facts.pending) for cid in r.chunk_ids]
    return [chunks[cid] for cid in dict.fromkeys(ids) if cid in chunks]


def session_chunks(deps: Deps, s: Session, budget_tokens: int | None,
                   similarity: dict[str, dict[str, float]] | None = None) -> tuple[list[Chunk], list[Chunk]]:
    """A session's chunk context as ``(stable, later)``, both in document order, no chunk twice.

    ``stable`` is the run's initial retrieval: page 0 of every clause type the run requested
    (resolved, refused or pending alike, so the set does not shrink as clause types resolve),
    merged and assembled within ``budget_tokens`` exactly as :func:`retrieve` does; it depends only
    on the run and its document version, so every session of a run shows the same chunks in the
    same order and the prompt's cached prefix stays byte-identical (issue 25). In a run's first
    session it is what :func:`retrieve` gives for the pending clause types. ``later`` holds what
    only this session is shown: the current page of an asked clause type past page 0
    (``facts.retrieval_pages``) and the chunks earlier sessions' searches returned
    (:func:`earlier_searches`), minus the stable ones. ``similarity`` is filled as by
    :func:`retrieve`, for every requested clause type. Raises what retrieval raises.
    """
    ranker = session_retriever(deps, s)
    first = s.facts.model_copy(update={"retrieval_pages": {}})
    stable = retrieve(deps, s.run, first, list(s.facts.clause_types), s.chunks, budget_tokens, similarity, ranker)
    seen = {c.chunk_id for c in stable}
    later: dict[str, Chunk] = {}
    for clause in deps.catalogue.resolve_many(s.asked):
        number = s.facts.retrieval_pages.get(clause.name, 0)
        if number:
            later.update((c.chunk_id, c) for c in page(deps, s.run, clause, number, s.chunks, ranker))
    later.update((c.chunk_id, c) for c in earlier_searches(s.facts, s.number, s.chunks))
    return stable, sorted((c for cid, c in later.items() if cid not in seen), key=lambda c: c.ordinal)
