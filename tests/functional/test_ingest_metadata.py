"""Document metadata through the real ingest handler (moto S3): object metadata and the sidecar.

A contract uploaded as ``aws s3 cp f.pdf s3://bucket/incoming/ --metadata
doc-type=...,line-of-business=...,term=...`` sends ``x-amz-meta-*`` headers; the handler
reads them (HeadObject) and copies them onto every stored chunk, a ``.metadata.json``
sidecar overriding them key by key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from longdoc import wiring
from longdoc.core.documents import chunks_key
from longdoc.core.models import Chunk, DocumentMetadata, DocumentRecord

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

PDF = "cuad/herimports-maintenance-agreement.pdf"  # 6 pages, real CUAD contract
KEY = "incoming/herimports-maintenance-agreement.pdf"  # the key in events/sqs-s3-object-created.json
DOC_ID = "herimports-maintenance-agreement"


def upload(stack: Any, path: Path, metadata: dict[str, str]) -> bytes:
    """Put ``path`` under KEY with S3 user metadata, as `aws s3 cp --metadata` does; returns its bytes."""
    data = path.read_bytes()
    stack.s3.put_object(Bucket=stack.bucket, Key=KEY, Body=data, Metadata=metadata)
    return data


def stored_chunks(stack: Any, doc_version: str) -> list[Chunk]:
    """The chunk list the handler wrote for KEY's version, read straight from the bucket."""
    blob = stack.s3.get_object(Bucket=stack.bucket, Key=chunks_key(DOC_ID, doc_version))["Body"].read()
    return [Chunk.model_validate_json(line) for line in blob.decode("utf-8").splitlines()]


def test_s3_object_metadata_is_copied_onto_every_chunk(
    aws_stack, corpus_dir: Path, ingest_handler, ingest_context, load_event
) -> None:
    # Given a contract uploaded with --metadata doc-type=policy,line-of-business=home,term=2024 (and an unknown name)
    upload(aws_stack, corpus_dir / PDF,
           {"doc-type": "policy", "line-of-business": "home", "term": "2024", "uploaded-by": "ops"})

    # When its ObjectCreated notification is processed
    response = ingest_handler(load_event("sqs-s3-object-created.json"), ingest_context)

    # Then it is READY and every stored chunk carries the three values
    assert response == {"batchItemFailures": []}
    record = wiring.state_store().get_document(DOC_ID)
    assert record is not None and record.status == "READY"
    chunks = stored_chunks(aws_stack, record.doc_version)
    assert len(chunks) == record.chunks >= 2
    assert {(c.doc_type, c.line_of_business, c.term) for c in chunks} == {("policy", "home", "2024")}
    # And the registry records the metadata the chunks carry
    assert record.metadata == DocumentMetadata(doc_type="policy", line_of_business="home", term="2024")


def test_sidecar_overrides_one_s3_metadata_key(
    aws_stack, corpus_dir: Path, ingest_handler, ingest_context, load_event
) -> None:
    # Given a sidecar correcting the term, uploaded before the contract and its S3 metadata
    aws_stack.s3.put_object(Bucket=aws_stack.bucket, Key=KEY + ".metadata.json",
                            Body=json.dumps({"term": "2024-01-01/2024-12-31"}).encode())
    upload(aws_stack, corpus_dir / PDF, {"doc-type": "policy", "line-of-business": "home", "term": "2024"})

    # When the contract's notification is processed
    response = ingest_handler(load_event("sqs-s3-object-created.json"), ingest_context)

    # Then the chunks carry the sidecar's term and the S3 values for the other two fields
    assert response == {"batchItemFailures": []}
    record = wiring.state_store().get_document(DOC_ID)
    assert record is not None and record.status == "READY"
    assert {(c.doc_type, c.line_of_business, c.term) for c in stored_chunks(aws_stack, record.doc_version)} == {
        ("policy", "home", "2024-01-01/2024-12-31")}


def test_a_bad_metadata_value_is_rejected_naming_key_and_field_with_nothing_stored(
    aws_stack, corpus_dir: Path, ingest_handler, ingest_context, load_event
) -> None:
    # Given a contract whose line-of-business metadata is far over the 200-character cap
    upload(aws_stack, corpus_dir / PDF, {"doc-type": "policy", "line-of-business": "h" * 1000})

    # When its notification is processed
    response = ingest_handler(load_event("sqs-s3-object-created.json"), ingest_context)

    # Then the message is not redelivered (a document error is final)
    assert response == {"batchItemFailures": []}
    # And the version is FAILED with a reason naming the field and where it came from
    record = wiring.state_store().get_document(DOC_ID)
    assert record is not None and record.status == "FAILED"
    assert record.reason is not None and "metadata line_of_business (object metadata)" in record.reason
    assert "at most 200 characters" in record.reason
    # And no chunk list, embedding cache or vector was written
    assert aws_stack.keys("chunks/") == [] and aws_stack.keys("embeddings/") == []
    assert aws_stack.index.count() == 0 and aws_stack.upserts == []


