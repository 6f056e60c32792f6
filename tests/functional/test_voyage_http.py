"""VoyageHttpEmbedder (REST, no SDK) against the loopback Voyage fake: the same contract as
VoyageEmbedder (tests/functional/test_cloud_adapters.py, test_voyage_batches.py), plus its
sameness with the SDK path: one batching implementation (token bound, split on a token-limit 400).

The fake speaks the wire format the real ``voyageai`` SDK uses; both embedders must send the
same requests and return the same vectors, so either can serve AWS mode.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from longdoc.adapters.embedders import VoyageEmbedder, voyage_token_bound
from longdoc.adapters.voyage import VoyageBatching
from longdoc.adapters.voyage_http import VoyageHttpEmbedder
from longdoc.core.documents import embedding_text
from longdoc.core.errors import EmbeddingInputTooLong, EmbeddingRequestError, EmbeddingUnavailable
from longdoc.ingest.pipeline import chunk_bytes
from tests.conftest import SHARED
from tests.fakes.loopback import drop, slow, status
from tests.fakes.voyage_server import FakeVoyage, count_tokens

TEST_KEY = "pa-test-not-a-real-key"
RATES = SHARED / "cases" / "rate-schedule.txt"


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
    # Given 200 chunk texts of 1,601 words each (a bound of ~3,200 tokens: 640K in all, over voyage-3.5's 320K)
    texts = [("word " * 1600).strip() + f" {i}" for i in range(200)]
    # When embedded
    embedder(voyage).embed_documents(texts)
    calls = voyage.embedding_calls()
    # Then no request was rejected and each stayed within 90 % of the budget by the token bound
    # (the 4-characters rule would have planned 200 x 2,000 = 400K: two requests at half the budget)
    assert voyage.rejected_calls() == [] and sum(len(c["input"]) for c in calls) == 200
    assert [len(c["input"]) for c in calls] == [89, 89, 22]
    assert all(sum(voyage_token_bound(t) for t in c["input"]) <= 288_000 for c in calls)


def law(fake: FakeVoyage, **kwargs) -> VoyageHttpEmbedder:  # type: ignore[no-untyped-def]
    return embedder(fake, model="voyage-law-2", dimension=256, **kwargs)


def rate_texts() -> list[str]:
    assert RATES.is_file(), f"shared case missing: {RATES}"
    return [embedding_text(c) for c in chunk_bytes("rate-schedule.txt", RATES.read_bytes())]


def test_both_adapters_share_one_batching_implementation() -> None:
    # Given the REST and the SDK adapter
    # Then neither defines its own batching, length check or split: both inherit VoyageBatching's
    shared = ("batches", "check_lengths", "embed_documents", "embed_query", "_embed_splitting", "_set_limits")
    for cls in (VoyageHttpEmbedder, VoyageEmbedder):
        assert issubclass(cls, VoyageBatching)
        assert not [name for name in shared if name in vars(cls)], cls
    # and both plan the same batches for the rate schedule (200 KB of numeric tables)
    texts = rate_texts()
    rest = VoyageHttpEmbedder(TEST_KEY, model="voyage-law-2").batches(texts)
    assert rest == VoyageEmbedder(TEST_KEY, model="voyage-law-2").batches(texts) and len(rest) > 1


def test_rate_schedule_with_voyage_law_2_stays_under_the_request_cap(voyage: FakeVoyage) -> None:
    # Given the rate schedule's chunks (~136,000 Voyage tokens; 50,000 by 4 characters a token)
    texts = rate_texts()
    # When they are embedded over REST with voyage-law-2 (120,000 tokens per request)
    vectors = law(voyage).embed_documents(texts)
    # Then every text has a vector, no request was refused, and each stayed under the cap
    assert len(vectors) == len(texts)
    assert voyage.rejected_calls() == []
    sizes = [sum(count_tokens(t) for t in call["input"]) for call in voyage.embedding_calls()]
    assert len(sizes) > 1 and max(sizes) <= 120_000 and sum(sizes) == sum(count_tokens(t) for t in texts)


def test_a_token_limit_400_splits_the_batch_and_never_resends_it(voyage: FakeVoyage) -> None:
    # Given an API whose cap is far below what the adapter plans for (a quota, a tokenizer change)
    voyage.max_request_tokens = 30_000
    texts = rate_texts()
    # When the rate schedule is embedded over REST
    vectors = law(voyage).embed_documents(texts)
    # Then refused batches were split in halves until each fit, every text is embedded once,
    # and no refused batch was ever sent again unchanged
    assert len(vectors) == len(texts) and sorted(voyage.embedded) == sorted(texts)
    rejected = [tuple(call["input"]) for call in voyage.rejected_calls()]
    sent = [tuple(call["input"]) for call in voyage.embedding_calls()]
    assert rejected and len(set(rejected)) == len(rejected) and not set(rejected) & set(sent)
    assert all(sum(count_tokens(t) for t in batch) <= 30_000 for batch in sent)
    # and the vectors are in input order (the halves were put back together)
    assert vectors[0] == pytest.approx(law(voyage).embed_documents([texts[0]])[0])
    assert vectors[-1] == pytest.approx(law(voyage).embed_documents([texts[-1]])[0])


def test_a_single_text_refused_for_tokens_is_too_long_naming_it(voyage: FakeVoyage) -> None:
    # Given a cap smaller than the second text alone
    voyage.max_request_tokens = 50
    texts = ["Rent is due monthly.", "|1|2|3|4|5|6|7|8|9|" * 5, "Notices in writing."]
    # When embedded over REST, Then the error names text 1 once it was sent alone
    with pytest.raises(EmbeddingInputTooLong) as caught:
        law(voyage).embed_documents(texts)
    assert caught.value.index == 1
    assert [call["input"] for call in voyage.rejected_calls()][-1] == [texts[1]]


def test_other_400s_are_not_split(voyage: FakeVoyage) -> None:
    # Given an API that refuses a batch for something other than its tokens
    voyage.inject(status(400, "input_type 'passage' is not supported"))
    # When a batch is embedded, Then the request error surfaces after one request: no halves sent
    with pytest.raises(EmbeddingRequestError, match="HTTP 400: input_type"):
        embedder(voyage).embed_documents(["a", "b", "c", "d"])
    assert len(voyage.calls("POST", "/v1/embeddings")) == 1


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
