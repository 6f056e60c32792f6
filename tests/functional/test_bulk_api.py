"""``POST /bulk-extractions`` and ``GET /bulk-extractions/{id}`` in the API handler, AWS mode (moto).

The API starts executions of a moto state machine built from ``statemachine/bulk.asl.json``
(moto records them without running them); the rounds are then run in-process with the bulk
function's adapters (:func:`longdoc.bulk.driver.run_rounds`, local batches from the baseline).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import pytest

from longdoc import wiring
from longdoc.bulk.driver import run_rounds
from longdoc.config import function_settings
from longdoc.local.engine import LocalContext
from longdoc.local.lambda_runtime import load_handler

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

REPO = Path(__file__).resolve().parents[2]
ACCOUNT = "123456789012"
BULK_ARN = f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:longdoc-dev-BulkFunction"
TYPES = ["Governing Law", "Insurance", "Audit Rights"]


@pytest.fixture
def machine(aws_stack, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[Any, str]]:
    """A moto state machine from bulk.asl.json (its ARN in LONGDOC_BULK_STATE_MACHINE_ARN) and a price
    table that prices the offline baseline (so costs are figures, not None)."""
    client = boto3.client("stepfunctions", region_name="us-east-1")
    definition = (REPO / "statemachine" / "bulk.asl.json").read_text().replace("${BulkFunctionArn}", BULK_ARN)
    arn = client.create_state_machine(name="longdoc-dev-bulk", definition=definition,
                                      roleArn=f"arn:aws:iam::{ACCOUNT}:role/longdoc-dev-sfn")["stateMachineArn"]
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"models": {"offline-extractive-baseline-v1": {
        "input": "2", "output": "10", "cache_write": "2.50", "cache_read": "0.20"}}}))
    monkeypatch.setenv("LONGDOC_BULK_STATE_MACHINE_ARN", arn)
    monkeypatch.setenv("LONGDOC_STATE_MACHINE_ARN", arn.replace("bulk", "extract"))  # the API needs both
    monkeypatch.setenv("LONGDOC_PRICE_TABLE", str(prices))
    monkeypatch.setenv("LONGDOC_BULK_POLL_FIRST", "0")
    function_settings.cache_clear()
    wiring.step_functions_starter.cache_clear()  # never reuse a client from another test's moto context
    wiring.bulk_deps.cache_clear()
    yield client, arn
    wiring.step_functions_starter.cache_clear()
    wiring.bulk_deps.cache_clear()


def call(method: str, path: str, body: Any = None, key: str | None = None, bulk_id: str | None = None) -> tuple[int, Any]:
    """Send an API Gateway REST event (built from events/api-*.json) to the API handler."""
    name = "api-post-extractions.json" if method == "POST" else "api-get-extraction.json"
    event = json.loads((REPO / "events" / name).read_text())
    headers = {k: v for k, v in event["headers"].items() if k != "Idempotency-Key"}
    if key:
        headers["Idempotency-Key"] = key
    resource = "/bulk-extractions/{bulk_id}" if bulk_id else path
    event.update(path=path, httpMethod=method, resource=resource, headers=headers,
                 pathParameters={"bulk_id": bulk_id} if bulk_id else None,
                 multiValueHeaders={k: [v] for k, v in headers.items()},
                 body=None if body is None else json.dumps(body))
    event["requestContext"].update(path=f"/dev{path}", resourcePath=resource, httpMethod=method)
    response = load_handler("api").handler(event, LocalContext(function_name="longdoc-dev-ApiFunction"))
    return response["statusCode"], json.loads(response["body"]) if response.get("body") else None


def test_post_is_idempotent_and_get_reports_counts_documents_and_both_costs(aws_stack, ingested_contract,
                                                                         machine) -> None:
    client, arn = machine
    body = {"clause_types": TYPES, "doc_ids": [ingested_contract.doc_id, "no-such-doc"]}
    # When a bulk job is posted with an Idempotency-Key, then posted again
    status, started = call("POST", "/bulk-extractions", body, key="backfill-1")
    again_status, again = call("POST", "/bulk-extractions", body, key="backfill-1")
    # Then one job, one execution named after it (input: ids and the round only); the unknown id is rejected
    assert status == again_status == 202 and started == again
    assert started["documents"] == 1 and [r["where"] for r in started["rejected"]] == ["no-such-doc"]
    [execution] = client.list_executions(stateMachineArn=arn)["executions"]
    assert execution["name"] == started["bulk_id"]
    assert json.loads(client.describe_execution(executionArn=execution["executionArn"])["input"]) == {
        "bulk_id": started["bulk_id"], "round": 0}
    # And the same key with another body is refused, starting nothing
    status, refused = call("POST", "/bulk-extractions", {**body, "clause_types": ["Insurance"]}, key="backfill-1")
    assert status == 422 and refused["field"] == "Idempotency-Key"
    assert len(client.list_executions(stateMachineArn=arn)["executions"]) == 1
    # And before any round, GET reports the document pending
    status, view = call("GET", f"/bulk-extractions/{started['bulk_id']}", bulk_id=started["bulk_id"])
    assert status == 200 and (view["pending"], view["done"], view["status"]) == (1, 0, "RUNNING")
    # When the rounds run (as the state machine would)
    run_rounds(wiring.bulk_deps(), started["bulk_id"], sleep=lambda s: None)
    # Then GET reports it done, per document, with the batch cost half the synchronous cost
    status, view = call("GET", f"/bulk-extractions/{started['bulk_id']}", bulk_id=started["bulk_id"])
    assert status == 200 and (view["pending"], view["done"], view["failed"], view["status"]) == (0, 1, 0, "SUCCEEDED")
    [doc] = view["documents"]
    assert doc["doc_id"] == ingested_contract.doc_id and doc["status"] == "SUCCEEDED" and doc["extractions"] == 3
    assert Decimal(view["sync_cost_usd"]) > 0 and Decimal(view["cost_usd"]) * 2 == Decimal(view["sync_cost_usd"])
    # And the cost string says both in USD (this table prices the model)
    assert view["cost"] == f"{view['cost_usd']} USD at batch prices (synchronous: {view['sync_cost_usd']} USD)"


def test_bad_bodies_and_unknown_jobs(aws_stack, machine) -> None:
    status, _ = call("POST", "/bulk-extractions", {"clause_types": TYPES, "doc_ids": []})
    assert status == 400
    status, answer = call("POST", "/bulk-extractions", {"clause_types": TYPES, "doc_ids": ["nope"]})
    assert status == 400 and "no document to run" in answer["message"]
    status, answer = call("GET", "/bulk-extractions/bulk-nope", bulk_id="bulk-nope")
    assert status == 404 and "not found" in answer["message"]