def test_same_bytes_with_new_metadata_rewrite_the_chunks_without_reembedding(
    aws_stack, corpus_dir: Path, ingest_handler, ingest_context, load_event
) -> None:
    # Given a contract ingested with term 2024
    upload(aws_stack, corpus_dir / PDF, {"doc-type": "policy", "line-of-business": "home", "term": "2024"})
    event = load_event("sqs-s3-object-created.json")
    assert ingest_handler(event, ingest_context) == {"batchItemFailures": []}
    first = wiring.state_store().get_document(DOC_ID)
    before = stored_chunks(aws_stack, first.doc_version)
    upserts, vectors = list(aws_stack.upserts), aws_stack.index.count()

    # When its metadata is corrected in place (S3 metadata can only change by copying the object
    # onto itself, which sends an ObjectCreated:Copy notification for the same bytes)
    aws_stack.s3.copy_object(Bucket=aws_stack.bucket, Key=KEY, CopySource={"Bucket": aws_stack.bucket, "Key": KEY},
                             Metadata={"doc-type": "policy", "line-of-business": "home", "term": "2025"},
                             MetadataDirective="REPLACE")
    copied = json.loads(json.dumps(event))
    body = json.loads(copied["Records"][0]["body"])
    body["Records"][0]["eventName"] = "ObjectCreated:Copy"
    copied["Records"][0]["body"] = json.dumps(body)
    response = ingest_handler(copied, ingest_context)

    # Then the same version's chunks carry the new term, with the same ids and text
    assert response == {"batchItemFailures": []}
    record = wiring.state_store().get_document(DOC_ID)
    assert (record.status, record.doc_version, record.metadata.term) == ("READY", first.doc_version, "2025")
    after = stored_chunks(aws_stack, first.doc_version)
    assert [(c.chunk_id, c.text) for c in after] == [(c.chunk_id, c.text) for c in before]
    assert {c.term for c in after} == {"2025"}
    # And nothing was upserted again: the vectors are unchanged
    assert aws_stack.upserts == upserts and aws_stack.index.count() == vectors
    # And the chunks remain the only version's
    assert aws_stack.keys("chunks/") == [f"chunks/{DOC_ID}/{first.doc_version}.jsonl"]


def test_a_wording_overlapping_another_of_its_line_is_ingested_and_logged_naming_both(
    aws_stack, corpus_dir: Path, ingest_handler, ingest_context, load_event
) -> None:
    # Given a 2024 home wording of collection "set" already READY under another key
    meta = DocumentMetadata(collection="set", line_of_business="home", effective_from="2024-01-01",
                            effective_to="2024-12-31")
    wiring.state_store().put_document(DocumentRecord(doc_id="w2024", doc_version="0123456789abcdef",
                                                     source="w2024.pdf", status="READY", chunks=3, metadata=meta))
    # When the contract is uploaded as a home wording of the same set in force from June
    upload(aws_stack, corpus_dir / PDF, {"collection": "set", "line-of-business": "home",
                                         "effective-from": "2024-06-01", "effective-to": "2025-05-31"})
    import inspect
    import logging

    class Collect(logging.Handler):
        def __init__(self) -> None:
            super().__init__()
            self.records: list[logging.LogRecord] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.records.append(record)

    # the handler's own Powertools logger (it does not propagate to caplog's root handler)
    logger = inspect.unwrap(ingest_handler).__globals__["logger"]
    collected = Collect()
    level = logger._logger.level  # (an earlier test may have quietened it)
    logger._logger.addHandler(collected)
    logger._logger.setLevel(logging.WARNING)
    try:
        assert ingest_handler(load_event("sqs-s3-object-created.json"), ingest_context) == {"batchItemFailures": []}
    finally:
        logger._logger.removeHandler(collected)
        logger._logger.setLevel(level)
    # Then it is READY, and one warning names both wordings and the dates they share
    assert wiring.state_store().get_document(DOC_ID).status == "READY"
    logged = [r for r in collected.records if r.getMessage() == "overlapping wordings"]
    assert [(r.levelname, r.doc_ids, getattr(r, "from"), r.to) for r in logged] == [
        ("WARNING", [DOC_ID, "w2024"], "2024-06-01", "2024-12-31")]
    assert f"{DOC_ID} (2024-06-01..2025-05-31) and w2024 (2024-01-01..2024-12-31)" in logged[0].overlap
