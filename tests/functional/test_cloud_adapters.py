"""Voyage and Pinecone adapters through their real SDKs against the loopback fakes.

What the contract suite cannot show: request batching as seen on the wire (sizes and
bytes from the fakes' request logs), retries of 429/5xx/slow/dropped answers, error
mapping after the retries, and the start-up configuration checks.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from longdoc.adapters.embedders import VoyageEmbedder, voyage_token_bound
from longdoc.adapters.vector_index import PINECONE_MAX_METADATA_BYTES, PineconeIndex
from longdoc.core.errors import ConfigError, EmbeddingInputTooLong, EmbeddingRequestError, EmbeddingUnavailable, IndexUnavailable
from longdoc.core.models import Chunk
from tests.fakes.loopback import drop, slow, status
from tests.fakes.pinecone_server import FakePinecone
from tests.fakes.voyage_server import FakeVoyage

TEST_KEY = "test-key-not-real"


@pytest.fixture
def pinecone_fake() -> Iterator[FakePinecone]:
    with FakePinecone(dimension=1024) as fake:
        yield fake


@pytest.fixture(autouse=True)
def no_sdk_sleeps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the Pinecone SDK's retry backoff instant (its documented test seam)."""
    import pinecone._internal.http_client as http_client

    monkeypatch.setattr(http_client, "_retry_sleep", lambda seconds: None)


def embedder(fake: FakeVoyage, **kwargs) -> VoyageEmbedder:  # type: ignore[no-untyped-def]
    kwargs.setdefault("retry_initial", 0.001)
    kwargs.setdefault("retry_max", 0.01)
    return VoyageEmbedder(TEST_KEY, base_url=fake.base_url, **kwargs)


