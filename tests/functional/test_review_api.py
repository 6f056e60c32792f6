"""The API's review routes in AWS mode: moto DynamoDB (the stack's table) and S3, the real wiring.

Given the invented two-page lease (``review_support``) stored as the stack stores it (registry entry and
run in DynamoDB, chunks and the source PDF in S3) and one SUCCEEDED run of four extractions, each
decision kind goes through ``POST /reviews/{item_id}/decisions`` and lands in DynamoDB under the
``REVIEW#`` keys; a stale ``expected_version`` is a 409, a non-verbatim correction a 422.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from longdoc import wiring
from longdoc.core.documents import save_chunks
from longdoc.core.models import DocumentRecord
from longdoc.core.records import Extraction, RunRecord
from longdoc.local.engine import LocalContext
from longdoc.local.lambda_runtime import load_handler
from tests.functional.review_support import CHUNKS, PAGE1, PAGE2, RUN, VERSION, result
from tests.unit.pdf_builder import text_pdf

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

REPO = Path(__file__).resolve().parents[2]
BUCKET, TABLE = "longdoc-test-documents", "longdoc-test-Table"
ARN = "arn:aws:sts::123456789012:assumed-role/longdoc-analyst/analyst"


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in text.replace(". ", ".\n").split("\n") if s.strip()]


@pytest.fixture
def stack(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Any]:
    """moto S3 + DynamoDB in AWS mode holding the lease (PDF under incoming/), its chunks and the run."""
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1", "LONGDOC_MODE": "aws",
                        "LONGDOC_BUCKET": BUCKET, "LONGDOC_TABLE": TABLE, "LONGDOC_HOME": str(tmp_path),
                        "LONGDOC_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:x",
                        "LONGDOC_REVIEW_ACCEPT_THRESHOLD": "0.8"}.items():
        monkeypatch.setenv(name, value)
    wiring.reset()
    with mock_aws():
        boto3.client("s3").create_bucket(Bucket=BUCKET)
        dynamodb = boto3.client("dynamodb")
        dynamodb.create_table(TableName=TABLE, BillingMode="PAY_PER_REQUEST",
                              AttributeDefinitions=[{"AttributeName": k, "AttributeType": "S"} for k in ("pk", "sk")],
                              KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                         {"AttributeName": "sk", "KeyType": "RANGE"}])
        pdf = text_pdf([_sentences(PAGE1), _sentences(PAGE2)])
        wiring.blob_store().put("incoming/lease.pdf", pdf)
        state = wiring.state_store()
        state.put_document(DocumentRecord(doc_id="lease", doc_version=VERSION, source="lease.pdf", status="READY",
                                          pages=2, chunks=2, source_key="incoming/lease.pdf",
                                          content_sha256=hashlib.sha256(pdf).hexdigest()))
        save_chunks(wiring.blob_store(), "lease", VERSION, CHUNKS)
        state.put_run(RunRecord(run_id=RUN, doc_id="lease", doc_version=VERSION, clause_types=["x"],
                                status="SUCCEEDED", model="m"))
        for n, e in enumerate(result()["extractions"]):
            state.put_extraction(RUN, Extraction.model_validate({**e, "instance": f"i{n}" if e["status"] == "found"
                                                                 else ""}))
        yield dynamodb
    wiring.reset()


def call(method: str, path: str, resource: str, params: dict[str, str] | None = None,
         query: dict[str, str] | None = None, body: Any = None) -> tuple[int, Any]:
    """One API Gateway REST event (events/api-*.json, the analyst's IAM identity) through the API handler."""
    name = "api-post-extractions.json" if method == "POST" else "api-get-extraction.json"
    event = json.loads((REPO / "events" / name).read_text())
    headers = {k: v for k, v in event["headers"].items() if k != "Idempotency-Key"}
    event.update(path=path, httpMethod=method, resource=resource, pathParameters=params, headers=headers,
                 multiValueHeaders={k: [v] for k, v in headers.items()}, queryStringParameters=query,
                 multiValueQueryStringParameters={k: [v] for k, v in (query or {}).items()} or None,
                 body=None if body is None else json.dumps(body))
    event["requestContext"].update(path=f"/dev{path}", resourcePath=resource, httpMethod=method)
    response = load_handler("api").handler(event, LocalContext(function_name="longdoc-dev-ApiFunction"))
    return response["statusCode"], json.loads(response["body"]) if response.get("body") else None


def items() -> dict[str, dict[str, Any]]:
    status, body = call("GET", "/reviews", "/reviews", query={"run_id": RUN, "status": "all"})
    assert status == 200
    return {i["clause_type"]: i for i in body["items"]}


def decide(item_id: str, **body: Any) -> tuple[int, Any]:
    return call("POST", f"/reviews/{item_id}/decisions", "/reviews/{item_id}/decisions", {"item_id": item_id},
                body=body)


def test_queue_is_ordered_by_confidence_and_holds_the_possible_omission(stack: Any) -> None:
    # When the run's queue is read
    status, body = call("GET", "/reviews", "/reviews", query={"run_id": RUN})
    # Then it holds the low-confidence Cap (0.3) then the possible omission (0.4), not the confident two
    assert status == 200 and body["threshold"] == 0.8
    assert [(i["clause_type"], i["kind"], i["confidence"]) for i in body["items"]] == [
        ("Cap On Liability", "extraction", 0.3), ("Termination For Convenience", "possible_omission", 0.4)]
    # And the items are in the stack's table under REVIEW# keys
    keys = {i["pk"]["S"] for i in stack.scan(TableName=TABLE)["Items"]}
    assert f"REVIEW#RUN#{RUN}" in keys and sum(k.startswith("REVIEW#ITEM#") for k in keys) == 4


def test_each_decision_kind_is_stored_with_the_callers_identity(stack: Any) -> None:
    every = items()
    # When the analyst accepts, corrects, rejects, marks present and marks absent
    accepted = decide(every["Governing Law"]["item_id"], action="accept", expected_version=0)
    corrected = decide(every["Cap On Liability"]["item_id"], action="correct", expected_version=0,
                       quote="The landlord's liability is capped at $5,000.", page=2)
    present = decide(every["Termination For Convenience"]["item_id"], action="mark_present",
                     quote="Either party may terminate on 30 days notice.", chunk_id=CHUNKS[1].chunk_id,
                     reviewer="someone else")
    absent = decide(every["Audit Rights"]["item_id"], action="mark_absent")
    rejected = decide(every["Governing Law"]["item_id"], action="reject", expected_version=1)
    # Then each is a 201 with the decision and the item's new status and version
    assert [s for s, _ in (accepted, corrected, present, absent, rejected)] == [201] * 5
    assert [b["item"]["status"] for _, b in (accepted, corrected, present, absent, rejected)] == [
        "accepted", "corrected", "present", "absent", "rejected"]
    assert rejected[1]["decision"]["version"] == 2
    # And the reviewer is the caller's IAM identity, whatever the body says
    assert {b["decision"]["reviewer"] for _, b in (accepted, corrected, present, absent, rejected)} == {ARN}
    # And the correction was located like a model citation: page 2, the chunk's own text
    citation = corrected[1]["decision"]["citation"]
    assert (citation["page"], citation["chunk_id"], citation["quote"]) == (
        2, CHUNKS[1].chunk_id, "The landlord's liability is capped at $5,000.")
    assert corrected[1]["decision"]["replaces"] == "Rent is due monthly on the first day."
    # And the item view shows the history and the page text the span is on
    status, view = call("GET", f"/reviews/{every['Cap On Liability']['item_id']}", "/reviews/{item_id}",
                        {"item_id": every["Cap On Liability"]["item_id"]})
    assert status == 200 and view["page"] == 2 and view["span"]["quote"].startswith("The landlord's")
    assert [c["chunk_id"] for c in view["chunks"]] == [CHUNKS[1].chunk_id] and view["chunks"][0]["text"] == PAGE2
    assert [d["action"] for d in view["history"]] == ["correct"]
    # And the reviewed result applies the latest decisions; the model output is unchanged
    status, reviewed = call("GET", f"/extractions/{RUN}/reviewed-result", "/extractions/{id}/reviewed-result",
                            {"id": RUN})
    assert status == 200
    by = {e["clause_type"]: e for e in reviewed["reviewed_extractions"]}
    assert by["Cap On Liability"]["clause_text"] == "The landlord's liability is capped at $5,000."
    assert by["Governing Law"]["status"] == "rejected" and by["Audit Rights"]["status"] == "not_found"
    assert reviewed["extractions"][1]["clause_text"] == "Rent is due monthly on the first day."
    assert reviewed["review"]["pending"] == 0 and len(reviewed["review"]["reviewed"]) == 4


def test_a_stale_expected_version_is_a_409_and_nothing_is_stored(stack: Any) -> None:
    item_id = items()["Cap On Liability"]["item_id"]
    # Given two reviewers who both saw version 0; the first accepts
    assert decide(item_id, action="accept", expected_version=0)[0] == 201
    # When the second rejects from version 0
    status, body = decide(item_id, action="reject", expected_version=0)
    # Then it is refused with 409 naming the versions, and the item keeps one decision
    assert status == 409 and body["field"] == "expected_version"
    assert "at version 1, not 0" in body["message"]
    assert items()["Cap On Liability"]["status"] == "accepted" and items()["Cap On Liability"]["version"] == 1


def test_a_correction_that_is_not_verbatim_is_a_422_and_nothing_is_stored(stack: Any) -> None:
    item_id = items()["Cap On Liability"]["item_id"]
    # When the selection is not the document's text (two sentences glued across chunks)
    status, body = decide(item_id, action="correct", quote="governed by the laws of Ohio. 3. Either party", page=1)
    # Then 422 names the document and page, and the item is still pending
    assert status == 422 and body["field"] == "quote"
    assert "correction refused for document lease@" in body["message"] and "on page 1" in body["message"]
    assert items()["Cap On Liability"]["status"] == "pending"
    # And a correction without a quote, or mark_present on a found clause, is a 400
    # that names no CLI flag or command (the caller is not at a terminal), as the 404 for an unknown item
    answers = [decide(item_id, action="correct"),
               decide(item_id, action="mark_present", quote="Rent is due monthly on the first day."),
               decide(item_id, action="correct", quote="the"), decide(item_id, action="accept", expected_version=99)]
    assert [status for status, _ in answers] == [400, 400, 400, 400]
    unknown = decide("ri-0000000000000000", action="accept")
    assert unknown[0] == 404
    for _, body in [*answers, unknown]:
        assert "--" not in body["message"] and "`longdoc" not in body["message"], body["message"]


def test_the_page_image_boxes_the_span_in_force(stack: Any) -> None:
    item_id = items()["Governing Law"]["item_id"]
    # When the item's page is rendered
    status, view = call("GET", f"/reviews/{item_id}/page-image", "/reviews/{item_id}/page-image", {"item_id": item_id})
    # Then it is page 1 as a JPEG with the quote's line boxed near the top of the page (PDFium may give the
    # final full stop a box of its own, on the same line)
    assert status == 200 and view["page"] == 1 and view["image"].startswith("data:image/jpeg;base64,")
    assert view["located"] == "full" and view["boxes"]
    left, top, width, height = view["boxes"][0]
    assert 0 < left < 0.3 and 0.1 < top < 0.2 and 0.3 < width < 1 and 0 < height < 0.05
    assert all(top <= y <= top + height for _, y, _, _ in view["boxes"])
    # And another page is rendered without boxes; a page outside the document is a 404
    assert call("GET", f"/reviews/{item_id}/page-image", "/reviews/{item_id}/page-image", {"item_id": item_id},
                query={"page": "2"})[1]["boxes"] == []
    assert call("GET", f"/reviews/{item_id}/page-image", "/reviews/{item_id}/page-image", {"item_id": item_id},
                query={"page": "3"})[0] == 404
