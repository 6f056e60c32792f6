"""The API's load limits and audit trail (issue 11, findings 3, 7 and 10): body bounds, admission
control (429 with Retry-After), the caller's IAM identity logged with the run id, and a run whose
execution was stopped recorded as failed when it is read.

The API handler runs in-process against moto (DynamoDB, Step Functions; moto keeps executions
``RUNNING`` until stopped), with the events of ``events/api-*.json``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from longdoc.config import function_settings
from longdoc.core.models import DocumentRecord
from longdoc.local.engine import LocalContext
from longdoc.local.lambda_runtime import load_handler
from tests.functional.test_api_handler import StateMachine, sfn  # noqa: F401 - the fixture

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

REPO = Path(__file__).resolve().parents[2]
CALLER_ARN = "arn:aws:sts::123456789012:assumed-role/longdoc-analyst/analyst"
Call = Callable[..., dict[str, Any]]


@pytest.fixture
def call(sfn: StateMachine) -> Call:  # noqa: F811 - pytest injects the imported fixture
    """``call(method, path, body=None, headers=None, path_parameters=None)`` -> the raw proxy response."""
    handler = load_handler("api").handler
    post = json.loads((REPO / "events" / "api-post-extractions.json").read_text())
    get = json.loads((REPO / "events" / "api-get-extraction.json").read_text())

    def invoke(method: str, path: str, body: Any = None, headers: dict[str, str] | None = None,
               resource: str | None = None, path_parameters: dict[str, str] | None = None) -> dict[str, Any]:
        event = json.loads(json.dumps(post if method == "POST" else get))
        base = {k: v for k, v in event["headers"].items() if k not in ("Idempotency-Key", "Content-Type")}
        if method == "POST":
            base["Content-Type"] = "application/json"
        base.update(headers or {})
        event.update(path=path, httpMethod=method, resource=resource or path, pathParameters=path_parameters,
                     headers=base, multiValueHeaders={k: [v] for k, v in base.items()},
                     body=body if body is None else json.dumps(body))
        event["requestContext"].update(path=f"/dev{path}", resourcePath=resource or path, httpMethod=method)
        return handler(event, LocalContext(function_name="longdoc-dev-ApiFunction"))

    return invoke


def _body(response: dict[str, Any]) -> Any:
    return json.loads(response["body"]) if response.get("body") else None


def _request(doc: DocumentRecord, **extra: Any) -> dict[str, Any]:
    return {"doc_id": doc.doc_id, "clause_types": ["Governing Law"], **extra}


@pytest.mark.parametrize(("extra", "headers", "field"), [
    ({"clause_types": ["x" * 129]}, {}, "clause_types"),
    ({"facts": {f"k{i}": "v" for i in range(33)}}, {}, "facts"),
    ({"facts": {"k" * 65: "v"}}, {}, "facts"),
    ({"facts": {"claim": "v" * 1001}}, {}, "facts"),
    ({}, {"Idempotency-Key": "k" * 256}, "header.idempotency-key"),
])
def test_oversized_fields_are_400_naming_the_field(
    call: Call, sfn: StateMachine, ingested_contract: DocumentRecord,  # noqa: F811
    extra: dict[str, Any], headers: dict[str, str], field: str,
) -> None:
    # Given a request with one field over its bound
    # When it is posted
    response = call("POST", "/extractions", _request(ingested_contract, **extra), headers)
    # Then it is refused with 400 naming the field, and no execution starts
    assert response["statusCode"] == 400
    assert any(f.startswith(field) for f in _body(response)["fields"]), _body(response)
    assert sfn.executions() == []


def test_at_the_cap_a_new_run_is_429_with_retry_after_and_a_replay_is_not(
    call: Call, sfn: StateMachine, ingested_contract: DocumentRecord, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
) -> None:
    # Given admission control at one running extraction, and one run started (moto keeps it RUNNING)
    monkeypatch.setenv("LONGDOC_MAX_RUNNING_EXTRACTIONS", "1")
    monkeypatch.setenv("LONGDOC_RETRY_AFTER_SECONDS", "45")
    function_settings.cache_clear()
    first = call("POST", "/extractions", _request(ingested_contract), {"Idempotency-Key": "first"})
    assert first["statusCode"] == 202
    # When another run is requested, and the first request is repeated
    second = call("POST", "/extractions", _request(ingested_contract, top_k=3), {"Idempotency-Key": "second"})
    replay = call("POST", "/extractions", _request(ingested_contract), {"Idempotency-Key": "first"})
    # Then the new run is refused with 429 and Retry-After, nothing stored or started for it, and
    # the replay of the admitted run is answered as before (it starts nothing)
    assert second["statusCode"] == 429
    assert second["multiValueHeaders"]["Retry-After"] == ["45"]
    assert _body(second)["retry_after_seconds"] == 45
    assert replay["statusCode"] == 202 and _body(replay)["run_id"] == _body(first)["run_id"]
    assert len(sfn.executions()) == 1


class _Lines(logging.Handler):
    """Keeps every record as the JSON line Powertools' formatter writes."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))


