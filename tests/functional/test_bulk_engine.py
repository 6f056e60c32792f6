"""A bulk job through the local engine: the real ``statemachine/bulk.asl.json``, the real bulk
handler (``functions/bulk/app.py``), :class:`~longdoc.adapters.batches.LocalBatches` answering
from the offline baseline, the DynamoDB bulk store and S3 on moto (``aws_stack``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longdoc import wiring
from longdoc.bulk.plan import ROUNDS_PER_EXECUTION
from longdoc.bulk.runs import Selection, Stores, bulk_status, execution_input, start_bulk
from longdoc.extract.catalogue import load_catalogue
from longdoc.extract.runs import start_run
from longdoc.extract.session import run_session
from longdoc.local.engine import LocalStepFunctions

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

REPO = Path(__file__).resolve().parents[2]
TYPES = ["Governing Law", "Insurance", "Audit Rights", "Anti-Assignment", "Agreement Date", "Expiration Date"]
BASELINE = "offline-extractive-baseline-v1"




def _found(state, run_id: str) -> list[tuple[str, str, str]]:
    return sorted((e.clause_type, e.status, e.citations[0].quote if e.citations else "")
                  for e in state.list_extractions(run_id))


def test_a_bulk_job_through_the_local_engine_matches_the_sync_path(aws_stack, ingested_contract, bulk_app) -> None:
    # Given two runs of the contract (one with a 64-token cap, so it needs several rounds) in one job
    deps = wiring.bulk_deps()
    selection = Selection(doc_ids=[ingested_contract.doc_id, ingested_contract.doc_id + "-missing"])
    accepted = start_bulk(Stores.of(deps), load_catalogue(), "bulk-e1", selection, clause_types=TYPES, model_name=BASELINE,
                          max_tokens=64, top_k=4)
    assert accepted.doc_ids == [ingested_contract.doc_id]
    assert [r.where for r in accepted.rejected] == [ingested_contract.doc_id + "-missing"]
    # When the real state machine runs it with the real handler
    with LocalStepFunctions(REPO / "statemachine" / "bulk.asl.json", {"BulkFunctionArn": bulk_app.handler}) as sfn:
        execution = sfn.wait(sfn.start_execution("bulk-e1", execution_input("bulk-e1")), timeout_seconds=300)
    # Then it succeeded, every document is done, in several rounds, with a bounded history
    assert execution.status == "SUCCEEDED", (execution.error, execution.cause)
    assert execution.output is not None and execution.output["done"] == 1 and execution.output["pending"] == 0
    status = bulk_status(Stores.of(deps), "bulk-e1")
    assert status["status"] == "SUCCEEDED" and status["rounds"] >= 3
    entered = [e for e in execution.history if e["type"].endswith("StateEntered")]
    # per round: Prepare, PrepareSlices, PrepareSlice (one slice), Prepared, HasRequests, Prime, Primed
    # (the offline baseline's rounds are not primed), Submit, Wait, Poll, Ended, Harvest, NextRound
    # (+ Finish, JobStatus, Done; ContinueAsNew, ContinuedAsNew every ROUNDS_PER_EXECUTION rounds, issue 26)
    assert len(entered) <= 13 * (status["rounds"] + 1) + 3 + 2 * len(execution.executions)
    assert len(execution.history) < 50 * (status["rounds"] + 1)
    assert len(execution.executions) == -(-status["rounds"] // ROUNDS_PER_EXECUTION)
    # And every state payload carries ids and counters only
    for event in entered:
        assert len(event["stateEnteredEventDetails"]["input"]) < 400
    # And the extractions equal those of the synchronous session loop over the same document
    state = deps.extract.state
    sync = start_run(state, load_catalogue(), doc_id=ingested_contract.doc_id, clause_types=TYPES, model_name=BASELINE,
                     max_tokens=64, top_k=4, run_id="run-sync")
    while run_session(deps.extract, sync.run_id).status != "DONE":
        pass
    run_id = status["documents"][0]["run_id"]
    assert _found(state, run_id) == _found(state, sync.run_id) and _found(state, run_id)
    # And the results are in the bucket: one JSON per document (extract --json's shape) and a JSONL summary
    blobs = wiring.blob_store()
    result = json.loads(blobs.get(f"results/bulk-e1/{run_id}.json"))
    assert result["run_id"] == run_id and result["status"] == "SUCCEEDED" and len(result["extractions"]) == len(TYPES)
    summary = [json.loads(line) for line in blobs.get("results/bulk-e1/summary.jsonl").decode().splitlines()]
    assert [(s["run_id"], s["status"]) for s in summary] == [(run_id, "SUCCEEDED")]


def test_a_failed_step_fails_the_execution_and_a_redrive_finishes_the_job(aws_stack, ingested_contract, bulk_app,
                                                                         monkeypatch) -> None:
    # Given a job whose first Harvest dies (after its Lambda retries) with an error of its own
    from longdoc.bulk import steps

    deps = wiring.bulk_deps()
    start_bulk(Stores.of(deps), load_catalogue(), "bulk-e2", Selection(doc_ids=[ingested_contract.doc_id]),
               clause_types=TYPES, model_name=BASELINE, max_tokens=4096, top_k=4)
    real, calls = steps.harvest, []

    def harvest_once_broken(*args):
        calls.append(args[2])
        if len(calls) == 1:
            raise RuntimeError("results endpoint unavailable")
        return real(*args)

    monkeypatch.setattr(steps, "harvest", harvest_once_broken)
    with LocalStepFunctions(REPO / "statemachine" / "bulk.asl.json", {"BulkFunctionArn": bulk_app.handler}) as sfn:
        failed = sfn.wait(sfn.start_execution("bulk-e2", execution_input("bulk-e2")), timeout_seconds=300)
        # Then the execution fails in RecordFailure, and the job reads FAILED with the error
        assert failed.status == "FAILED" and failed.error == "BulkFailed"
        assert "results endpoint unavailable" in (failed.cause or "")
        status = bulk_status(Stores.of(deps), "bulk-e2")
        assert status["status"] == "FAILED" and status["failure"]["error"] == "RuntimeError"
        # When it is redriven (RecordFailure entered again)
        redriven = sfn.wait(sfn.redrive(failed.execution_arn), timeout_seconds=300)
    # Then the round goes on from Prepare (nothing prepared or submitted twice) and the job succeeds
    assert redriven.status == "SUCCEEDED", (redriven.error, redriven.cause)
    status = bulk_status(Stores.of(deps), "bulk-e2")
    assert status["status"] == "SUCCEEDED" and status["failure"] is None and status["done"] == 1
    assert calls[:2] == [0, 0]  # round 0 harvested on the redrive
    assert len(list((aws_stack.home / "batches").glob("*.jsonl"))) == status["rounds"]  # one batch per round
    assert len(deps.extract.state.list_extractions(status["documents"][0]["run_id"])) == len(TYPES)
