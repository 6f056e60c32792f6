"""Passage-level evidence in triage: a unit scored by its best item (BM25) and best passage (dense) (issue 31)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from longdoc.adapters.blob import LocalBlobStore
from longdoc.triage.clauses import Clause, bm25_ranking
from longdoc.triage.passages import (PASSAGE_WORDS, dense_passage_ranking, items, passage_bm25_ranking,
                                     passages)
from longdoc.triage.unit_vectors import passage_vectors, unit_vectors, vectors_key
from tests.fakes.retrieval_counters import HashEmbedder


def _clause(n: int, text: str, doc: str = "wording") -> Clause:
    return Clause(f"k{n}", str(n), doc, "v1", f"c{n}", ("Section",), text, False, n, 50)


FILLER = [f"({chr(97 + i)}) any loss caused by {w} of any kind whatsoever, however it arises, and any consequence of it;"
          for i, w in enumerate(["wear and tear", "rust or corrosion", "war or invasion", "nuclear radiation",
                                 "riot or strike", "terrorism", "pollution", "gradual deterioration",
                                 "moth or vermin", "confiscation", "computer virus", "sonic bangs"])]
EXCLUSIONS = _clause(0, "Exclusions. We will not pay for:\n" + "\n".join(
    [*FILLER[:6], "(m) acupuncture treatment at a clinic;", *FILLER[6:]]))
OUTPATIENT = _clause(1, "Outpatient benefit. We pay for outpatient treatment at a clinic by a medical practitioner, "
                        "up to the limit in the schedule.")
HOSPITAL = _clause(2, "Hospital benefit. We pay room and board in a hospital while you are confined on the advice of "
                      "a medical practitioner.")


def test_items_are_the_sentences_and_list_items_of_a_unit() -> None:
    # Given an exclusions unit of thirteen list items, When it is cut into items
    got = items(EXCLUSIONS.text)
    # Then the lead-in and each item stand alone, the deciding one among them (a one-word heading is no item)
    assert got[0] == "We will not pay for:" and got[7] == "(m) acupuncture treatment at a clinic;"
    assert len(got) == 14


def test_passages_group_sentences_up_to_the_word_cap() -> None:
    # Given 30 sentences of 10 words, When grouped into dense passages
    text = " ".join(f"Sentence {n} has exactly ten words in it, no more." for n in range(30))
    got = passages(text)
    # Then each passage holds whole sentences, at most PASSAGE_WORDS words, and none is lost
    assert all(len(p.split()) <= PASSAGE_WORDS for p in got) and len(got) == 3
    assert " ".join(got) == text


def test_a_long_list_whose_one_item_matches_outranks_a_short_clause_sharing_a_common_word() -> None:
    # Given the claim's words, which one item of a long exclusions list holds and a short cover clause shares in part
    pool = [EXCLUSIONS, OUTPATIENT, HOSPITAL]
    query = "12 sessions of acupuncture treatment at a clinic"
    # When ranked by unit-level BM25, the short clause wins (the list's length dilutes its one item)
    assert bm25_ranking(pool, query)[0] == OUTPATIENT.key
    # Then ranked by the best item, the exclusions list is first
    assert passage_bm25_ranking(pool, query, bm25_ranking(pool, query))[:2] == [EXCLUSIONS.key, OUTPATIENT.key]


def test_a_unit_whose_one_passage_matches_the_query_rises_in_the_dense_ranking() -> None:
    # Given unit vectors in which B's whole vector is nearer the query, but one passage of A is the query itself
    query = [1.0, 0.0, 0.0]
    vectors = {"k0": [0.0, 1.0, 0.0], "k1": [0.45, 0.893, 0.0]}
    parts = {"k0": [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]}
    pool = [_clause(0, "a"), _clause(1, "b")]
    # When ranked by whole vectors only (mix 0), B is first
    assert dense_passage_ranking(pool, vectors, parts, query, mix=0.0) == ["k1", "k0"]
    # Then with the best passage mixed in at the default share, A is first (0.5 x 1 + 0.5 x 0 > 0.45)
    assert dense_passage_ranking(pool, vectors, parts, query) == ["k0", "k1"]


class _Counting(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.embedded: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.embedded += list(texts)
        return super().embed_documents(texts)


def test_passage_vectors_are_cached_beside_the_unit_vectors_and_one_passage_units_have_none(tmp_path: Path) -> None:
    # Given a long unit (three passages) and a one-passage unit
    long_text = " ".join(f"Sentence {n} has exactly ten words in it, no more." for n in range(30))
    pool = [_clause(0, long_text), _clause(1, "A short clause of one sentence.")]
    blobs, embedder = LocalBlobStore(tmp_path), _Counting()
    # When the unit and passage vectors are asked for
    units = unit_vectors(blobs, embedder, pool)
    parts = passage_vectors(blobs, embedder, pool)
    # Then only the long unit has passage vectors, one per passage, each a unit vector
    assert list(parts) == ["k0"] and len(parts["k0"]) == 3 and set(units) == {"k0", "k1"}
    assert len(embedder.embedded) == 2 + 3 and embedder.embedded[2].startswith("Section\nSentence 0 ")
    # And asking again embeds nothing (the same cache file, keyed by text)
    again = passage_vectors(blobs, embedder, pool)
    assert len(embedder.embedded) == 5 and len(again["k0"]) == 3 and set(unit_vectors(blobs, embedder, pool)) == {"k0", "k1"}
    assert len(embedder.embedded) == 5
    assert all(abs(a - b) < 1e-6 for x, y in zip(again["k0"], parts["k0"], strict=True) for a, b in zip(x, y, strict=True))


def test_a_damaged_vector_cache_is_rebuilt_not_fatal(tmp_path: Path) -> None:
    # Given a cached vector file cut short (a partial copy), and another of the wrong shape
    pool = [_clause(0, "A short clause of one sentence.")]
    blobs, embedder = LocalBlobStore(tmp_path), _Counting()
    unit_vectors(blobs, embedder, pool)
    key = vectors_key(embedder.name, embedder.dimension, "wording", "v1")
    good = blobs.get(key)
    for damaged in (good[: len(good) // 2], b'{"vectors": [1, 2]}', b'{"vectors": {"x": ["not", "base64"]}}'):
        blobs.put(key, damaged)
        # When triage asks for the vectors again, Then they are embedded anew and the file is whole again
        assert set(unit_vectors(blobs, embedder, pool)) == {"k0"}
        assert blobs.get(key) == good


def test_pool_vectors_read_and_write_the_cache_file_once_for_both(tmp_path: Path) -> None:
    # Given the same pool as above, and a blob store that counts its reads and writes
    from longdoc.triage.unit_vectors import pool_vectors

    long_text = " ".join(f"Sentence {n} has exactly ten words in it, no more." for n in range(30))
    pool = [_clause(0, long_text), _clause(1, "A short clause of one sentence.")]
    calls: list[str] = []

    class Counted(LocalBlobStore):
        def get(self, key: str) -> bytes:
            calls.append("get")
            return super().get(key)

        def put(self, key: str, data: bytes, *args, **kwargs) -> None:  # type: ignore[override]
            calls.append("put")
            super().put(key, data, *args, **kwargs)

    blobs, embedder = Counted(tmp_path), _Counting()
    # When both kinds of vector are asked for in one call
    units, parts = pool_vectors(blobs, embedder, pool)
    # Then they are those of unit_vectors / passage_vectors, from one read and one write of the file
    assert set(units) == {"k0", "k1"} and list(parts) == ["k0"] and len(parts["k0"]) == 3
    assert calls == ["get", "put"] and len(embedder.embedded) == 5
    # And read back from the cache they are what the two single calls read
    cached_units, cached_parts = pool_vectors(blobs, embedder, pool)
    assert calls == ["get", "put", "get"] and len(embedder.embedded) == 5
    assert cached_parts == passage_vectors(blobs, embedder, pool) and cached_units == unit_vectors(blobs, embedder, pool)
