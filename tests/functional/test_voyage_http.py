"""VoyageHttpEmbedder (REST, no SDK) against the loopback Voyage fake: the same contract as
VoyageEmbedder (tests/functional/test_cloud_adapters.py), plus its sameness with the SDK path.

The fake speaks the wire format the real ``voyageai`` SDK uses; both embedders must send the
same requests and return the same vectors, so either can serve AWS mode.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from longdoc.adapters.embedders import VoyageEmbedder
from longdoc.adapters.voyage_http import VoyageHttpEmbedder
from longdoc.core.errors import EmbeddingInputTooLong, EmbeddingRequestError, EmbeddingUnavailable
from tests.fakes.loopback import drop, slow, status
from tests.fakes.voyage_server import FakeVoyage

TEST_KEY = "pa-test-not-a-real-key"


@pytest.fixture
def voyage() -> Iterator[FakeVoyage]:
    with FakeVoyage() as fake:
        yield fake


def embedder(fake: FakeVoyage, **kwargs) -> VoyageHttpEmbedder:  # type: ignore[no-untyped-def]
    kwargs.setdefault("retry_initial", 0.001)
    kwargs.setdefault("retry_max", 0.01)
    return VoyageHttpEmbedder(TEST_KEY, base_url=fake.base_url, **kwargs)


def test_requests_fill_the_text_limit_and_match_the_sdk(voyage: FakeVoyage) -> None:
    # Given 2,500 short chunk texts
    texts = [f"clause number {i}" for i in range(2500)]
    # When they are embedded as documents and one query is embedded, over REST and through the SDK
    vectors = embedder(voyage).embed_documents(texts)
    query = embedder(voyage).embed_query("governing law")
    rest_calls = voyage.embedding_calls()
    sdk = VoyageEmbedder(TEST_KEY, base_url=voyage.base_url)
    sdk_vectors = sdk.embed_documents(texts[:3])
    sdk_query = sdk.embed_query("governing law")
    sdk_calls = voyage.embedding_calls()[len(rest_calls):]
    # Then the REST requests carried 1,000 + 1,000 + 500 documents and a query, untruncated, base64
    assert [len(c["input"]) for c in rest_calls] == [1000, 1000, 500, 1]
    assert [c["input_type"] for c in rest_calls] == ["document"] * 3 + ["query"]
    assert all(c["truncation"] is False and c["output_dimension"] == 1024 for c in rest_calls)
    assert all(c["model"] == "voyage-3.5" and c["encoding_format"] == "base64" for c in rest_calls)
    # And the request bodies (fields the SDK sends as null left out) and vectors equal the SDK's
    assert rest_calls[-1] == {k: v for k, v in sdk_calls[-1].items() if v is not None}
    assert all(v == pytest.approx(s) for v, s in zip(vectors[:3], sdk_vectors, strict=True))
    assert query == pytest.approx(sdk_query)
    assert len(vectors) == 2500 and all(len(v) == 1024 for v in vectors)
    # And the key travels as a bearer token only
    assert {r.api_key for r in voyage.requests} == {TEST_KEY}
    assert TEST_KEY not in repr(embedder(voyage))


def test_token_budget_splits_requests_below_the_documented_limit(voyage: FakeVoyage) -> None:
    # Given 200 chunk texts of ~2,000 estimated tokens each (400K in all, over voyage-3.5's 320K)
    texts = [("word " * 1600).strip() + f" {i}" for i in range(200)]
    # When embedded, Then no request was rejected and each stayed within half the budget
    embedder(voyage).embed_documents(texts)
    calls = voyage.embedding_calls()
    assert sum(len(c["input"]) for c in calls) == 200 and len(calls) == 3
    assert all(sum(len(t) for t in c["input"]) / 4 <= 160_000 for c in calls)


def test_retries_429_500_slow_and_dropped_answers(voyage: FakeVoyage) -> None:
    # Given an API that throttles, fails, drops the connection and answers too slowly once each
    voyage.inject(status(429, "rate limited"), status(500), drop(), slow(1.5))
    # When a batch is embedded with a 1 s request timeout, Then the fifth attempt succeeded
    vectors = embedder(voyage, timeout=1.0).embed_documents(["Termination for convenience."])
    assert len(vectors) == 1
    assert len(voyage.calls("POST", "/v1/embeddings")) == 5


def test_gives_up_after_max_attempts_with_a_transient_error(voyage: FakeVoyage) -> None:
    # Given an API that keeps answering 429, When embedding with 3 attempts allowed
    voyage.inject(*[status(429, "rate limited")] * 10)
    with pytest.raises(EmbeddingUnavailable, match="after 3 attempts.*HTTP 429: rate limited"):
        embedder(voyage, max_attempts=3).embed_documents(["a", "b"])
    # Then exactly three requests were made
    assert len(voyage.calls("POST", "/v1/embeddings")) == 3


@pytest.mark.parametrize("code", [400, 403])
def test_client_errors_are_not_retried(voyage: FakeVoyage, code: int) -> None:
    # Given an API that rejects the request, When embedding
    voyage.inject(status(code, "input is malformed"))
    # Then a request error naming the status and detail is raised after one request only
    with pytest.raises(EmbeddingRequestError, match=f"HTTP {code}: input is malformed") as caught:
        embedder(voyage).embed_documents(["a"])
    assert TEST_KEY not in str(caught.value)
    assert len(voyage.calls("POST", "/v1/embeddings")) == 1


def test_over_long_text_is_an_error_naming_it_before_any_request(voyage: FakeVoyage) -> None:
    # Given a batch whose third text is far over voyage-3.5's 32K-token context
    with pytest.raises(EmbeddingInputTooLong) as caught:
        embedder(voyage).embed_documents(["short", "short too", "x" * 200_000])
    # Then the error names text 2 and nothing was sent
    assert caught.value.index == 2
    assert voyage.requests == []


def test_reports_tokens_used(voyage: FakeVoyage) -> None:
    # Given an embedder, When two texts are embedded, Then total_tokens is what the API reported
    e = embedder(voyage)
    e.embed_documents(["Payment is due.", "Governing law: New York."])
    assert e.total_tokens == 4 + 6


def test_module_imports_no_sdk_and_no_numpy() -> None:
    # Given a fresh interpreter, When the module is imported and an embedder built
    probe = ("import sys; from longdoc.adapters.voyage_http import VoyageHttpEmbedder; VoyageHttpEmbedder('k'); "
             "print(sorted(m for m in ('voyageai', 'numpy', 'PIL', 'tokenizers') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    # Then none of the SDK's heavy dependencies is loaded
    assert done.stdout.strip() == "[]"


def test_a_401_reads_the_key_again_and_retries_once(voyage: FakeVoyage) -> None:
    # Given a key source whose cached key was revoked while the secret holds a new one
    keys = {"cached": "pa-old-not-real", "secret": "pa-new-not-real"}

    def source(*, refresh: bool = False) -> str:
        if refresh:
            keys["cached"] = keys["secret"]
        return keys["cached"]

    voyage.inject(status(401, "invalid key"))
    # When embedding
    vectors = VoyageHttpEmbedder(source, base_url=voyage.base_url).embed_documents(["a clause"])
    # Then the second request carried the new key and succeeded
    assert len(vectors) == 1
    assert [r.api_key for r in voyage.requests] == ["pa-old-not-real", "pa-new-not-real"]


def test_a_401_with_an_unchanged_key_is_a_request_error(voyage: FakeVoyage) -> None:
    # Given an API that rejects the key, and a secret that still holds it
    voyage.inject(status(401, "invalid key"))
    # When embedding, Then a request error is raised after one request, without the key in it
    with pytest.raises(EmbeddingRequestError, match="HTTP 401") as caught:
        embedder(voyage).embed_documents(["a"])
    assert TEST_KEY not in str(caught.value)
    assert len(voyage.calls("POST", "/v1/embeddings")) == 1
