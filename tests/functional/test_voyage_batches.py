"""Voyage's per-request token cap: batches counted conservatively, split on a token-limit 400.

The real ``voyageai`` SDK talks to the loopback fake (``tests/fakes/voyage_server.py``),
which enforces each model's documented request budget (120,000 tokens for voyage-law-2)
and answers over it with Voyage's 400. The input is ``../shared/cases/rate-schedule.txt``:
200 KB of numeric tables, about 136,000 Voyage tokens, 50,000 by the 4-characters rule.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from longdoc.adapters.blob import LocalBlobStore
from longdoc.adapters.state import SqliteStateStore
from longdoc.adapters.vector_index import LanceDBIndex
from longdoc.adapters.voyage import VoyageEmbedder, voyage_token_bound
from longdoc.core.documents import embedding_text
from longdoc.core.errors import EmbeddingInputTooLong
from longdoc.ingest.pipeline import IngestDeps, chunk_bytes, ingest_document
from longdoc.ingest.source import IngestSource
from tests.conftest import SHARED
from tests.fakes.voyage_server import FakeVoyage, count_tokens

RATES = SHARED / "cases" / "rate-schedule.txt"
DIM = 256


def law(fake: FakeVoyage, **kwargs) -> VoyageEmbedder:  # type: ignore[no-untyped-def]
    return VoyageEmbedder("test-key", model="voyage-law-2", dimension=DIM, base_url=fake.base_url,
                          retry_initial=0.001, retry_max=0.01, **kwargs)


def rate_texts() -> list[str]:
    assert RATES.is_file(), f"shared case missing: {RATES}"
    return [embedding_text(c) for c in chunk_bytes("rate-schedule.txt", RATES.read_bytes())]


def test_the_token_bound_is_above_the_fakes_count_for_tables_and_prose(corpus_dir: Path) -> None:
    for text in (RATES.read_text(), (corpus_dir / "Apache-2.0.txt").read_text(), "契約書 第1条 (賃料) ¥120,000"):
        assert voyage_token_bound(text) >= count_tokens(text)
    # 4 characters per token would say 50,017 for the rate schedule; the API counted ~136,000
    assert voyage_token_bound(RATES.read_text()) == 199_437


def test_rate_schedule_with_voyage_law_2_stays_under_the_request_cap(voyage: FakeVoyage) -> None:
    # Given the rate schedule's chunks and a voyage-law-2 adapter
    texts = rate_texts()
    # When they are embedded
    vectors = law(voyage).embed_documents(texts)
    # Then every text has a vector, no request was refused, and each stayed under 120,000 tokens
    assert len(vectors) == len(texts)
    assert voyage.rejected_calls() == []
    sizes = [sum(count_tokens(t) for t in call["input"]) for call in voyage.embedding_calls()]
    assert len(sizes) > 1 and max(sizes) <= 120_000 and sum(sizes) == sum(count_tokens(t) for t in texts)


def test_a_token_limit_400_splits_the_batch_and_never_resends_it(voyage: FakeVoyage) -> None:
    # Given an API whose cap is far below what the adapter plans for (a quota, a tokenizer change)
    voyage.max_request_tokens = 30_000
    texts = rate_texts()
    # When the rate schedule is embedded
    vectors = law(voyage).embed_documents(texts)
    # Then refused batches were split in halves until each fit, and every text is embedded once
    assert len(vectors) == len(texts) and sorted(voyage.embedded) == sorted(texts)
    rejected = [tuple(call["input"]) for call in voyage.rejected_calls()]
    sent = [tuple(call["input"]) for call in voyage.embedding_calls()]
    assert rejected and len(set(rejected)) == len(rejected) and not set(rejected) & set(sent)
    assert all(sum(count_tokens(t) for t in batch) <= 30_000 for batch in sent)


def test_a_single_text_refused_for_tokens_is_too_long_naming_it(voyage: FakeVoyage) -> None:
    # Given a cap smaller than the second text alone
    voyage.max_request_tokens = 50
    texts = ["Rent is due monthly.", "|1|2|3|4|5|6|7|8|9|" * 5, "Notices in writing."]
    # When embedded, Then the error names text 1 once it was sent alone
    with pytest.raises(EmbeddingInputTooLong) as caught:
        law(voyage).embed_documents(texts)
    assert caught.value.index == 1
    assert [call["input"] for call in voyage.rejected_calls()][-1] == [texts[1]]


def test_ingesting_the_rate_schedule_with_voyage_law_2_is_ready_in_one_delivery(
        voyage: FakeVoyage, tmp_path: Path) -> None:
    # Given the local stores and Voyage (voyage-law-2) on the fake, capped as the real API
    deps = IngestDeps(blobs=LocalBlobStore(tmp_path / "bucket"), state=SqliteStateStore(tmp_path / "s.sqlite3"),
                      embedder=law(voyage), index=LanceDBIndex(tmp_path / "lancedb", DIM))
    # When the 200 KB rate schedule is ingested (from the bucket, as the handler finds it)
    deps.blobs.put("incoming/rate-schedule.txt", RATES.read_bytes())
    result = ingest_document(IngestSource(key="incoming/rate-schedule.txt", data=RATES.read_bytes()), deps)
    # Then it is READY the first time: no 400 to redeliver, every chunk embedded
    assert voyage.rejected_calls() == []
    assert deps.state.get_document(result.doc_id).status == "READY"
    assert result.embedded == result.chunks == deps.index.count()
