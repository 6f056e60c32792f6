"""The ingest handler with file names in other scripts, and names that share a document id.

AWS mode in-process (moto S3 and DynamoDB, MiniLM and LanceDB standing in for Voyage and
Pinecone, see ``conftest.py``); keys arrive URL-encoded as S3 sends them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import pytest

from longdoc import wiring
from longdoc.core.errors import DocumentError
from longdoc.core.models import DocumentRecord
from longdoc.ingest.ids import doc_id_for_key

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

PDF = "cuad/herimports-maintenance-agreement.pdf"


def event_for(load_event, *keys: str) -> dict[str, Any]:
    """One SQS batch with an ObjectCreated notification per key (URL-encoded as S3 sends it)."""
    template = load_event("sqs-s3-object-created.json")["Records"][0]
    records = []
    for n, key in enumerate(keys):
        record = json.loads(json.dumps(template))
        body = json.loads(record["body"])
        body["Records"][0]["s3"]["object"]["key"] = quote_plus(key, safe="/")
        record["body"], record["messageId"] = json.dumps(body), f"msg-{n:04d}"
        records.append(record)
    return {"Records": records}


def logged(caplog: pytest.LogCaptureFixture, level: str) -> list[Any]:
    """The handler's log records at ``level`` (their ``extra`` keys are record attributes)."""
    return [r for r in caplog.records if r.name == "longdoc" and r.levelname == level]


def test_a_japanese_file_name_is_ingested_under_a_hashed_id(aws_stack, corpus_dir: Path, ingest_handler,
                                                             ingest_context, load_event) -> None:
    # Given a contract uploaded as incoming/契約書.pdf
    aws_stack.upload("incoming/契約書.pdf", corpus_dir / PDF)
    # When its notification is processed
    response = ingest_handler(event_for(load_event, "incoming/契約書.pdf"), ingest_context)
    # Then it is acknowledged and READY under doc--<name hash>, with its name as source
    assert response == {"batchItemFailures": []}
    record = wiring.state_store().get_document("doc--9fb9a154")
    assert (record.status, record.source, record.source_key) == ("READY", "契約書.pdf", "incoming/契約書.pdf")


def test_two_contracts_whose_names_differ_only_in_kanji_stay_two_documents(
        aws_stack, corpus_dir: Path, ingest_handler, ingest_context, load_event) -> None:
    # Given two different contracts named 賃貸契約 2024.pdf and 売買契約 2024.pdf
    aws_stack.upload("incoming/賃貸契約 2024.pdf", corpus_dir / PDF)
    aws_stack.upload("incoming/売買契約 2024.pdf", corpus_dir / "cuad/ehaveinc-reseller-agreement.pdf")
    # When both are ingested in one batch
    response = ingest_handler(event_for(load_event, "incoming/賃貸契約 2024.pdf", "incoming/売買契約 2024.pdf"),
                              ingest_context)
    # Then each is its own document with one version, neither a version of the other
    assert response == {"batchItemFailures": []}
    state = wiring.state_store()
    assert [len(state.list_document_versions(d)) for d in ("2024--cf3df3ae", "2024--6d5395bd")] == [1, 1]
    assert state.get_document("2024") is None


def test_another_object_taking_an_existing_id_is_logged_as_a_warning(
        aws_stack, corpus_dir: Path, ingest_handler, ingest_context, load_event,
        caplog: pytest.LogCaptureFixture) -> None:
    # Given incoming/lease-2024.txt ingested, then a different file incoming/lease-2024.md (same name, same id)
    aws_stack.upload("incoming/lease-2024.txt", corpus_dir / "Apache-2.0.txt")
    assert ingest_handler(event_for(load_event, "incoming/lease-2024.txt"), ingest_context) == {"batchItemFailures": []}
    aws_stack.upload("incoming/lease-2024.md", corpus_dir / "MPL-2.0.txt")
    caplog.clear()
    # When the second is processed
    ingest_handler(event_for(load_event, "incoming/lease-2024.md"), ingest_context)
    # Then a warning names both keys (the handler is no longer silent about it)
    assert [(w.key, w.existing_key) for w in logged(caplog, "WARNING")] == [("incoming/lease-2024.md", "incoming/lease-2024.txt")]


