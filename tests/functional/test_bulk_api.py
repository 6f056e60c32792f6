"""``POST /bulk-extractions`` and ``GET /bulk-extractions/{id}`` in the API handler, AWS mode (moto).

The API starts executions of a moto state machine built from ``statemachine/bulk.asl.json``
(moto records them without running them); the rounds are then run in-process with the bulk
function's adapters (:func:`longdoc.bulk.driver.run_rounds`, local batches from the baseline).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
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
    definition = definition.replace("${Partition}", "aws")
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


def call(method: str, path: str, body: Any = None, key: str | None = None, bulk_id: str | None = None,
         caller: str | None = None, query: dict[str, str] | None = None) -> tuple[int, Any]:
    """Send an API Gateway REST event (built from events/api-*.json) to the API handler, as ``caller``
    (an IAM user ARN in the request context; None keeps the event's)."""
    name = "api-post-extractions.json" if method == "POST" else "api-get-extraction.json"
    event = json.loads((REPO / "events" / name).read_text())
    headers = {k: v for k, v in event["headers"].items() if k != "Idempotency-Key"}
    if key:
        headers["Idempotency-Key"] = key
    resource = "/bulk-extractions/{bulk_id}" if bulk_id else path
    event.update(path=path, httpMethod=method, resource=resource, headers=headers,
                 pathParameters={"bulk_id": bulk_id} if bulk_id else None,
                 queryStringParameters=query, multiValueQueryStringParameters={k: [v] for k, v in (query or {}).items()},
                 multiValueHeaders={k: [v] for k, v in headers.items()},
                 body=None if body is None else json.dumps(body))
    event["requestContext"].update(path=f"/dev{path}", resourcePath=resource, httpMethod=method)
    if caller is not None:
        event["requestContext"]["identity"]["userArn"] = caller
    response = load_handler("api").handler(event, LocalContext(function_name="longdoc-dev-ApiFunction"))
    return response["statusCode"], json.loads(response["body"]) if response.get("body") else None


def bulk_step(action: str, bulk_id: str, round_number: int = 0) -> Any:
    """One state of the bulk machine through the bulk function's handler (as Step Functions invokes it)."""
    return load_handler("bulk").handler({"action": action, "bulk_id": bulk_id, "round": round_number},
                                        LocalContext(function_name="longdoc-dev-BulkFunction"))


def test_post_stores_the_request_and_the_machine_creates_the_runs_reported_by_get(aws_stack, ingested_contract,
                                                                                 machine) -> None:
    client, arn = machine
    body = {"clause_types": TYPES, "doc_ids": [ingested_contract.doc_id, "no-such-doc"]}
    # When a bulk job is posted with an Idempotency-Key, then posted again
    status, started = call("POST", "/bulk-extractions", body, key="backfill-1")
    again_status, again = call("POST", "/bulk-extractions", body, key="backfill-1")
    # Then one job, CREATING (the API only stored the request), one execution named after it
    assert status == again_status == 202 and started == again
    assert (started["status"], started["requested"]) == ("CREATING", 2)
    [execution] = client.list_executions(stateMachineArn=arn)["executions"]
    assert execution["name"] == started["bulk_id"]
    assert json.loads(client.describe_execution(executionArn=execution["executionArn"])["input"]) == {
        "bulk_id": started["bulk_id"], "round": 0}
    # And the same key with another body is refused, starting nothing
    status, refused = call("POST", "/bulk-extractions", {**body, "clause_types": ["Insurance"]}, key="backfill-1")
    assert status == 422 and refused["field"] == "Idempotency-Key"
    assert len(client.list_executions(stateMachineArn=arn)["executions"]) == 1
    # And before CreateRuns ran, GET says CREATING with no documents
    status, view = call("GET", f"/bulk-extractions/{started['bulk_id']}", bulk_id=started["bulk_id"])
    assert status == 200 and (view["status"], view["documents"]) == ("CREATING", [])
    # When the machine's first state runs
    assert bulk_step("create_runs", started["bulk_id"]) == {"bulk_id": started["bulk_id"], "round": 0}
    # Then GET reports the one READY document pending and the unknown id rejected, with its reason
    status, view = call("GET", f"/bulk-extractions/{started['bulk_id']}", bulk_id=started["bulk_id"])
    assert status == 200 and (view["pending"], view["done"], view["status"], view["runs"]) == (1, 0, "RUNNING", 1)
    assert [r["where"] for r in view["rejected"]] == ["no-such-doc"] and "not ingested" in view["rejected"][0]["reason"]
    # When the rounds run and Finish records the counters on the job
    out = run_rounds(wiring.bulk_deps(), started["bulk_id"], sleep=lambda s: None)
    bulk_step("finish", started["bulk_id"], out["round"])
    # Then GET reads them from the job item and lists the document done
    status, view = call("GET", f"/bulk-extractions/{started['bulk_id']}", bulk_id=started["bulk_id"])
    assert status == 200 and (view["pending"], view["done"], view["failed"], view["status"]) == (0, 1, 0, "SUCCEEDED")
    [doc] = view["documents"]
    assert (doc["doc_id"], doc["status"]) == (ingested_contract.doc_id, "SUCCEEDED")
    assert view["results"] == f"results/{started['bulk_id']}/summary.jsonl" and view["next_token"] is None


def test_one_running_bulk_job_by_default_then_jobs_are_scoped_by_caller(aws_stack, ingested_contract, machine,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # Given two IAM callers using the same Idempotency-Key and body
    body = {"clause_types": TYPES, "doc_ids": [ingested_contract.doc_id]}
    alice, bob = "arn:aws:iam::123456789012:user/alice", "arn:aws:iam::123456789012:user/bob"
    _, a = call("POST", "/bulk-extractions", body, key="k-1", caller=alice)
    # When the second posts while the first job's execution runs (default: one running bulk job)
    status, refused = call("POST", "/bulk-extractions", body, key="k-1", caller=bob)
    # Then it is refused with 429 and nothing is stored for it; the first caller's retry still gets 202
    assert status == 429 and refused["retry_after_seconds"] == 60 and "1 bulk jobs are running" in refused["message"]
    assert call("POST", "/bulk-extractions", body, key="k-1", caller=alice) == (202, a)
    # When the cap is raised and the second caller posts again
    monkeypatch.setenv("LONGDOC_MAX_RUNNING_BULK_JOBS", "5")
    function_settings.cache_clear()
    status, b = call("POST", "/bulk-extractions", body, key="k-1", caller=bob)
    # Then each gets a job of its own (sha256(caller + key)), not the other's
    assert status == 202 and a["bulk_id"] != b["bulk_id"]
    # And a caller reading the other's job is answered 404, the owner 200
    status, answer = call("GET", f"/bulk-extractions/{a['bulk_id']}", bulk_id=a["bulk_id"], caller=bob)
    assert status == 404 and "not found" in answer["message"]
    assert call("GET", f"/bulk-extractions/{a['bulk_id']}", bulk_id=a["bulk_id"], caller=alice)[0] == 200


def test_bad_bodies_and_unknown_jobs(aws_stack, machine) -> None:
    status, _ = call("POST", "/bulk-extractions", {"clause_types": TYPES, "doc_ids": []})
    assert status == 400
    # per-item bounds: an id with a space or over 200 characters, a clause type over 128, too many types
    for bad in ({"clause_types": TYPES, "doc_ids": ["has space"]}, {"clause_types": TYPES, "doc_ids": ["a" * 201]},
                {"clause_types": ["x" * 129], "doc_ids": ["a"]}, {"clause_types": ["Insurance"] * 65, "doc_ids": ["a"]}):
        status, answer = call("POST", "/bulk-extractions", bad)
        assert status == 400 and answer["message"] == "invalid request", bad
    status, answer = call("GET", "/bulk-extractions/bulk-nope", bulk_id="bulk-nope")
    assert status == 404 and "not found" in answer["message"]
    # an unknown field (a misspelt option) is refused, naming the field
    status, answer = call("POST", "/bulk-extractions", {"clause_types": TYPES, "doc_ids": ["a"], "max_token": 100})
    assert status == 400 and "max_token" in json.dumps(answer), answer


def test_a_job_with_no_ready_document_fails_in_create_runs_with_its_rejections(aws_stack, machine) -> None:
    # Given a job whose only document does not exist
    _, started = call("POST", "/bulk-extractions", {"clause_types": TYPES, "doc_ids": ["nope"]})
    # When CreateRuns runs, it commits the job with zero runs and fails (the machine's Catch records it)
    from longdoc.core.errors import NoDocumentAccepted

    with pytest.raises(NoDocumentAccepted, match="no document to run"):
        bulk_step("create_runs", started["bulk_id"])
    status, view = call("GET", f"/bulk-extractions/{started['bulk_id']}", bulk_id=started["bulk_id"])
    assert status == 200 and view["runs"] == 0 and [r["where"] for r in view["rejected"]] == ["nope"]


class LocalBulkStarter:
    """A local bulk starter that records what it was asked to start (nothing runs) and probes liveness
    by the worker's pid file, as :class:`longdoc.local.server.MachineStarter` does."""

    def __init__(self, home: Path) -> None:
        self.home, self.started = home, []  # type: ignore[var-annotated]

    def start_execution(self, name: str, execution_input: dict[str, Any]) -> str:
        if any(n == name for n, _ in self.started):
            from longdoc.core.errors import ExecutionAlreadyExists

            raise ExecutionAlreadyExists(name)
        self.started.append((name, execution_input))
        return f"arn:aws:states:us-east-1:{ACCOUNT}:execution:longdoc-local-bulk:{name}"

    def execution_gone(self, execution: str) -> bool:
        from longdoc.local.server import execution_worker_gone

        return execution_worker_gone(self.home, "bulk", execution)


def _dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_local_bulk_job_whose_worker_died_is_stale_and_the_same_post_restarts_it(
        aws_stack, ingested_contract, machine) -> None:
    import subprocess
    import sys

    from longdoc.config import get_settings
    from longdoc.core.errors import LongdocError
    from longdoc.local.console import check_resumable
    from longdoc.local.server import pid_file

    home = Path(get_settings().home)
    starter = LocalBulkStarter(home)
    body = {"clause_types": TYPES, "doc_ids": [ingested_contract.doc_id]}
    with wiring.overrides(starters={"bulk": starter}):
        # Given a local bulk job whose runs were created, its worker's pid recorded
        _, started = call("POST", "/bulk-extractions", body, key="local-1")
        bulk_id = started["bulk_id"]
        bulk_step("create_runs", bulk_id)
        # When the same request is posted again while it runs
        status, again = call("POST", "/bulk-extractions", body, key="local-1")
        # Then the answer is the job's real status, not CREATING, and nothing new starts
        assert status == 202 and again["status"] == "RUNNING" and "restarted" not in again
        assert [n for n, _ in starter.started] == [bulk_id]
        # When its worker dies (kill -9: the pid runs no more)
        pid_file(home, "bulk", bulk_id).parent.mkdir(parents=True, exist_ok=True)
        pid_file(home, "bulk", bulk_id).write_text(str(_dead_pid()))
        # Then GET says STALE and how to restart it
        _, view = call("GET", f"/bulk-extractions/{bulk_id}", bulk_id=bulk_id)
        assert view["status"] == "STALE" and "POST the same request again" in view["next"]
        # When the same request is posted again
        status, restarted = call("POST", "/bulk-extractions", body, key="local-1")
        # Then a new execution continues the job from its stores (round 0: none prepared yet)
        assert status == 202 and restarted["restarted"] is True and restarted["status"] == "RUNNING"
        assert starter.started[-1] == (f"{bulk_id}-s1", {"bulk_id": bulk_id, "round": 0})
        assert call("GET", f"/bulk-extractions/{bulk_id}", bulk_id=bulk_id)[1]["status"] == "RUNNING"
        # And while that execution's worker lives, `runs resume` of a member run is refused, naming the job
        member = f"{bulk_id}-00000"
        live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", f"{bulk_id}-s1"])
        try:
            pid_file(home, "bulk", f"{bulk_id}-s1").write_text(str(live.pid))
            with pytest.raises(LongdocError, match=f"belongs to bulk job {bulk_id}"):
                check_resumable(wiring.state_store(), member)
        finally:
            live.kill()
            live.wait()
        # And once it has died, the member run may be resumed by hand (it is no longer driven)
        assert check_resumable(wiring.state_store(), member).run_id == member
