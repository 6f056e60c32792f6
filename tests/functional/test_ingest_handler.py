"""The ingest Lambda handler in-process, in AWS mode (moto S3 + DynamoDB).

Events are the files under ``events/`` (SQS messages carrying S3 notifications, keys
URL-encoded as S3 sends them). Voyage/Pinecone are replaced by MiniLM + LanceDB (see
``conftest.py``); documents are real corpus files.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from longdoc import wiring
from longdoc.core.documents import chunks_key
from longdoc.core.models import Chunk
from longdoc.observability import metrics

# Known noise: handlers that publish no metric on a path make Powertools warn "No application metrics".
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

GOOD_PDF = "cuad/herimports-maintenance-agreement.pdf"  # 6 pages, real CUAD contract
GOOD_KEY = "incoming/herimports-maintenance-agreement.pdf"
GOOD_DOC_ID = "herimports-maintenance-agreement"


def version_of(data: bytes) -> str:
    """The document version the pipeline derives from bytes (first 16 hex of SHA-256)."""
    return hashlib.sha256(data).hexdigest()[:16]


def with_key(event: dict[str, Any], key: str, message_id: str) -> dict[str, Any]:
    """Return the first SQS record of ``event`` re-targeted at ``key`` (already URL-encoded)."""
    record = json.loads(json.dumps(event["Records"][0]))
    body = json.loads(record["body"])
    body["Records"][0]["s3"]["object"]["key"] = key
    record["body"] = json.dumps(body)
    record["messageId"] = message_id
    return record


def total(emf: list[dict[str, Any]], metric: str) -> float:
    """Sum a metric over EMF documents (a value may be a number or a list of numbers)."""
    values: list[float] = []
    for doc in emf:
        value = doc.get(metric, [])
        values.extend(value if isinstance(value, list) else [value])
    return sum(values)


class FailingEmbedder:
    """An embedder whose service is down: every document embedding raises RuntimeError."""

    name = "all-MiniLM-L6-v2"
    dimension = 384

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Always raises RuntimeError (a transient outage)."""
        raise RuntimeError("embedding service unavailable (503)")

    def embed_query(self, text: str) -> list[float]:
        """Always raises RuntimeError (a transient outage)."""
        raise RuntimeError("embedding service unavailable (503)")


