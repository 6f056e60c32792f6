"""``POST /summaries`` and ``GET /summaries/{id}`` in the API handler, and the summarize handler, in AWS mode (moto).

The API starts executions of a moto state machine built from ``statemachine/summarize.asl.json``
(moto records them without running them); the summarize function's steps are then invoked
as Step Functions would, in order, against moto S3 with the offline baseline.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from longdoc import wiring
from longdoc.config import function_settings
from longdoc.core.documents import chunks_key
from longdoc.core.models import DocumentRecord
from longdoc.ingest.chunk import chunk_document
from longdoc.ingest.parse import parse_document
from longdoc.local.engine import LocalContext
from longdoc.local.lambda_runtime import load_handler
from tests.functional.summary_support import policy_pages, section_amount
from tests.unit.pdf_builder import text_pdf

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

REPO = Path(__file__).resolve().parents[2]
ACCOUNT = "123456789012"
SUMMARIZE_ARN = f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:longdoc-dev-SummarizeFunction"


@pytest.fixture
def machine(aws_stack, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, str]]:
    """A moto state machine from summarize.asl.json, its ARN in LONGDOC_SUMMARY_STATE_MACHINE_ARN."""
    client = boto3.client("stepfunctions", region_name="us-east-1")
    definition = (REPO / "statemachine" / "summarize.asl.json").read_text().replace("${SummarizeFunctionArn}",
                                                                                    SUMMARIZE_ARN)
    definition = definition.replace("${Partition}", "aws")
    arn = client.create_state_machine(name="longdoc-dev-summarize", definition=definition,
                                      roleArn=f"arn:aws:iam::{ACCOUNT}:role/longdoc-dev-sfn")["stateMachineArn"]
    monkeypatch.setenv("LONGDOC_SUMMARY_STATE_MACHINE_ARN", arn)
    monkeypatch.setenv("LONGDOC_SUMMARY_SINGLE_CALL_TOKENS", "3000")
    monkeypatch.setenv("LONGDOC_STATE_MACHINE_ARN", arn.replace("summarize", "extract"))  # the API needs both
    function_settings.cache_clear()
    wiring.step_functions_starter.cache_clear()  # never reuse a client from another test's moto context
    yield client, arn
    wiring.step_functions_starter.cache_clear()


def store_policy(sections: int = 6) -> DocumentRecord:
    """The generated policy's chunks in (moto) S3 and a READY registry entry in (moto) DynamoDB."""
    chunks = chunk_document(parse_document("policy.pdf", text_pdf(policy_pages(sections))), "policy")
    wiring.blob_store().put(chunks_key("policy", chunks[0].doc_version),
                            "".join(c.model_dump_json() + "\n" for c in chunks).encode())
    record = DocumentRecord(doc_id="policy", doc_version=chunks[0].doc_version, source="policy.pdf", status="READY",
                            pages=sections, chunks=len(chunks), updated_at="2026-01-01T00:00:00+00:00")
    wiring.state_store().put_document(record)
    return record


def call(method: str, path: str, body: Any = None, path_parameters: dict[str, str] | None = None,
         resource: str | None = None) -> tuple[int, Any]:
    """Send an API Gateway REST event (built from events/api-*.json) to the API handler."""
    name = "api-post-extractions.json" if method == "POST" else "api-get-extraction.json"
    event = json.loads((REPO / "events" / name).read_text())
    headers = {k: v for k, v in event["headers"].items() if k != "Idempotency-Key"}
    event.update(path=path, httpMethod=method, resource=resource or path, pathParameters=path_parameters,
                 headers=headers, multiValueHeaders={k: [v] for k, v in headers.items()},
                 body=None if body is None else json.dumps(body))
    event["requestContext"].update(path=f"/dev{path}", resourcePath=resource or path, httpMethod=method)
    response = load_handler("api").handler(event, LocalContext(function_name="longdoc-dev-ApiFunction"))
    return response["statusCode"], json.loads(response["body"]) if response.get("body") else None


def get(summary_id: str) -> tuple[int, Any]:
    return call("GET", f"/summaries/{summary_id}", path_parameters={"summary_id": summary_id},
                resource="/summaries/{summary_id}")


def run_steps(summary_id: str) -> dict[str, Any]:
    """Invoke the summarize handler as the state machine does: Plan, each MapGroup, Reduce until READY, Synthesize."""
    handler = load_handler("summarize").handler

    def step(payload: dict[str, Any]) -> dict[str, Any]:
        return handler(payload, LocalContext(function_name="longdoc-dev-SummarizeFunction"))

    plan = step({"action": "plan", "summary_id": summary_id})
    for index in plan["items"]:
        step({"action": "map", "summary_id": summary_id, "index": index})
    state = {"level": 0, "status": "CONTINUE"}
    while plan["mode"] == "map" and state["status"] == "CONTINUE":
        state = step({"action": "reduce", "summary_id": summary_id, "level": state["level"]})
    return step({"action": "synthesize", "summary_id": summary_id, "level": state["level"]})