def chunk(doc_id: str, version: str, ordinal: int, text: str = "text", heading: list[str] | None = None) -> Chunk:
    return Chunk(chunk_id=f"{doc_id}:{version[:8]}:{ordinal:04d}", doc_id=doc_id, doc_version=version,
                 ordinal=ordinal, source=f"{doc_id}.pdf", page_start=1, page_end=1, section_id="1",
                 heading_path=heading or [], text=text, char_start=0, char_end=len(text),
                 token_count=len(text) // 4, content_hash="0" * 64)


# ----------------------------------------------------------------------------- Voyage


def test_voyage_requests_fill_the_text_limit_and_send_document_and_query_types(voyage: FakeVoyage) -> None:
    # Given 2,500 short chunk texts
    texts = [f"clause number {i}" for i in range(2500)]
    # When they are embedded as documents and one query is embedded
    vectors = embedder(voyage).embed_documents(texts)
    embedder(voyage).embed_query("governing law")
    # Then three requests carried 1,000 + 1,000 + 500 texts, as documents, untruncated
    calls = voyage.embedding_calls()
    assert [len(c["input"]) for c in calls] == [1000, 1000, 500, 1]
    assert [c["input_type"] for c in calls] == ["document"] * 3 + ["query"]
    assert all(c["truncation"] is False and c["output_dimension"] == 1024 for c in calls)
    assert all(c["model"] == "voyage-3.5" and c["encoding_format"] == "base64" for c in calls)
    # And every text got its own 1024-float vector, in order
    assert len(vectors) == 2500 and all(len(v) == 1024 for v in vectors)
    assert voyage.embedded[:2500] == texts


def test_voyage_token_budget_splits_requests_below_the_documented_limit(voyage: FakeVoyage) -> None:
    # Given 200 chunk texts of ~2,000 estimated tokens each (400K in all, over voyage-3.5's 320K)
    texts = [("word " * 1600).strip() + f" {i}" for i in range(200)]
    # When embedded
    embedder(voyage).embed_documents(texts)
    # Then no request was rejected and each stayed within 90 % of the 320K-token budget, counted
    # by the conservative bound (2 per 4-letter word and 1 per digit: 3,201-3,203 a text, 89 a request)
    calls = voyage.embedding_calls()
    assert sum(len(c["input"]) for c in calls) == 200
    assert all(sum(voyage_token_bound(t) for t in c["input"]) <= 288_000 for c in calls)
    assert [len(c["input"]) for c in calls] == [89, 89, 22]


def test_voyage_retries_429_500_slow_and_dropped_answers(voyage: FakeVoyage) -> None:
    # Given an API that throttles, fails, drops the connection and answers too slowly once each
    voyage.inject(status(429, "rate limited"), status(500), drop(), slow(1.5))
    # When a batch is embedded with a 1 s request timeout
    vectors = embedder(voyage, timeout=1.0).embed_documents(["Termination for convenience."])
    # Then the fifth attempt succeeded
    assert len(vectors) == 1
    assert len(voyage.calls("POST", "/v1/embeddings")) == 5
    assert voyage.pending_faults == 0


def test_voyage_gives_up_after_max_attempts_with_a_transient_error(voyage: FakeVoyage) -> None:
    # Given an API that keeps answering 429
    voyage.inject(*[status(429, "rate limited")] * 10)
    # When a batch is embedded with 3 attempts allowed
    with pytest.raises(EmbeddingUnavailable, match="after 3 attempts.*RateLimitError"):
        embedder(voyage, max_attempts=3).embed_documents(["a", "b"])
    # Then exactly three requests were made
    assert len(voyage.calls("POST", "/v1/embeddings")) == 3


def test_voyage_client_errors_are_not_retried(voyage: FakeVoyage) -> None:
    # Given an API that rejects the request (bad input)
    voyage.inject(status(400, "input is malformed"))
    # When embedding, Then a request error is raised after one request only
    with pytest.raises(EmbeddingRequestError, match="input is malformed"):
        embedder(voyage).embed_documents(["a"])
    assert len(voyage.calls("POST", "/v1/embeddings")) == 1


def test_voyage_over_long_text_is_an_error_naming_it_before_any_request(voyage: FakeVoyage) -> None:
    # Given a batch whose third text is far over voyage-3.5's 32K-token context
    texts = ["short", "short too", "x" * 200_000]
    # When embedded, Then the error names text 2 and nothing was sent (no silent truncation)
    with pytest.raises(EmbeddingInputTooLong) as caught:
        embedder(voyage).embed_documents(texts)
    assert caught.value.index == 2
    assert voyage.requests == []


def test_voyage_reports_tokens_used(voyage: FakeVoyage) -> None:
    # Given an embedder, When two texts are embedded
    e = embedder(voyage)
    e.embed_documents(["Payment is due.", "Governing law: New York."])
    # Then total_tokens is what the API reported (the fake counts words and punctuation)
    assert e.total_tokens == 4 + 6


# --------------------------------------------------------------------------- Pinecone


def test_pinecone_upserts_stay_within_vectors_and_bytes_per_request(pinecone_fake: FakePinecone) -> None:
    # Given 1,200 chunks of 1024 dimensions with 200-character previews
    index = PineconeIndex(TEST_KEY, pinecone_fake.host, "documents", 1024)
    chunks = [chunk("contract", "abcdef0123456789", i, "y" * 500) for i in range(1200)]
    vectors = [[0.0123456789 * ((i % 7) + 1)] * 1024 for i in range(1200)]
    # When upserted
    assert index.upsert(chunks, vectors) == 1200
    # Then every request held at most 1,000 vectors and less than 2 MB on the wire
    sizes = pinecone_fake.upsert_sizes()
    assert sum(n for n, _ in sizes) == 1200
    assert all(n <= 1000 and size < 2 * 1024 * 1024 for n, size in sizes)
    assert len(sizes) >= 2
    assert pinecone_fake.count("documents") == 1200


def test_pinecone_list_by_prefix_finds_a_version_and_delete_removes_only_it(pinecone_fake: FakePinecone) -> None:
    # Given 250 vectors of one version (three list pages) and 3 of another version
    index = PineconeIndex(TEST_KEY, pinecone_fake.host, "documents", 1024)
    v1 = [chunk("contract", "1111111122222222", i) for i in range(250)]
    v2 = [chunk("contract", "3333333344444444", i) for i in range(3)]
    index.upsert(v1, [[1.0] + [0.0] * 1023] * 250)
    index.upsert(v2, [[1.0] + [0.0] * 1023] * 3)
    # When the first version's ids are listed and the version is deleted
    listed = index.list_ids("contract:11111111:")
    index.delete_document("contract", "1111111122222222")
    # Then the listing found all 250 across pages, and only the other version remains
    assert sorted(listed) == sorted(c.chunk_id for c in v1)
    assert len(pinecone_fake.calls("GET", "/vectors/list")) >= 3
    assert pinecone_fake.ids("documents") == sorted(c.chunk_id for c in v2)


def test_pinecone_sdk_retries_throttling_and_server_errors(pinecone_fake: FakePinecone) -> None:
    # Given an index answering 429, then 500, then dropping the connection
    index = PineconeIndex(TEST_KEY, pinecone_fake.host, "documents", 1024)
    pinecone_fake.inject(status(429), status(500), drop())
    # When one chunk is upserted
    index.upsert([chunk("d", "0000000000000000", 0)], [[1.0] + [0.0] * 1023])
    # Then the SDK retried until it landed
    assert pinecone_fake.count("documents") == 1
    assert len(pinecone_fake.calls("POST", "/vectors/upsert")) == 4


def test_pinecone_query_errors_left_after_the_sdk_retries_are_index_unavailable(pinecone_fake: FakePinecone) -> None:
    # Given an index that keeps answering 503 to queries (more than the SDK's retries)
    index = PineconeIndex(TEST_KEY, pinecone_fake.host, "documents", 1024)
    pinecone_fake.inject(*[status(503)] * 8)
    # When a document is queried, then it is IndexUnavailable (the name the bulk machine retries)
    with pytest.raises(IndexUnavailable, match="Pinecone query of d@0000000000000000"):
        index.query([1.0] + [0.0] * 1023, "d", "0000000000000000", 5)


def test_pinecone_metadata_stays_under_the_per_vector_limit() -> None:
    # Given a chunk with an absurdly long heading path (60 KB)
    big = chunk("d", "0000000000000000", 0, "z" * 5000, heading=["H" * 1000] * 60)
    # When its metadata is built
    meta = PineconeIndex.metadata(big)
    # Then it fits in 40 KB, keeps the ids and pages, and never holds the whole text
    import json

    assert len(json.dumps(meta).encode()) <= PINECONE_MAX_METADATA_BYTES
    assert (meta["doc_id"], meta["doc_version"], meta["page_start"]) == ("d", "0000000000000000", 1)
    assert meta["preview"] == "z" * 200
    assert all(len(h) <= 200 for h in meta["heading_path"])


def test_pinecone_check_rejects_wrong_dimension_and_metric() -> None:
    # Given a 512-dimensional cosine index and a 1024-dimensional dotproduct index
    with FakePinecone(dimension=512) as small, FakePinecone(dimension=1024, metric="dotproduct") as dot:
        # When adapters for 1024-dimensional vectors check them at start-up
        # Then each mismatch is a ConfigError naming what differs
        with pytest.raises(ConfigError, match="512-dimensional.*1024"):
            PineconeIndex(TEST_KEY, small.host, "documents", 1024).check_dimension()
        with pytest.raises(ConfigError, match="dotproduct"):
            PineconeIndex(TEST_KEY, dot.host, "documents", 1024).check_dimension()
        PineconeIndex(TEST_KEY, small.host, "documents", 512).check_dimension()