def test_object_created_event_ingests_a_real_pdf(
    aws_stack, corpus_dir: Path, ingest_handler, ingest_context, load_event, emf_documents,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a real contract uploaded under incoming/ and the S3 notification SQS delivers for it,
    # with metrics switched on
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "longdoc")
    metrics.clear_metrics()  # Powertools keeps values buffered while metrics are disabled (e.g. by the CLI)
    data = aws_stack.upload(GOOD_KEY, corpus_dir / GOOD_PDF)
    version = version_of(data)
    event = load_event("sqs-s3-object-created.json")

    # When the ingest handler processes the batch
    response = ingest_handler(event, ingest_context)

    # Then no record is redelivered and the registry says READY with pages and chunks
    assert response == {"batchItemFailures": []}
    record = wiring.state_store().get_document(GOOD_DOC_ID)
    assert record is not None
    assert (record.status, record.doc_version, record.source) == ("READY", version, "herimports-maintenance-agreement.pdf")
    assert record.pages == 6
    assert record.chunks >= 2
    assert record.content_sha256 == hashlib.sha256(data).hexdigest()
    assert record.embedding_model == "all-MiniLM-L6-v2"
    # And the chunks are stored as JSON Lines at chunks/{doc_id}/{version}.jsonl
    assert chunks_key(GOOD_DOC_ID, version) == f"chunks/{GOOD_DOC_ID}/{version}.jsonl"
    assert aws_stack.keys("chunks/") == [f"chunks/{GOOD_DOC_ID}/{version}.jsonl"]
    blob = aws_stack.s3.get_object(Bucket=aws_stack.bucket, Key=chunks_key(GOOD_DOC_ID, version))["Body"].read()
    chunks = [Chunk.model_validate_json(line) for line in blob.decode("utf-8").splitlines()]
    assert len(chunks) == record.chunks
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    assert all(c.doc_id == GOOD_DOC_ID and c.doc_version == version for c in chunks)
    # And every chunk has exactly one vector, queryable for this document version
    assert aws_stack.index.count() == record.chunks
    hits = aws_stack.index.query(aws_stack.embedder.embed_query("maintenance services fees"), GOOD_DOC_ID, version, 3)
    assert len(hits) == 3
    assert {chunk_id for chunk_id, _ in hits} <= {c.chunk_id for c in chunks}
    # And the Embedded Metric Format output names the ingest metrics
    emf = emf_documents(capsys.readouterr().out)
    assert emf, "no EMF document printed"
    names = {m["Name"] for doc in emf for d in doc["_aws"]["CloudWatchMetrics"] for m in d["Metrics"]}
    assert {"DocumentsIngested", "Chunks"} <= names
    assert emf[-1]["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "longdoc"
    assert total(emf, "DocumentsIngested") == 1
    assert total(emf, "Chunks") == record.chunks


def test_same_event_twice_is_a_no_op(
    aws_stack, corpus_dir: Path, ingest_handler, ingest_context, load_event
) -> None:
    # Given a document already ingested from its ObjectCreated event
    aws_stack.upload(GOOD_KEY, corpus_dir / GOOD_PDF)
    event = load_event("sqs-s3-object-created.json")
    assert ingest_handler(event, ingest_context) == {"batchItemFailures": []}
    first = wiring.state_store().get_document(GOOD_DOC_ID)
    rows = aws_stack.index.count()
    assert aws_stack.upserts == [first.chunks]

    # When SQS delivers the same event again (at-least-once delivery)
    response = ingest_handler(event, ingest_context)

    # Then nothing is redone: no second upsert, no extra vectors, the registry entry unchanged
    # but for updated_at (the no-op makes this version the latest again, so its second may tick)
    # and its revision (one more conditional write)
    assert response == {"batchItemFailures": []}
    assert aws_stack.upserts == [first.chunks]
    assert aws_stack.index.count() == rows == first.chunks
    again = wiring.state_store().get_document(GOOD_DOC_ID)
    assert again.updated_at >= first.updated_at
    assert again.revision == first.revision + 1
    assert again.model_copy(update={"updated_at": first.updated_at, "revision": first.revision}) == first


def test_s3_test_event_is_acknowledged_and_ignored(aws_stack, ingest_handler, ingest_context, load_event) -> None:
    # Given the s3:TestEvent S3 sends when the notification is configured
    event = load_event("sqs-s3-test-event.json")
    assert json.loads(event["Records"][0]["body"])["Event"] == "s3:TestEvent"

    # When the handler receives it
    response = ingest_handler(event, ingest_context)

    # Then it is acknowledged (not redelivered) and nothing is written anywhere
    assert response == {"batchItemFailures": []}
    assert aws_stack.items() == []
    assert aws_stack.keys() == []
    assert aws_stack.upserts == []


def test_url_encoded_key_is_decoded_before_use(
    aws_stack, corpus_dir: Path, ingest_handler, ingest_context, load_event
) -> None:
    # Given a PDF uploaded under a name with spaces, brackets, an en dash and accents,
    # and the notification whose key S3 URL-encodes ('+' for spaces, %xx for the rest)
    name = "incoming/Master Services Agreement (v2) – Ünïcode.pdf"
    data = aws_stack.upload(name, corpus_dir / GOOD_PDF)
    event = load_event("sqs-s3-urlencoded-key.json")
    encoded = json.loads(event["Records"][0]["body"])["Records"][0]["s3"]["object"]["key"]
    assert encoded == "incoming/Master+Services+Agreement+%28v2%29+%E2%80%93+%C3%9Cn%C3%AFcode.pdf"

    # When the handler processes it
    response = ingest_handler(event, ingest_context)

    # Then the object is found under its decoded name and gets a readable ASCII doc id
    assert response == {"batchItemFailures": []}
    record = wiring.state_store().get_document("master-services-agreement-v2-unicode--ff951a14")
    assert record is not None
    assert record.status == "READY"
    assert record.source == "Master Services Agreement (v2) – Ünïcode.pdf"
    assert record.doc_version == version_of(data)
    assert aws_stack.keys("chunks/") == [f"chunks/master-services-agreement-v2-unicode--ff951a14/{version_of(data)}.jsonl"]


def test_poison_file_is_terminal_and_does_not_fail_its_neighbour(
    aws_stack, corpus_dir: Path, ingest_handler, ingest_context, load_event
) -> None:
    # Given a batch of two messages: a password-protected PDF and a good contract
    bad = aws_stack.upload("incoming/password-example.pdf", corpus_dir / "bad" / "password-example.pdf")
    good = aws_stack.upload(GOOD_KEY, corpus_dir / GOOD_PDF)
    template = load_event("sqs-s3-object-created.json")
    event = {"Records": [with_key(template, "incoming/password-example.pdf", "msg-bad-0001"),
                         with_key(template, GOOD_KEY, "msg-good-0002")]}

    # When the handler processes the batch
    response = ingest_handler(event, ingest_context)

    # Then nothing is redelivered: a bad document is a terminal outcome, not a retry
    assert response == {"batchItemFailures": []}
    # And the good document is READY
    assert wiring.state_store().get_document(GOOD_DOC_ID).status == "READY"
    # And the bad one is FAILED with a reason that mentions the password, with nothing stored for it
    failed = wiring.state_store().get_document("password-example")
    assert failed is not None
    assert failed.status == "FAILED"
    assert failed.doc_version == version_of(bad)
    assert "password" in (failed.reason or "").lower()
    assert aws_stack.keys("chunks/password-example/") == []
    assert aws_stack.keys("chunks/") == [f"chunks/{GOOD_DOC_ID}/{version_of(good)}.jsonl"]
    assert aws_stack.upserts == [wiring.state_store().get_document(GOOD_DOC_ID).chunks]


def test_transient_failure_is_redelivered_then_succeeds(
    aws_stack, corpus_dir: Path, ingest_handler, ingest_context, load_event, minilm
) -> None:
    # Given a good document and an embedding service that is down
    data = aws_stack.upload(GOOD_KEY, corpus_dir / GOOD_PDF)
    version = version_of(data)
    event = load_event("sqs-s3-object-created.json")
    message_id = event["Records"][0]["messageId"]
    aws_stack.use_embedder(FailingEmbedder())

    # When the handler processes the message
    response = ingest_handler(event, ingest_context)

    # Then that message is reported for redelivery
    assert response == {"batchItemFailures": [{"itemIdentifier": message_id}]}
    # And the registry says FAILED with the reason and where it stopped (chunks stored, nothing
    # embedded or indexed), keeping the chunk list so the redelivery can resume
    record = wiring.state_store().get_document(GOOD_DOC_ID)
    assert record.status == "FAILED"
    assert record.reason == "RuntimeError: embedding service unavailable (503)"
    assert (record.stage, record.embedded, record.upserted, record.attempts) == ("embedding", 0, 0, 1)
    assert aws_stack.keys("chunks/") == [f"chunks/{GOOD_DOC_ID}/{version}.jsonl"]
    assert aws_stack.index.count() == 0

    # When the service is back and SQS redelivers the same message
    aws_stack.use_embedder(minilm)
    response = ingest_handler(event, ingest_context)

    # Then the document is READY with its chunks and vectors, on the second attempt
    assert response == {"batchItemFailures": []}
    record = wiring.state_store().get_document(GOOD_DOC_ID)
    assert (record.status, record.reason, record.doc_version) == ("READY", None, version)
    assert (record.stage, record.embedded, record.upserted, record.attempts) == ("done", record.chunks,
                                                                                 record.chunks, 2)
    assert aws_stack.keys("chunks/") == [f"chunks/{GOOD_DOC_ID}/{version}.jsonl"]
    assert aws_stack.index.count() == record.chunks


def test_a_record_that_is_no_s3_notification_is_redelivered_alone(
    aws_stack, corpus_dir: Path, ingest_handler, ingest_context, load_event
) -> None:
    # Given a batch of a message whose body is not an S3 notification (the parser model rejects it)
    # and a good contract's notification
    aws_stack.upload(GOOD_KEY, corpus_dir / GOOD_PDF)
    template = load_event("sqs-s3-object-created.json")
    junk = with_key(template, GOOD_KEY, "msg-junk-0001")
    junk["body"] = json.dumps({"hello": "world"})
    event = {"Records": [junk, with_key(template, GOOD_KEY, "msg-good-0002")]}

    # When the handler processes the batch
    response = ingest_handler(event, ingest_context)

    # Then only the junk message is reported for redelivery, and the contract is READY
    assert response == {"batchItemFailures": [{"itemIdentifier": "msg-junk-0001"}]}
    assert wiring.state_store().get_document(GOOD_DOC_ID).status == "READY"


def test_invalid_settings_fail_the_invocation_at_entry_naming_the_variable(
    aws_stack, ingest_handler, ingest_context, load_event, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a chunk target below its minimum
    from longdoc.config import function_settings
    from longdoc.core.errors import ConfigError

    monkeypatch.setenv("LONGDOC_CHUNK_TARGET_TOKENS", "5")
    function_settings.cache_clear()

    # When the handler is invoked / Then it fails before any record, naming the variable
    with pytest.raises(ConfigError, match="LONGDOC_CHUNK_TARGET_TOKENS"):
        ingest_handler(load_event("sqs-s3-object-created.json"), ingest_context)
    assert aws_stack.items() == []
    function_settings.cache_clear()