def test_the_run_id_is_logged_with_the_callers_identity(
    call: Call, sfn: StateMachine, ingested_contract: DocumentRecord,  # noqa: F811
) -> None:
    # Given a SigV4-authorised request (events/api-post-extractions.json carries the identity)
    # and the function's log lines collected as JSON
    from longdoc.observability import logger

    collected = _Lines()
    collected.setFormatter(logger.registered_formatter)
    logger._logger.addHandler(collected)
    try:
        # When a run is requested
        response = call("POST", "/extractions", _request(ingested_contract), {"Idempotency-Key": "audit-1"})
    finally:
        logger._logger.removeHandler(collected)
    # Then one log line names the run id and the caller's IAM identity
    lines = collected.lines
    [logged] = [line for line in lines if line.get("message") == "extraction requested"]
    assert logged["run_id"] == _body(response)["run_id"]
    assert logged["caller_arn"] == CALLER_ARN
    assert (logged["caller_account"], logged["source_ip"]) == ("123456789012", "203.0.113.10")


def test_a_run_whose_execution_was_stopped_reads_failed(
    call: Call, sfn: StateMachine, ingested_contract: DocumentRecord,  # noqa: F811
) -> None:
    # Given a started run whose execution is then stopped (no state runs, the run still reads RUNNING)
    run_id = _body(call("POST", "/extractions", _request(ingested_contract), {"Idempotency-Key": "stop-me"}))["run_id"]
    [execution] = sfn.executions()
    sfn.client.stop_execution(executionArn=execution["executionArn"], error="Operator", cause="stopped by hand")
    # When the run is read
    response = call("GET", f"/extractions/{run_id}", resource="/extractions/{id}", path_parameters={"id": run_id})
    # Then it is recorded failed, naming the stop, and a replay of its request answers the same
    body = _body(response)
    assert response["statusCode"] == 200
    assert (body["status"], body["error"]) == ("FAILED", "ExecutionAborted")
    replay = call("POST", "/extractions", _request(ingested_contract), {"Idempotency-Key": "stop-me"})
    assert _body(replay)["status"] == "FAILED"


# ------------------------------------------------------------------ issue 26: tenancy of run ids


def _as(caller: str) -> dict[str, Any]:
    """A request context whose IAM identity is ``caller`` (merged by :func:`call_as`)."""
    return {"userArn": caller}


def test_run_ids_are_scoped_by_caller_and_another_callers_run_reads_404(
    sfn: StateMachine, ingested_contract: DocumentRecord,  # noqa: F811
) -> None:
    handler = load_handler("api").handler

    def call_as(caller: str, method: str, path: str, body: Any = None, key: str | None = None,
                run_id: str | None = None) -> dict[str, Any]:
        name = "api-post-extractions.json" if method == "POST" else "api-get-extraction.json"
        event = json.loads((REPO / "events" / name).read_text())
        headers = {k: v for k, v in event["headers"].items() if k != "Idempotency-Key"}
        if key:
            headers["Idempotency-Key"] = key
        event.update(path=path, httpMethod=method, headers=headers, multiValueHeaders={k: [v] for k, v in headers.items()},
                     body=None if body is None else json.dumps(body),
                     pathParameters={"run_id": run_id} if run_id else None,
                     resource="/extractions/{id}" if run_id else path)
        event["requestContext"]["identity"].update(_as(caller))
        return handler(event, LocalContext(function_name="longdoc-dev-ApiFunction"))

    alice, bob = "arn:aws:iam::123456789012:user/alice", "arn:aws:iam::123456789012:user/bob"
    # Given two callers posting the same body under the same Idempotency-Key
    a = _body(call_as(alice, "POST", "/extractions", _request(ingested_contract), key="same-key"))
    b = _body(call_as(bob, "POST", "/extractions", _request(ingested_contract), key="same-key"))
    # Then they get two runs (sha256(caller + key)), each started once
    assert a["run_id"] != b["run_id"] and len(sfn.executions()) == 2
    # And each reads its own run, while the other's is answered 404 like an unknown id
    mine = call_as(alice, "GET", f"/extractions/{a['run_id']}", run_id=a["run_id"])
    theirs = call_as(alice, "GET", f"/extractions/{b['run_id']}", run_id=b["run_id"])
    assert mine["statusCode"] == 200 and _body(mine)["run_id"] == a["run_id"]
    assert theirs["statusCode"] == 404 and "not found" in _body(theirs)["message"]
