"""The ingest handler in AWS mode with the real Voyage and Pinecone SDKs against loopback fakes.

moto provides S3 and DynamoDB; ``tests/fakes/voyage_server.py`` and
``tests/fakes/pinecone_server.py`` stand in for the two APIs, with fault injection and
request logs. Events are the files under ``events/``; documents are real corpus files.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from longdoc import wiring
from longdoc.adapters.embedders import VoyageEmbedder
from longdoc.config import function_settings
from longdoc.ingest.embeddings import embeddings_key
from longdoc.ingest.removal import delete_document_source
from longdoc.core.documents import load_chunks
from longdoc.local.engine import LocalContext
from longdoc.observability import metrics
from tests.fakes.loopback import Fault, slow, status
from tests.fakes.pinecone_server import FakePinecone
from tests.fakes.voyage_server import FakeVoyage, count_tokens
from tests.functional.conftest import _ORIGINAL_FACTORIES, AwsStack, _clear_wiring_caches

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

TEST_KEY = "test-key-not-real"
DIM = 256
NAMESPACE = "documents"
GOOD_PDF = "cuad/herimports-maintenance-agreement.pdf"
GOOD_KEY = "incoming/herimports-maintenance-agreement.pdf"
GOOD_DOC_ID = "herimports-maintenance-agreement"
LONG_PDF = "gdpr-council-position-5419-16.pdf"  # 261 pages, about 120 chunks
LONG_KEY = "incoming/gdpr-council-position-5419-16.pdf"
LONG_DOC_ID = "gdpr-council-position-5419-16"


@dataclass
class Cloud:
    """The moto stack plus the two fakes, wired through :mod:`longdoc.wiring` in AWS mode."""

    aws: AwsStack
    voyage: FakeVoyage
    pinecone: FakePinecone

    def use_voyage(self, **kwargs: Any) -> VoyageEmbedder:
        """Swap in a Voyage adapter on the fake with fast retries (and any other options)."""
        kwargs.setdefault("retry_initial", 0.001)
        kwargs.setdefault("retry_max", 0.01)
        embedder = VoyageEmbedder(TEST_KEY, dimension=DIM, base_url=self.voyage.base_url, **kwargs)
        self.aws.use_embedder(embedder)
        return embedder

    def event(self, load_event: Callable[[str], dict[str, Any]], name: str, key: str, message_id: str) -> dict:
        """``events/{name}`` re-targeted at ``key`` (URL-encoded by the caller if needed)."""
        event = load_event(name)
        body = json.loads(event["Records"][0]["body"])
        body["Records"][0]["s3"]["object"]["key"] = key
        event["Records"][0]["body"] = json.dumps(body)
        event["Records"][0]["messageId"] = message_id
        return event


@pytest.fixture
def cloud(aws_stack: AwsStack, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cloud]:
    """AWS mode with Voyage and Pinecone on loopback fakes, built by the real wiring factories."""
    import pinecone._internal.http_client as http_client

    monkeypatch.setattr(http_client, "_retry_sleep", lambda seconds: None)  # the SDK's test seam
    with FakeVoyage() as voyage, FakePinecone(dimension=DIM) as pinecone_fake:
        monkeypatch.setenv("LONGDOC_VOYAGE_BASE_URL", voyage.base_url)
        monkeypatch.setenv("LONGDOC_PINECONE_INDEX_HOST", pinecone_fake.host)
        monkeypatch.setenv("LONGDOC_PINECONE_NAMESPACE", NAMESPACE)
        monkeypatch.setenv("LONGDOC_EMBEDDING_DIMENSION", str(DIM))
        monkeypatch.setenv("VOYAGE_API_KEY", TEST_KEY)
        monkeypatch.setenv("PINECONE_API_KEY", TEST_KEY)
        monkeypatch.setattr(wiring, "embedder", _ORIGINAL_FACTORIES["embedder"])
        monkeypatch.setattr(wiring, "vector_index", _ORIGINAL_FACTORIES["vector_index"])
        _clear_wiring_caches()
        try:
            yield Cloud(aws_stack, voyage, pinecone_fake)
        finally:
            _clear_wiring_caches()


class ShortContext(LocalContext):
    """A Lambda context that reports 5 s left once ``out_of_time()`` is true (900 s before)."""

    def __init__(self, out_of_time: Callable[[], bool]):
        super().__init__(function_name="longdoc-dev-IngestFunction")
        self.out_of_time = out_of_time

    def get_remaining_time_in_millis(self) -> int:
        """5,000 ms (Lambda about to time out) once ``out_of_time()``, else 900,000 ms."""
        return 5_000 if self.out_of_time() else 900_000


def version_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def test_happy_path_with_voyage_and_pinecone(
    cloud: Cloud, corpus_dir: Path, ingest_handler, ingest_context, load_event, emf_documents,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a real contract in moto S3, its ObjectCreated event, and metrics switched on
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    metrics.clear_metrics()
    data = cloud.aws.upload(GOOD_KEY, corpus_dir / GOOD_PDF)
    version = version_of(data)

    # When the handler processes it (wiring builds Voyage and Pinecone adapters from settings)
    response = ingest_handler(load_event("sqs-s3-object-created.json"), ingest_context)

    # Then the version is READY, every chunk has one vector under a doc:version-prefixed id
    assert response == {"batchItemFailures": []}
    record = wiring.state_store().get_document(GOOD_DOC_ID)
    assert (record.status, record.doc_version, record.embedding_model) == ("READY", version, "voyage-3.5")
    chunks = load_chunks(wiring.blob_store(), GOOD_DOC_ID, version)
    assert cloud.pinecone.ids(NAMESPACE) == sorted(c.chunk_id for c in chunks)
    assert all(i.startswith(f"{GOOD_DOC_ID}:{version[:8]}:") for i in cloud.pinecone.ids(NAMESPACE))
    # And the index was checked at start-up, documents were embedded as documents, in one request
    assert cloud.pinecone.calls("POST", "/describe_index_stats")
    calls = cloud.voyage.embedding_calls()
    assert [(len(c["input"]), c["input_type"], c["output_dimension"]) for c in calls] == [
        (len(chunks), "document", DIM)]
    # And a query through the same adapters finds this document's chunks
    hits = wiring.vector_index().query(wiring.embedder().embed_query("maintenance fees"), GOOD_DOC_ID, version, 3)
    assert len(hits) == 3 and cloud.voyage.embedding_calls()[-1]["input_type"] == "query"
    # And the metrics report pages, chunks, the tokens Voyage counted, and no reuse
    emf = emf_documents(capsys.readouterr().out)
    totals: dict[str, float] = {}
    for doc in emf:
        for name in ("Pages", "Chunks", "EmbeddingTokens", "EmbeddingsReused", "ChunksEmbedded"):
            value = doc.get(name)
            if value is not None:
                totals[name] = totals.get(name, 0) + (sum(value) if isinstance(value, list) else value)
    expected_tokens = sum(count_tokens(t) for t in calls[0]["input"])
    assert totals == {"Pages": 6, "Chunks": len(chunks), "EmbeddingTokens": expected_tokens,
                      "EmbeddingsReused": 0, "ChunksEmbedded": len(chunks)}
    assert record.embedding_tokens == expected_tokens


def test_duplicates_poison_and_encoded_keys_in_one_batch(
    cloud: Cloud, corpus_dir: Path, ingest_handler, ingest_context, load_event,
) -> None:
    # Given a batch: a good contract, the same event again, a password-protected PDF and a
    # file whose name S3 URL-encodes
    cloud.aws.upload(GOOD_KEY, corpus_dir / GOOD_PDF)
    cloud.aws.upload("incoming/password-example.pdf", corpus_dir / "bad" / "password-example.pdf")
    cloud.aws.upload("incoming/Master Services Agreement (v2) – Ünïcode.pdf", corpus_dir / GOOD_PDF)
    encoded = json.loads(load_event("sqs-s3-urlencoded-key.json")["Records"][0]["body"])["Records"][0]["s3"][
        "object"]["key"]
    records = [cloud.event(load_event, "sqs-s3-object-created.json", key, mid)["Records"][0] for key, mid in (
        (GOOD_KEY, "m-1"), (GOOD_KEY, "m-2"), ("incoming/password-example.pdf", "m-3"), (encoded, "m-4"))]

    # When the handler processes the batch
    response = ingest_handler({"Records": records}, ingest_context)

    # Then nothing is redelivered: the duplicate was a no-op and the poison file is FAILED for good
    assert response == {"batchItemFailures": []}
    state = wiring.state_store()
    assert state.get_document(GOOD_DOC_ID).status == "READY"
    assert state.get_document("master-services-agreement-v2-unicode--ff951a14").status == "READY"
    failed = state.get_document("password-example")
    assert failed.status == "FAILED" and "password" in failed.reason.lower()
    # And Voyage embedded the good contract once per doc_id (same bytes, two names), never the poison file
    good_chunks = state.get_document(GOOD_DOC_ID).chunks
    assert len(cloud.voyage.embedding_calls()) == 2
    assert cloud.pinecone.count(NAMESPACE) == 2 * good_chunks


def test_throttled_embedder_fails_the_record_then_redelivery_succeeds(
    cloud: Cloud, corpus_dir: Path, ingest_handler, ingest_context, load_event,
) -> None:
    # Given Voyage answering 429 to every attempt of the first delivery (3 attempts allowed)
    cloud.use_voyage(max_attempts=3)
    data = cloud.aws.upload(GOOD_KEY, corpus_dir / GOOD_PDF)
    cloud.voyage.inject(status(429, "rate limited"), status(429, "rate limited"), status(429, "rate limited"))
    event = load_event("sqs-s3-object-created.json")

    # When the handler processes the message
    response = ingest_handler(event, ingest_context)

    # Then the record is handed back to SQS after three attempts, the registry says why
    assert response == {"batchItemFailures": [{"itemIdentifier": event["Records"][0]["messageId"]}]}
    assert len(cloud.voyage.calls("POST", "/v1/embeddings")) == 3
    record = wiring.state_store().get_document(GOOD_DOC_ID)
    assert record.status == "FAILED" and record.reason.startswith("EmbeddingUnavailable")
    assert "RateLimitError" in record.reason
    assert cloud.pinecone.count() == 0

    # When SQS redelivers it and Voyage has recovered
    response = ingest_handler(event, ingest_context)

    # Then the document is READY with all its vectors
    assert response == {"batchItemFailures": []}
    record = wiring.state_store().get_document(GOOD_DOC_ID, version_of(data))
    assert record.status == "READY" and cloud.pinecone.count(NAMESPACE) == record.chunks


def test_half_finished_long_document_resumes_without_redoing_work(
    cloud: Cloud, corpus_dir: Path, ingest_handler, load_event, monkeypatch,
) -> None:
    # Given a 261-page PDF chunked at an 800-token target (over 100 chunks: more than one
    # upsert slice), a Voyage budget that needs several requests for all its chunks,
    # and Voyage failing for good after two successful requests
    monkeypatch.setenv("LONGDOC_CHUNK_TARGET_TOKENS", "800")
    function_settings.cache_clear()
    cloud.use_voyage(max_attempts=2, max_request_tokens=40_000)
    data = cloud.aws.upload(LONG_KEY, corpus_dir / LONG_PDF)
    version = version_of(data)
    event = cloud.event(load_event, "sqs-s3-object-created.json", LONG_KEY, "long-1")
    cloud.voyage.inject(Fault(), Fault(), status(500), status(500))

    # When the first delivery runs
    first = ingest_handler(event, LocalContext(function_name="longdoc-dev-IngestFunction"))

    # Then it fails with the progress of the two requests that succeeded recorded
    assert first == {"batchItemFailures": [{"itemIdentifier": "long-1"}]}
    record = wiring.state_store().get_document(LONG_DOC_ID, version)
    sent_first = [len(c["input"]) for c in cloud.voyage.embedding_calls()]
    assert len(sent_first) == 2
    assert (record.status, record.stage, record.embedded, record.upserted) == (
        "FAILED", "embedding", sum(sent_first), 0)
    total = record.chunks
    assert record.pages == 261 and total > 100

    # When it is redelivered but the invocation runs out of time once the first upsert slice landed
    second = ingest_handler(event, ShortContext(lambda: bool(cloud.pinecone.upsert_sizes())))

    # Then the embedding finished, only the unembedded chunks were sent, and 100 of all are upserted
    assert second == {"batchItemFailures": [{"itemIdentifier": "long-1"}]}
    record = wiring.state_store().get_document(LONG_DOC_ID, version)
    assert (record.status, record.stage, record.embedded, record.upserted) == ("FAILED", "upserting", total, 100)
    assert record.reason.startswith("IngestDeadline")
    sent = [len(c["input"]) for c in cloud.voyage.embedding_calls()]
    assert sum(sent) == total and len(sent) > 3
    assert cloud.pinecone.count(NAMESPACE) == 100

    # When it is redelivered once more with time to spare
    third = ingest_handler(event, LocalContext(function_name="longdoc-dev-IngestFunction"))

    # Then it is READY: nothing was embedded again, only the last 21 vectors were upserted,
    # and there is exactly one vector per chunk
    assert third == {"batchItemFailures": []}
    record = wiring.state_store().get_document(LONG_DOC_ID, version)
    assert (record.status, record.embedded, record.upserted, record.attempts) == ("READY", total, total, 3)
    assert sum(len(c["input"]) for c in cloud.voyage.embedding_calls()) == total
    assert [n for n, _ in cloud.pinecone.upsert_sizes()] == [100, total - 100]
    chunks = load_chunks(wiring.blob_store(), LONG_DOC_ID, version)
    assert cloud.pinecone.ids(NAMESPACE) == sorted(c.chunk_id for c in chunks)


def test_new_version_reuses_embeddings_of_unchanged_chunks(
    cloud: Cloud, corpus_dir: Path, ingest_handler, ingest_context, load_event,
) -> None:
    # Given the Apache licence ingested from incoming/licence.txt
    text = (corpus_dir / "Apache-2.0.txt").read_text(encoding="utf-8")
    key = "incoming/licence.txt"
    cloud.aws.s3.put_object(Bucket=cloud.aws.bucket, Key=key, Body=text.encode())
    event = cloud.event(load_event, "sqs-s3-object-created.json", key, "v1")
    assert ingest_handler(event, ingest_context) == {"batchItemFailures": []}
    v1 = wiring.state_store().get_document("licence")
    first_texts = len(cloud.voyage.embedded)
    assert first_texts == v1.chunks and v1.chunks >= 3

    # When the same key is overwritten with the last section changed, and ingested
    changed = text.replace("END OF TERMS AND CONDITIONS", "END OF TERMS AND CONDITIONS (AMENDED 2025)")
    assert changed != text
    cloud.aws.s3.put_object(Bucket=cloud.aws.bucket, Key=key, Body=changed.encode())
    assert ingest_handler(cloud.event(load_event, "sqs-s3-object-created.json", key, "v2"), ingest_context) == {
        "batchItemFailures": []}

    # Then a new version is READY, only the changed chunk was embedded, the rest reused
    v2 = wiring.state_store().get_document("licence")
    assert v2.doc_version != v1.doc_version and v2.status == "READY"
    newly = cloud.voyage.embedded[first_texts:]
    assert len(newly) == 1 and "AMENDED 2025" in newly[0]
    assert (v2.reused, v2.chunks) == (v2.chunks - 1, v1.chunks)
    assert v2.previous_version == v1.doc_version
    assert cloud.aws.keys("embeddings/") == sorted(
        embeddings_key("voyage-3.5", DIM, "licence", v) for v in (v1.doc_version, v2.doc_version))
    # And the old version stays READY and queryable beside the new one
    assert wiring.state_store().get_document("licence", v1.doc_version).status == "READY"
    assert cloud.pinecone.count(NAMESPACE) == v1.chunks + v2.chunks


def test_object_removed_deletes_vectors_and_marks_the_document_deleted(
    cloud: Cloud, corpus_dir: Path, ingest_handler, ingest_context, load_event,
) -> None:
    # Given an ingested contract and another document that must not be touched
    data = cloud.aws.upload(GOOD_KEY, corpus_dir / GOOD_PDF)
    assert ingest_handler(load_event("sqs-s3-object-created.json"), ingest_context) == {"batchItemFailures": []}
    cloud.aws.upload("incoming/other.pdf", corpus_dir / GOOD_PDF)
    assert ingest_handler(cloud.event(load_event, "sqs-s3-object-created.json", "incoming/other.pdf", "o-1"),
                          ingest_context) == {"batchItemFailures": []}
    other = wiring.state_store().get_document("other").chunks
    cloud.aws.s3.delete_object(Bucket=cloud.aws.bucket, Key=GOOD_KEY)

    # When the ObjectRemoved event arrives (twice: at-least-once delivery)
    event = load_event("sqs-s3-object-removed.json")
    assert ingest_handler(event, ingest_context) == {"batchItemFailures": []}
    assert ingest_handler(event, ingest_context) == {"batchItemFailures": []}

    # Then its vectors are gone, its registry entry says DELETED, and its chunk list is kept
    record = wiring.state_store().get_document(GOOD_DOC_ID)
    assert (record.status, record.doc_version) == ("DELETED", version_of(data))
    assert "removed" in record.reason
    assert all(not i.startswith(GOOD_DOC_ID) for i in cloud.pinecone.ids(NAMESPACE))
    assert cloud.aws.keys(f"chunks/{GOOD_DOC_ID}/") == [f"chunks/{GOOD_DOC_ID}/{version_of(data)}.jsonl"]
    # And the other document is untouched
    assert cloud.pinecone.count(NAMESPACE) == other
    assert wiring.state_store().get_document("other").status == "READY"


def test_an_object_removed_while_it_is_ingested_ends_deleted_without_vectors(
    cloud: Cloud, corpus_dir: Path, ingest_handler, ingest_context, load_event,
) -> None:
    # Given a contract being ingested by one worker, Voyage slow to answer
    data = cloud.aws.upload(GOOD_KEY, corpus_dir / GOOD_PDF)
    cloud.voyage.inject(slow(2.0))
    state = wiring.state_store()
    responses: list[dict] = []
    worker = threading.Thread(target=lambda: responses.append(
        ingest_handler(load_event("sqs-s3-object-created.json"), ingest_context)))
    worker.start()
    deadline = time.monotonic() + 60
    while state.get_document(GOOD_DOC_ID, version_of(data)) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    # When the object is deleted and its ObjectRemoved event handled while the ingest embeds
    cloud.aws.s3.delete_object(Bucket=cloud.aws.bucket, Key=GOOD_KEY)
    marked = delete_document_source(key=GOOD_KEY, blobs=wiring.blob_store(), state=state,
                                    index=wiring.vector_index())
    worker.join()
    # Then the ingest's delivery is acknowledged, and the version stays DELETED (DynamoDB's
    # conditional write refused the ingest's later saves) with no vectors and no chunk list
    assert marked == [version_of(data)] and responses == [{"batchItemFailures": []}]
    record = state.get_document(GOOD_DOC_ID)
    assert (record.status, record.doc_version) == ("DELETED", version_of(data))
    assert cloud.pinecone.count(NAMESPACE) == 0
    assert cloud.aws.keys(f"chunks/{GOOD_DOC_ID}/") == []


def test_a_stale_removal_event_after_a_reupload_deletes_nothing(
    cloud: Cloud, corpus_dir: Path, ingest_handler, ingest_context, load_event,
) -> None:
    # Given a contract that was ingested, deleted and uploaded again, whose new creation
    # event is handled before the older removal event (an SQS standard queue may reorder)
    cloud.aws.upload(GOOD_KEY, corpus_dir / GOOD_PDF)
    assert ingest_handler(load_event("sqs-s3-object-created.json"), ingest_context) == {"batchItemFailures": []}
    vectors = cloud.pinecone.count(NAMESPACE)
    cloud.aws.s3.delete_object(Bucket=cloud.aws.bucket, Key=GOOD_KEY)
    cloud.aws.upload(GOOD_KEY, corpus_dir / GOOD_PDF)
    assert ingest_handler(load_event("sqs-s3-object-created.json"), ingest_context) == {"batchItemFailures": []}

    # When the late removal event arrives
    assert ingest_handler(load_event("sqs-s3-object-removed.json"), ingest_context) == {"batchItemFailures": []}

    # Then the document that is in the bucket stays READY with all its vectors
    assert wiring.state_store().get_document(GOOD_DOC_ID).status == "READY"
    assert cloud.pinecone.count(NAMESPACE) == vectors > 0


def test_dimension_mismatch_is_a_configuration_error_before_any_upsert(
    cloud: Cloud, corpus_dir: Path, ingest_handler, ingest_context, load_event, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given an embedder configured for 512 dimensions and a 256-dimensional index
    monkeypatch.setenv("LONGDOC_EMBEDDING_DIMENSION", "512")
    _clear_wiring_caches()
    cloud.aws.upload(GOOD_KEY, corpus_dir / GOOD_PDF)
    event = load_event("sqs-s3-object-created.json")

    # When the handler processes an event
    response = ingest_handler(event, ingest_context)

    # Then the record fails (to be redelivered once the configuration is fixed), nothing is embedded or upserted
    assert response == {"batchItemFailures": [{"itemIdentifier": event["Records"][0]["messageId"]}]}
    assert cloud.voyage.embedding_calls() == []
    assert cloud.pinecone.calls("POST", "/vectors/upsert") == []


def test_a_rechunk_throttled_by_voyage_keeps_the_ready_version_indexed_then_redelivery_swaps(
    cloud: Cloud, corpus_dir: Path, ingest_handler, ingest_context, load_event,
) -> None:
    # Given a contract READY with the deployment's chunks, its vectors in Pinecone
    cloud.use_voyage(max_attempts=3)
    data = cloud.aws.upload(GOOD_KEY, corpus_dir / GOOD_PDF)
    event = load_event("sqs-s3-object-created.json")
    assert ingest_handler(event, ingest_context) == {"batchItemFailures": []}
    before = wiring.state_store().get_document(GOOD_DOC_ID, version_of(data))
    assert before.status == "READY" and cloud.pinecone.count(NAMESPACE) == before.chunks
    # When the same bytes come again as a policy (S3 metadata doc-type=policy: the 300/400 profile) and
    # Voyage answers 429 to every attempt of that delivery (the fake's rate-limit body)
    cloud.aws.s3.put_object(Bucket=cloud.aws.bucket, Key=GOOD_KEY, Body=data, Metadata={"doc-type": "policy"})
    cloud.voyage.inject(status(429, "rate limited"), status(429, "rate limited"), status(429, "rate limited"))
    response = ingest_handler(event, ingest_context)
    # Then the record goes back to SQS, and the version is still READY, chunked and indexed as before
    # (before: FAILED, its vectors deleted ahead of the embedding that failed)
    assert response == {"batchItemFailures": [{"itemIdentifier": event["Records"][0]["messageId"]}]}
    record = wiring.state_store().get_document(GOOD_DOC_ID, version_of(data))
    assert (record.status, record.chunking, record.chunks) == ("READY", before.chunking, before.chunks)
    assert cloud.pinecone.count(NAMESPACE) == before.chunks
    # When SQS redelivers it and Voyage has recovered, Then it is re-chunked under the policy profile
    assert ingest_handler(event, ingest_context) == {"batchItemFailures": []}
    record = wiring.state_store().get_document(GOOD_DOC_ID, version_of(data))
    assert (record.status, record.chunking) == ("READY", "300/400/0.15") and record.chunks > before.chunks
    assert cloud.pinecone.count(NAMESPACE) == record.chunks
