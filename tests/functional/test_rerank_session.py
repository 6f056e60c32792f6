"""A session's retrieval with a reranker (issue 13): the clause types' pages (``context.page`` /
``context.retrieve``) and the model's ``search_chunks`` take the reranker's order from ``Deps``.

The reranker is the Voyage adapter against the loopback fake, whose scores are the share of the
query's words a chunk holds (``overlap_score``); the same retrieval without a reranker is the
control, so each test shows the order changed because of the reranker and only because of it.
"""

from __future__ import annotations

from types import SimpleNamespace


from longdoc.adapters.voyage_rerank import VoyageReranker
from longdoc.core.documents import embedding_text
from longdoc.core.messages import ToolUseBlock
from longdoc.core.records import CaseFacts, RunRecord
from longdoc.extract.catalogue import Catalogue, ClauseType
from longdoc.extract.context import page, retrieve, retriever
from longdoc.extract.search_calls import run_search
from longdoc.extract.session_types import Deps, SessionOptions
from tests.fakes.voyage_server import FakeVoyage, overlap_score
from tests.functional.test_rerankers import chunk

LAW = ClauseType(name="Governing Law", description="Which law governs the contract.",
                 hints=["governed by the laws of", "courts of New York"])
TEXTS = ["Master Services Agreement between Acme and Beta dated 1 May 2020.",
         "Fees are payable within thirty days.",
         "This Agreement is governed by the laws of the State of New York.",
         "Termination for convenience on ninety days notice.",
         "The courts of New York have exclusive jurisdiction.",
         "Confidential information shall be protected."]
CHUNKS = {c.chunk_id: c for c in (chunk(i, t) for i, t in enumerate(TEXTS))}


class OrderIndex:
    """A VectorIndex answering every query with the chunks in reverse document order (the dense ranking)."""

    def query(self, vector, doc_id, doc_version, top_k):  # type: ignore[no-untyped-def]
        ids = list(reversed(CHUNKS))
        return [(cid, 0.9 - i / 100) for i, cid in enumerate(ids[:top_k])]


class OneVector:
    """An Embedder whose every query vector is the same (ranking then comes from the index's order)."""

    name, dimension = "fixed", 1

    def embed_query(self, text: str) -> list[float]:
        return [1.0]


def session_deps(reranker: VoyageReranker | None) -> Deps:
    return Deps(state=None, blobs=None, embedder=OneVector(), index=OrderIndex(), model=None,  # type: ignore[arg-type]
                catalogue=Catalogue([LAW]), reranker=reranker)


RUN = RunRecord(run_id="r", doc_id="msa", doc_version="v1", clause_types=[LAW.name], top_k=2)


def by_overlap(query: str, fused: list[str]) -> list[int]:
    """Ordinals of the fused candidates sorted as the fake reranker scores them (ties: fused order)."""
    return [CHUNKS[cid].ordinal for cid in sorted(fused, key=lambda cid: (-overlap_score(query, embedding_text(CHUNKS[cid])),
                                                                           fused.index(cid)))]


def test_clause_type_pages_follow_the_rerankers_order(voyage: FakeVoyage) -> None:
    # Given the fused order without a reranker (the document's opening moved up to rank 2)
    fused = [c.chunk_id for c in retriever(session_deps(None), RUN, CHUNKS).rank(LAW.query_text(), [1.0])]
    plain = [c.ordinal for c in page(session_deps(None), RUN, LAW, 0, CHUNKS)]
    # When the pages are retrieved with the Voyage reranker in Deps
    deps = session_deps(VoyageReranker("pa-not-real", base_url=voyage.base_url))
    first = [c.ordinal for c in page(deps, RUN, LAW, 0, CHUNKS)]
    second = [c.ordinal for c in page(deps, RUN, LAW, 1, CHUNKS)]
    # Then page 1 is the reranker's best two and page 2 its next two: the governing-law and courts
    # chunks first, where the fused order had the agreement's opening second
    expected = by_overlap(LAW.query_text(), fused)
    assert first == expected[:2] == [2, 4]
    assert second == expected[2:4]
    assert plain != first and 0 in plain
    # And the reranker saw the fused candidates (all six chunks, fewer than 20) under the clause type's query
    calls = voyage.rerank_calls()
    assert [c["query"] for c in calls] == [LAW.query_text()] * 2
    assert all(len(c["documents"]) == len(CHUNKS) for c in calls)


def test_the_sessions_context_is_the_rerankers_top_k(voyage: FakeVoyage) -> None:
    # Given the run's pending clause type at its first page
    facts = CaseFacts(run_id="r", doc_id="msa", doc_version="v1", clause_types=[LAW.name], pending=[LAW.name])
    # When the session's context is retrieved without and with the reranker
    plain = retrieve(session_deps(None), RUN, facts, facts.pending, CHUNKS)
    reranked = retrieve(session_deps(VoyageReranker("pa-not-real", base_url=voyage.base_url)), RUN, facts,
                        facts.pending, CHUNKS)
    # Then the reranker's two best chunks are sent (in document order), not the fused two
    assert [c.ordinal for c in reranked] == [2, 4]
    assert [c.ordinal for c in plain] != [2, 4]


def test_search_chunks_results_follow_the_rerankers_order(voyage: FakeVoyage) -> None:
    # Given a session that has been shown nothing, and the model's search for the courts
    query = "which courts have jurisdiction in New York"
    block = ToolUseBlock(id="t1", name="search_chunks", input={"query": query, "top_k": 2})

    def search(deps: Deps) -> list[str]:
        facts = CaseFacts(run_id="r", doc_id="msa", doc_version="v1", clause_types=[LAW.name], pending=[LAW.name])
        s = SimpleNamespace(facts=facts, number=1, conversation_from=None, run=RUN, chunks=CHUNKS, shown=set(), ranker=None)
        text, is_error = run_search(deps, s, block, SessionOptions())  # type: ignore[arg-type]
        assert not is_error, text
        return facts.searches[-1].chunk_ids

    # When the search runs without and with the reranker
    fused = [c.chunk_id for c in retriever(session_deps(None), RUN, CHUNKS).rank(query, [1.0])]
    plain = search(session_deps(None))
    reranked = search(session_deps(VoyageReranker("pa-not-real", base_url=voyage.base_url)))
    # Then the search returns the reranker's best two, best first: the courts chunk, then governing law
    assert [CHUNKS[cid].ordinal for cid in reranked] == by_overlap(query, fused)[:2] == [4, 2]
    assert plain != reranked
