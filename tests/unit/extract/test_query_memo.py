"""Query embeddings memoised per (model, text) (issue 26)."""

from __future__ import annotations

from longdoc.extract.query_memo import MemoisedQueries, memoised
from tests.fakes.retrieval_counters import HashEmbedder


def test_each_query_text_is_embedded_once_and_documents_pass_through() -> None:
    # Given a memo over a counting embedder
    inner = HashEmbedder()
    memo = MemoisedQueries(inner)
    # When the same two query texts are asked 50 times each
    vectors = [memo.embed_query(text) for _ in range(50) for text in ("governing law", "insurance")]
    # Then the embedder was called twice, and every answer equals the embedder's own vector
    assert inner.query_calls == 2 and memo.calls == 2
    assert vectors[0] == vectors[2] == HashEmbedder().embed_query("governing law")
    # And chunk embeddings are not memoised
    assert memo.embed_documents(["a", "a"]) == inner.embed_documents(["a", "a"])


def test_the_memo_is_bounded_and_a_caller_cannot_change_it() -> None:
    # Given a memo of 2 entries
    inner = HashEmbedder()
    memo = MemoisedQueries(inner, max_entries=2)
    first = memo.embed_query("a")
    first[0] = 99.0  # a caller changing its copy
    memo.embed_query("b")
    memo.embed_query("c")  # drops "a", the least recently used
    # Then "a" is embedded again, unchanged by the caller's edit
    again = memo.embed_query("a")
    assert inner.query_calls == 4 and again[0] != 99.0
    # And wrapping twice keeps one memo
    assert memoised(memo) is memo and memo.name == inner.name and memo.dimension == inner.dimension