def test_post_starts_a_summary_and_get_returns_it_when_done(aws_stack, machine) -> None:
    client, arn = machine
    doc = store_policy()
    # When a summary is asked for
    status, started = call("POST", "/summaries", {"doc_id": "policy", "focus": "baggage", "length": "short"})
    # Then it is accepted with its id, and one execution carries only that id
    assert status == 202 and started["summary_id"].startswith("sum-") and started["status"] == "PENDING"
    [execution] = client.list_executions(stateMachineArn=arn)["executions"]
    assert execution["name"] == f"{started['summary_id']}-1"
    assert json.loads(client.describe_execution(executionArn=execution["executionArn"])["input"]) == {
        "summary_id": started["summary_id"]}
    # And asking again starts nothing new
    assert call("POST", "/summaries", {"doc_id": "policy", "focus": "baggage", "length": "short"})[1] == started
    assert len(client.list_executions(stateMachineArn=arn)["executions"]) == 1
    assert get(started["summary_id"])[1]["status"] == "PENDING"
    # When the state machine's steps run (the summarize handler, AWS mode, offline baseline)
    done = run_steps(started["summary_id"])
    assert done["status"] == "SUCCEEDED" and done["statements"] > 0
    # Then GET returns the cited statements, exact values and counters, stored in S3
    status, result = get(started["summary_id"])
    assert status == 200 and result["status"] == "SUCCEEDED" and result["doc_version"] == doc.doc_version
    assert result["map_calls"] == result["groups"] > 1 and result["baseline"] is True
    assert all(s["citations"] and s["citations"][0]["page"] for s in result["statements"])
    assert section_amount(2) in {v["value"] for v in result["exact_values"]}
    assert aws_stack.keys(f"summaries/{started['summary_id']}/map/")


@pytest.mark.parametrize("body, code, message", [
    ({"doc_id": "nope"}, 404, "document nope does not exist"),
    ({"doc_id": "policy", "focus": "x" * 301}, 400, "invalid request"),
    ({"doc_id": "policy", "length": "epic"}, 400, "invalid request"),
])
def test_bad_requests_are_answered_in_one_line(aws_stack, machine, body, code, message) -> None:
    store_policy(2)
    status, answer = call("POST", "/summaries", body)
    assert status == code and message in answer["message"]


def test_an_unknown_summary_is_404(aws_stack, machine) -> None:
    assert get("sum-0000")[0] == 404


class _TakenName:
    """An execution starter whose every name is taken, as the local starters answer a race on a new summary."""

    def start_execution(self, name: str, execution_input: dict[str, Any]) -> str:
        from longdoc.core.errors import ExecutionAlreadyExists

        raise ExecutionAlreadyExists(f"execution {name} of the local summarize state machine already exists")


def test_an_execution_name_already_taken_is_not_answered_as_a_client_error(aws_stack, machine) -> None:
    # Given a starter that answers ExecutionAlreadyExists, as the local one does in a race (on AWS,
    # botocore's error of the same name, which is no LongdocError)
    from longdoc.core.errors import ExecutionAlreadyExists, LongdocError

    store_policy(2)
    assert not issubclass(ExecutionAlreadyExists, LongdocError)
    # When a summary is asked for, Then the error is not mapped to a 4xx domain answer: it propagates
    # from the handler (a 500 behind API Gateway or `longdoc serve`), the same locally as on AWS
    with wiring.overrides(starters={"summarize": _TakenName()}), pytest.raises(ExecutionAlreadyExists):
        call("POST", "/summaries", {"doc_id": "policy", "length": "short"})


def test_summaries_are_admitted_up_to_the_running_cap(aws_stack, machine, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given at most one running summary (issue 26: one Claude budget) and one summary started
    monkeypatch.setenv("LONGDOC_MAX_RUNNING_SUMMARIES", "1")
    function_settings.cache_clear()
    client, arn = machine
    store_policy()
    status, first = call("POST", "/summaries", {"doc_id": "policy"})
    assert status == 202
    # When another summary is asked for while that execution runs (moto keeps it RUNNING)
    status, refused = call("POST", "/summaries", {"doc_id": "policy", "length": "long"})
    # Then it is refused with 429 and Retry-After, and no execution starts; repeating the first is answered
    assert status == 429 and refused["retry_after_seconds"] == 60 and "1 summaries are running" in refused["message"]
    assert len(client.list_executions(stateMachineArn=arn)["executions"]) == 1
    assert call("POST", "/summaries", {"doc_id": "policy"})[1]["summary_id"] == first["summary_id"]
