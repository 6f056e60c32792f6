"""The session's tools as objects in one registry (:mod:`longdoc.extract.tools`), and its one retriever.

A tool call is routed by one lookup; an unknown name answers as the harness always has. The
session builds its retriever, and so its BM25 indexes, once for every retrieval page and every
``search_chunks`` call, and ranks exactly as a retriever built anew for each call did.
"""

from __future__ import annotations

import pytest

import longdoc.extract.retrieve as retrieve_module
from longdoc.core.messages import ToolUseBlock, Usage
from longdoc.core.records import CaseFacts, Checkpoint, RunRecord
from longdoc.extract.catalogue import Catalogue, ClauseType
from longdoc.extract.context import retriever
from longdoc.extract.prompt import EXTRACT_TOOL, NOT_FOUND_TOOL, SEARCH_TOOL
from longdoc.extract.session import session_context
from longdoc.extract.session_types import Deps, Session, SessionOptions
from longdoc.extract.tools import TOOLS, UNKNOWN_TOOL, tool_definitions, tool_for
from tests.functional.test_rerankers import chunk

LAW = ClauseType(name="Governing Law", description="Which law governs the contract.",
                 hints=["governed by the laws of", "courts of New York"])
TEXTS = ["Master Services Agreement between Acme and Beta dated 1 May 2020.",
         "Fees are payable within thirty days; late fees accrue monthly.",
         "This Agreement is governed by the laws of the State of New York.",
         "Termination for convenience on ninety days notice; termination fees apply.",
         "The courts of New York have exclusive jurisdiction over any dispute.",
         "Confidential information shall be protected for five years after termination."]
QUERIES = ["termination notice", "late fees", "confidential information", "exclusive jurisdiction courts"]


CHUNKS = {c.chunk_id: c for c in (chunk(i, t) for i, t in enumerate(TEXTS))}
RUN = RunRecord(run_id="r", doc_id="msa", doc_version="v1", clause_types=[LAW.name], top_k=2)


class OrderIndex:
    """A VectorIndex answering every query with the chunks in reverse document order."""

    def query(self, vector, doc_id, doc_version, top_k):  # type: ignore[no-untyped-def]
        return [(cid, 0.9 - i / 100) for i, cid in enumerate(list(reversed(CHUNKS))[:top_k])]


class OneVector:
    """An Embedder whose every query vector is the same."""

    name, dimension = "fixed", 1

    def embed_query(self, text: str) -> list[float]:
        return [1.0]


def _deps() -> Deps:
    return Deps(state=None, blobs=None, embedder=OneVector(), index=OrderIndex(), model=None,  # type: ignore[arg-type]
                catalogue=Catalogue([LAW]))


def _session() -> Session:
    facts = CaseFacts(run_id="r", doc_id="msa", doc_version="v1", clause_types=[LAW.name], pending=[LAW.name])
    return Session(run=RUN, checkpoint=Checkpoint(run_id="r", version=0, case_facts=facts), facts=facts, last={},
                   usage=Usage(), calls=[], number=1, stop_reason=None, stalled=0, chunks=dict(CHUNKS),
                   asked=[LAW.name])


@pytest.fixture
def bm25_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts BM25 index constructions (one entry per index built, its corpus size)."""
    built: list[int] = []
    real = retrieve_module.BM25

    class Counted(real):  # type: ignore[misc, valid-type]
        def __init__(self, docs, *args, **kwargs):  # type: ignore[no-untyped-def]
            built.append(len(docs))
            super().__init__(docs, *args, **kwargs)

    monkeypatch.setattr(retrieve_module, "BM25", Counted)
    return built


def _search(query: str, n: int) -> ToolUseBlock:
    return ToolUseBlock(id=f"t{n}", name=SEARCH_TOOL, input={"query": query, "top_k": 2})


def test_a_session_builds_its_bm25_indexes_once_for_its_context_and_searches(bm25_builds: list[int]) -> None:
    # Given a session whose context is retrieved
    deps, s = _deps(), _session()
    session_context(deps, s, SessionOptions())
    # When the model runs several searches
    results = [TOOLS[SEARCH_TOOL].run(deps, s, _search(q, n), "m", SessionOptions(search_max_calls=10))
               for n, q in enumerate(QUERIES)]
    # Then each ran, and the chunk index and the passage index were each built once, for the whole session
    assert all(not r["is_error"] for r in results) and len(s.facts.searches) == len(QUERIES)
    assert len(bm25_builds) == 2
    assert s.ranker is not None


def test_the_sessions_retriever_ranks_as_one_built_per_call() -> None:
    # Given the session's retriever, used for the context and for each query in turn
    deps, s = _deps(), _session()
    session_context(deps, s, SessionOptions())
    ranker = s.ranker
    assert ranker is not None
    for query in [LAW.query_text(), *QUERIES]:
        # When it and a retriever built anew rank the same query
        fresh = retriever(deps, RUN, CHUNKS)
        # Then the ranking and the BM25 scores are the same, bit for bit
        assert ([c.chunk_id for c in ranker.rank(query, [1.0])]
                == [c.chunk_id for c in fresh.rank(query, [1.0])])
        terms = retrieve_module.bm25_terms(query)
        assert ranker.bm25().scores(terms) == fresh.bm25().scores(terms)
        assert ranker.passage_ranking(query) == fresh.passage_ranking(query)


def test_search_results_are_those_of_a_retriever_built_per_search() -> None:
    # Given two sessions shown the same context
    deps = _deps()
    reused, control = _session(), _session()
    for s in (reused, control):
        session_context(deps, s, SessionOptions())
    options = SessionOptions(search_max_calls=10)
    for n, query in enumerate(QUERIES):
        # When one searches with its kept retriever and the other with one built anew for each search
        control.ranker = None
        first = TOOLS[SEARCH_TOOL].run(deps, reused, _search(query, n), "m", options)
        second = TOOLS[SEARCH_TOOL].run(deps, control, _search(query, n), "m", options)
        # Then the answers are identical
        assert first == second
    assert reused.facts.searches == control.facts.searches


def test_tools_are_one_registry_in_the_order_sent() -> None:
    # Given the registry, Then its names are the tools sent, in order, the last with the cache breakpoint
    assert list(TOOLS) == [EXTRACT_TOOL, NOT_FOUND_TOOL, SEARCH_TOOL]
    definitions = tool_definitions()
    assert [d["name"] for d in definitions] == list(TOOLS)
    assert [("cache_control" in d) for d in definitions] == [False, False, True]
    assert all(tool_for(name) is tool for name, tool in TOOLS.items())


def test_an_unknown_tool_is_answered_unknown_tool_whatever_its_input() -> None:
    # Given calls of a tool the session does not offer, one naming a clause type and one without
    deps, s = _deps(), _session()
    session_context(deps, s, SessionOptions())
    assert tool_for("delete_everything") is UNKNOWN_TOOL
    named = ToolUseBlock(id="t1", name="delete_everything", input={"clause_type": LAW.name})
    unnamed = ToolUseBlock(id="t2", name="delete_everything", input={})
    # When each is run
    answers = [UNKNOWN_TOOL.run(deps, s, block, "m", SessionOptions()) for block in (named, unnamed)]
    # Then both say the tool is unknown (never "clause_type None was not requested"), naming the tools there are
    expected = "unknown tool 'delete_everything'; the tools are: extract_clause, record_not_found, search_chunks"
    assert answers == [{"type": "tool_result", "tool_use_id": t, "content": expected, "is_error": True}
                       for t in ("t1", "t2")]
    # And nothing on the session changed
    assert not s.facts.resolved
    assert s.rejected == 0