def test_names_differing_only_in_case_or_separators_stay_separate_documents(
        aws_stack, corpus_dir: Path, ingest_handler, ingest_context, load_event,
        caplog: pytest.LogCaptureFixture) -> None:
    # Given four different files named Contract.txt, contract.txt, my contract.txt and my_contract.txt
    keys = ["incoming/Contract.txt", "incoming/contract.txt", "incoming/my contract.txt", "incoming/my_contract.txt"]
    for key, doc in zip(keys, ["Apache-2.0.txt", "MPL-2.0.txt", "GPL-3.0.txt", "cuad/herimports-maintenance-agreement.txt"],
                        strict=True):
        aws_stack.upload(key, corpus_dir / doc)
    caplog.clear()
    # When all four are ingested in one batch
    assert ingest_handler(event_for(load_event, *keys), ingest_context) == {"batchItemFailures": []}
    # Then each is its own READY document with one version, and no name took another's id
    state = wiring.state_store()
    ids = ["contract--a6f5b0e5", "contract", "my-contract--17712146", "my-contract--bd24f241"]
    assert [(state.get_document(i).source_key, state.get_document(i).status) for i in ids] == [
        (k, "READY") for k in keys]
    assert [len(state.list_document_versions(i)) for i in ids] == [1, 1, 1, 1]
    assert logged(caplog, "WARNING") == []


def test_a_document_ingested_under_its_earlier_id_keeps_it_for_new_versions_and_removal(
        aws_stack, corpus_dir: Path, ingest_handler, ingest_context, load_event) -> None:
    # Given Contract.pdf registered READY under "contract", the id the earlier rule gave it
    state = wiring.state_store()
    state.put_document(DocumentRecord(doc_id="contract", doc_version="0123456789abcdef", source="Contract.pdf",
                                      status="READY", source_key="incoming/Contract.pdf",
                                      updated_at="2025-01-01T00:00:00+00:00"))
    # When a changed Contract.pdf is uploaded and its event processed
    data = aws_stack.upload("incoming/Contract.pdf", corpus_dir / PDF)
    assert ingest_handler(event_for(load_event, "incoming/Contract.pdf"), ingest_context) == {"batchItemFailures": []}
    # Then it is the new latest version of "contract", not a second document under today's id
    assert [r.doc_version for r in state.list_document_versions("contract")] == [
        "0123456789abcdef", hashlib.sha256(data).hexdigest()[:16]]
    assert state.get_document("contract").status == "READY"
    assert state.get_document(doc_id_for_key("incoming/Contract.pdf")) is None
    # And removing the object marks that document's versions DELETED
    aws_stack.s3.delete_object(Bucket=aws_stack.bucket, Key="incoming/Contract.pdf")
    assert ingest_handler(load_event_for_removal(load_event, "incoming/Contract.pdf"),
                          ingest_context) == {"batchItemFailures": []}
    assert {r.status for r in state.list_document_versions("contract")} == {"DELETED"}


def load_event_for_removal(load_event, key: str) -> dict[str, Any]:
    """The ObjectRemoved event of ``key`` (URL-encoded as S3 sends it)."""
    event = load_event("sqs-s3-object-removed.json")
    body = json.loads(event["Records"][0]["body"])
    body["Records"][0]["s3"]["object"]["key"] = quote_plus(key, safe="/")
    event["Records"][0]["body"] = json.dumps(body)
    return event


def test_an_id_that_cannot_be_derived_is_a_rejected_document_not_a_redelivery(
        aws_stack, corpus_dir: Path, ingest_handler, ingest_context, load_event,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # Given an id rule that raises for this key (no rule may escape the handler's error handling)
    def refuse(key: str) -> str:
        raise DocumentError(key, "cannot derive a document id from this name")

    monkeypatch.setattr("longdoc.ingest.ids.doc_id_for_key", refuse)
    aws_stack.upload("incoming/契約書.pdf", corpus_dir / PDF)
    caplog.clear()
    # When its notification is processed
    response = ingest_handler(event_for(load_event, "incoming/契約書.pdf"), ingest_context)
    # Then the message is acknowledged (no five redeliveries into the DLQ) and the reason is logged
    assert response == {"batchItemFailures": []}
    rejected = [r for r in logged(caplog, "WARNING") if r.getMessage() == "document rejected"]
    assert [r.reason for r in rejected] == ["cannot derive a document id from this name"]
