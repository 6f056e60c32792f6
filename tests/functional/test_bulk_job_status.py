"""A bulk job's status tells the truth: ``SUCCEEDED`` only when every document is done, ``PARTIAL``
when some failed, ``FAILED`` when none is done, in the state machine's output and end state, the
CLI's status (:func:`longdoc.bulk.runs.bulk_status`) and the API's (:func:`longdoc.bulk.intake.bulk_page`).
The real ``statemachine/bulk.asl.json`` and bulk handler run in the local engine; local batches
answer from the offline baseline, with ``invalid_request_error`` results injected for chosen runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from longdoc import wiring
from longdoc.adapters.baseline import OfflineBaselineModel
from longdoc.adapters.batches import LocalBatches
from longdoc.bulk.intake import bulk_page, record_counts
from longdoc.bulk.ports import BatchResult
from longdoc.bulk.runs import Selection, Stores, bulk_status, execution_input, start_bulk, write_results
from longdoc.extract.catalogue import load_catalogue
from longdoc.local.engine import LocalStepFunctions
from longdoc.local.lambda_runtime import load_handler

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

REPO = Path(__file__).resolve().parents[2]
TYPES = ["Governing Law", "Anti-Assignment"]


def _failing(prefixes: tuple[str, ...]):
    """A batches outcome hook: an ``invalid_request_error`` for requests of runs named by ``prefixes``."""
    def outcome(custom_id: str) -> BatchResult | None:
        if custom_id.startswith(prefixes):
            return BatchResult(custom_id, "errored", error_type="invalid_request_error",
                               error_message="injected: the request was invalid")
        return None
    return outcome


def _run_job(aws_stack, monkeypatch, doc_id: str, bulk_id: str, failing: tuple[str, ...]):
    monkeypatch.setenv("LONGDOC_BULK_POLL_FIRST", "0")
    monkeypatch.setenv("LONGDOC_BULK_POLL_CAP", "0")
    root = aws_stack.home / "batches"
    monkeypatch.setattr(wiring, "batch_client",
                        lambda model: LocalBatches(OfflineBaselineModel(), root, outcome=_failing(failing)))
    wiring.bulk_deps.cache_clear()
    app = load_handler("bulk")
    deps = wiring.bulk_deps()
    start_bulk(Stores.of(deps), load_catalogue(), bulk_id, Selection(doc_ids=[doc_id, doc_id]), clause_types=TYPES,
               model_name="offline-extractive-baseline-v1", max_tokens=4096, top_k=4)
    with LocalStepFunctions(REPO / "statemachine" / "bulk.asl.json", {"BulkFunctionArn": app.handler}) as sfn:
        execution = sfn.wait(sfn.start_execution(bulk_id, execution_input(bulk_id)), timeout_seconds=300)
    return deps, execution


def test_a_job_with_one_failed_document_of_two_is_partial_everywhere(aws_stack, ingested_contract, monkeypatch) -> None:
    # Given a job of two runs whose second run's request is refused as invalid
    deps, execution = _run_job(aws_stack, monkeypatch, ingested_contract.doc_id, "bulk-p", ("bulk-p-00001",))
    # Then the execution ends in DonePartial, its output saying PARTIAL and why
    assert execution.status == "SUCCEEDED", (execution.error, execution.cause)
    assert execution.output is not None
    assert (execution.output["status"], execution.output["done"], execution.output["failed"]) == ("PARTIAL", 1, 1)
    assert execution.output["reason"].startswith("1 of 2 documents failed (1 done)")
    ended = [e for e in execution.history if e["type"] == "SucceedStateEntered"]
    assert ended[-1]["stateEnteredEventDetails"]["name"] == "DonePartial"
    # And the CLI's status and the API's page say PARTIAL, naming the failed document's error
    status = bulk_status(Stores.of(deps), "bulk-p")
    assert (status["status"], status["done"], status["failed"], status["pending"]) == ("PARTIAL", 1, 1, 0)
    assert status["reason"] == execution.output["reason"]
    assert [d["error"] for d in status["documents"]] == [None, "InvalidRequest"]
    page = bulk_page(Stores.of(deps), wiring.blob_store(), "bulk-p")
    assert (page["status"], page["done"], page["failed"]) == ("PARTIAL", 1, 1)
    assert page["reason"] == status["reason"]


def test_a_job_whose_every_document_failed_is_failed_everywhere(aws_stack, ingested_contract, monkeypatch) -> None:
    # Given a job of two runs whose every request is refused as invalid
    deps, execution = _run_job(aws_stack, monkeypatch, ingested_contract.doc_id, "bulk-f", ("bulk-f-",))
    # Then the execution fails in NoDocumentDone with BulkJobFailed and the counts as its cause
    assert (execution.status, execution.error) == ("FAILED", "BulkJobFailed")
    assert execution.cause is not None and execution.cause.startswith("2 of 2 documents failed (0 done)")
    # And the CLI's status and the API's page say FAILED (never SUCCEEDED with 0 done)
    status = bulk_status(Stores.of(deps), "bulk-f")
    assert (status["status"], status["done"], status["failed"]) == ("FAILED", 0, 2)
    assert status["reason"] == execution.cause and status["failure"] is None
    page = bulk_page(Stores.of(deps), wiring.blob_store(), "bulk-f")
    assert (page["status"], page["done"], page["failed"]) == ("FAILED", 0, 2)


def test_finish_output_and_job_item_follow_the_counts(aws_stack, ingested_contract, monkeypatch) -> None:
    # Given a finished job of two documents, both done
    deps, execution = _run_job(aws_stack, monkeypatch, ingested_contract.doc_id, "bulk-s", ())
    assert execution.status == "SUCCEEDED" and execution.output is not None
    assert (execution.output["status"], execution.output["reason"]) == ("SUCCEEDED", "")
    stores = Stores.of(deps)
    assert bulk_status(stores, "bulk-s")["status"] == bulk_page(stores, wiring.blob_store(), "bulk-s")["status"] == "SUCCEEDED"
    # When the job item's counts say one failed (as Finish keeps them), the API's page says PARTIAL
    out = write_results(stores, wiring.results_store(), "bulk-s")
    record_counts(stores, "bulk-s", {**out, "done": 1, "failed": 1}, 1, finished=True)
    assert bulk_page(stores, wiring.blob_store(), "bulk-s")["status"] == "PARTIAL"
