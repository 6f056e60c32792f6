"""The extract Lambda handler in-process, in AWS mode (moto S3 + DynamoDB, offline baseline model).

Each call is one state machine task: ``{"action": "session", ...}`` runs one model session
and returns the small payload that travels between states; ``{"action": "fail", ...}``
records a caught error. The document is a real CUAD contract ingested in the fixture.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from longdoc import wiring
from longdoc.adapters.baseline import BASELINE_NAME
from longdoc.extract.catalogue import load_catalogue
from longdoc.extract.runs import start_run
from longdoc.core.errors import ExtractionFailed, IterationCapReached, NotFound
from longdoc.core.models import DocumentRecord
from longdoc.core.records import RunRecord
from longdoc.observability import metrics

# Known noise: handlers that publish no metric on a path make Powertools warn "No application metrics".
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

CLAUSES = ["Governing Law", "Termination For Convenience", "Cap On Liability", "Insurance"]
PAYLOAD_KEYS = {"run_id", "doc_id", "iteration", "max_iterations", "status", "stop_reason", "sessions",
                "checkpoint_version", "extracted", "pending", "execution_iterations", "iterations_per_execution",
                "generation", "next_execution", "cut_blocks"}
SMALL_MAX_TOKENS = 150  # room for one cited extraction per model call, not for all four answers


def new_run(doc: DocumentRecord, max_tokens: int = 4096) -> RunRecord:
    """Start a run over ``doc`` for :data:`CLAUSES` the way the API does."""
    return start_run(wiring.state_store(), load_catalogue(), doc_id=doc.doc_id, clause_types=CLAUSES,
                     model_name=BASELINE_NAME, max_tokens=max_tokens, top_k=5)


def session_event(load_event, run: RunRecord, iteration: int = 0, max_iterations: int = 10) -> dict[str, Any]:
    """The Step Functions task input (events/sfn-extract-input.json) for ``run``."""
    event = load_event("sfn-extract-input.json")
    event.update(run_id=run.run_id, doc_id=run.doc_id, iteration=iteration, max_iterations=max_iterations)
    return event


class CountingModel:
    """Wraps a model and counts its calls."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.name = inner.name
        self.calls = 0

    def create(self, request):  # type: ignore[no-untyped-def]
        """Count, then delegate."""
        self.calls += 1
        return self.inner.create(request)


class CheckpointlessState:
    """A state store whose checkpoint saves are lost (``crash=False``) or crash (``crash=True``).

    Every other call goes to the real store, so extractions written during the session persist:
    the situation of an invocation that is re-run from the previous checkpoint.
    """

    def __init__(self, inner: Any, crash: bool):
        self.inner = inner
        self.crash = crash

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def save_checkpoint(self, checkpoint, fence=None):  # type: ignore[no-untyped-def]
        """Drop the save, or raise as a Lambda killed mid-invocation would."""
        if self.crash:
            raise TimeoutError("Task timed out after 900.00 seconds")


def test_session_returns_the_small_documented_payload(
    aws_stack, ingested_contract: DocumentRecord, extract_handler, extract_context, load_event, emf_documents,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given an ingested contract and a new run for four clause types, with metrics on
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "longdoc")
    metrics.clear_metrics()  # Powertools keeps values buffered while metrics are disabled (e.g. by the CLI)
    run = new_run(ingested_contract)

    # When the state machine's first task invokes the handler
    out = extract_handler(session_event(load_event, run), extract_context)

    # Then it returns exactly the documented keys, small enough for any state payload
    assert set(out) == PAYLOAD_KEYS
    assert len(json.dumps(out).encode("utf-8")) < 1024
    assert out["status"] in ("CONTINUE", "DONE")
    assert (out["run_id"], out["doc_id"]) == (run.run_id, ingested_contract.doc_id)
    assert (out["iteration"], out["max_iterations"]) == (1, 10)
    assert (out["sessions"], out["checkpoint_version"]) == (1, 1)
    # And the counters match what the stores hold
    extractions = wiring.state_store().list_extractions(run.run_id)
    assert out["extracted"] == sum(1 for e in extractions if e.status == "found")
    assert out["pending"] == len(CLAUSES) - len(extractions)
    if out["status"] == "DONE":
        assert out["pending"] == 0
        assert wiring.state_store().get_run(run.run_id).status == "SUCCEEDED"
    # And the found clause is cited from the contract with a verbatim quote
    governing = next(e for e in extractions if e.clause_type == "Governing Law")
    assert governing.status == "found"
    assert governing.model == BASELINE_NAME
    assert governing.citations[0].chunk_id.startswith(f"{ingested_contract.doc_id}:")
    assert "governed" in governing.citations[0].quote.lower()
    # And a Sessions metric is emitted
    names = {m["Name"] for doc in emf_documents(capsys.readouterr().out)
             for d in doc["_aws"]["CloudWatchMetrics"] for m in d["Metrics"]}
    assert "Sessions" in names


def test_max_tokens_continues_and_the_next_call_resumes(
    aws_stack, ingested_contract: DocumentRecord, extract_handler, extract_context, load_event
) -> None:
    # Given a run whose output budget per model call is too small to answer everything
    run = new_run(ingested_contract, max_tokens=SMALL_MAX_TOKENS)

    # When the first session runs
    first = extract_handler(session_event(load_event, run), extract_context)

    # Then it stops on max_tokens and asks to continue, with a checkpoint saved
    assert (first["status"], first["stop_reason"]) == ("CONTINUE", "max_tokens")
    assert (first["sessions"], first["checkpoint_version"], first["iteration"]) == (1, 1, 1)
    assert 0 < first["pending"] < len(CLAUSES)
    assert wiring.state_store().get_run(run.run_id).status == "RUNNING"

    # When the state machine loops with the returned state until DONE
    outputs = [first]
    state = first
    while state["status"] == "CONTINUE" and len(outputs) < 10:
        event = session_event(load_event, run, iteration=state["iteration"], max_iterations=state["max_iterations"])
        state = extract_handler(event, extract_context)
        outputs.append(state)

    # Then every call is a new session on the next checkpoint, and each one makes progress
    assert state["status"] == "DONE"
    assert len(outputs) >= 2
    for n, out in enumerate(outputs, 1):
        assert (out["sessions"], out["checkpoint_version"], out["iteration"]) == (n, n, n)
    pending = [out["pending"] for out in outputs]
    assert pending == sorted(pending, reverse=True) and pending[-1] == 0
    assert len(set(pending)) == len(pending)
    # And every clause type is answered exactly once
    extractions = wiring.state_store().list_extractions(run.run_id)
    assert sorted(e.clause_type for e in extractions) == sorted(CLAUSES)
    checkpoint = wiring.state_store().load_checkpoint(run.run_id)
    assert checkpoint.version == checkpoint.sessions == len(outputs)
    assert wiring.state_store().get_run(run.run_id).status == "SUCCEEDED"


def test_rerun_from_the_same_checkpoint_never_duplicates(
    aws_stack, ingested_contract: DocumentRecord, extract_handler, extract_context, load_event,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a run whose checkpoint saves are lost, so two invocations start from the same state
    run = new_run(ingested_contract)
    real_state = wiring.state_store()
    model = CountingModel(wiring.model())
    monkeypatch.setattr(wiring, "state_store", lambda: CheckpointlessState(real_state, crash=False))
    monkeypatch.setattr(wiring, "model", lambda: model)
    event = session_event(load_event, run)

    # When the same task input is invoked twice
    first = extract_handler(event, extract_context)
    calls_after_first = model.calls
    second = extract_handler(event, extract_context)

    # Then the second invocation finds the stored answers and asks the model nothing
    assert real_state.load_checkpoint(run.run_id) is None
    assert first["status"] == second["status"] == "DONE"
    assert model.calls == calls_after_first
    assert (second["extracted"], second["pending"]) == (first["extracted"], 0)
    # And there is exactly one extraction per clause type, still the first session's
    extractions = real_state.list_extractions(run.run_id)
    assert len(extractions) == len({e.clause_type for e in extractions}) == len(CLAUSES)
    assert {e.clause_type for e in extractions} == set(CLAUSES)
    assert {e.session for e in extractions} == {1}


def test_retry_after_a_crash_mid_session_never_duplicates(
    aws_stack, ingested_contract: DocumentRecord, extract_handler, extract_context, load_event,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a session that stores an extraction and then dies before saving its checkpoint
    run = new_run(ingested_contract, max_tokens=SMALL_MAX_TOKENS)
    real_state = wiring.state_store()
    event = session_event(load_event, run)
    monkeypatch.setattr(wiring, "state_store", lambda: CheckpointlessState(real_state, crash=True))
    with pytest.raises(TimeoutError):
        extract_handler(event, extract_context)
    stored = real_state.list_extractions(run.run_id)
    assert len(stored) == 1 and real_state.load_checkpoint(run.run_id) is None

    # When Step Functions retries the same input and the loop runs to the end
    monkeypatch.setattr(wiring, "state_store", lambda: real_state)
    state = extract_handler(event, extract_context)
    for _ in range(10):
        if state["status"] != "CONTINUE":
            break
        state = extract_handler(session_event(load_event, run, iteration=state["iteration"]), extract_context)

    # Then the run finishes with one extraction per clause type, the first one kept as written
    assert state["status"] == "DONE"
    extractions = real_state.list_extractions(run.run_id)
    assert sorted(e.clause_type for e in extractions) == sorted(CLAUSES)
    assert extractions[0] == stored[0]


def test_fail_action_records_the_failure_then_fails_and_a_redrive_resumes(
    aws_stack, ingested_contract: DocumentRecord, extract_handler, extract_context, load_event
) -> None:
    # Given a run with one session done (so a checkpoint exists)
    run = new_run(ingested_contract, max_tokens=SMALL_MAX_TOKENS)
    extract_handler(session_event(load_event, run), extract_context)
    before = wiring.state_store().load_checkpoint(run.run_id)
    assert before is not None and before.expires_at is None

    # When the state machine's Catch sends the failure to the handler
    event = {"action": "fail", "run_id": run.run_id, "doc_id": run.doc_id, "iteration": 1,
             "max_iterations": 10, "error": {"Error": "X", "Cause": "Y"}, "entered": "2026-11-29T10:00:00.000Z"}
    with pytest.raises(ExtractionFailed) as raised:
        extract_handler(event, extract_context)

    # Then it fails there with ExtractionFailed naming the original error
    assert str(raised.value) == "X: Y"
    # And the run is FAILED with the error, cause and last checkpoint version
    failed = wiring.state_store().get_run(run.run_id)
    assert (failed.status, failed.error, failed.cause) == ("FAILED", "X", "Y")
    after = wiring.state_store().load_checkpoint(run.run_id)
    assert failed.checkpoint_version == after.version == before.version + 1
    # And the checkpoint content is kept, now expiring 30 days after the run ended
    assert after.case_facts == before.case_facts and after.sessions == before.sessions
    assert after.expires_at is not None and after.expires_at - time.time() > 29 * 86_400

    # When Step Functions retries the same state entry, it fails again (no resume)
    with pytest.raises(ExtractionFailed):
        extract_handler(event, extract_context)
    # When a redrive re-enters the state (same input, new EnteredTime)
    out = extract_handler({**event, "entered": "2026-11-30T08:00:00.000Z"}, extract_context)
    # Then the run resumes: RUNNING again, CONTINUE with a fresh iteration budget
    assert set(out) == PAYLOAD_KEYS
    assert (out["status"], out["iteration"], out["stop_reason"]) == ("CONTINUE", 0, "redrive")
    assert wiring.state_store().get_run(run.run_id).status == "RUNNING"


def test_iteration_cap_failure_is_raised_under_its_own_name(
    aws_stack, ingested_contract: DocumentRecord, extract_handler, extract_context
) -> None:
    # Given a run; When the Catch path reports IterationCapReached
    run = new_run(ingested_contract)
    event = {"action": "fail", "run_id": run.run_id, "doc_id": run.doc_id, "iteration": 3, "max_iterations": 3,
             "error": {"Error": "IterationCapReached", "Cause": "cap"}, "entered": "t1"}
    # Then the task fails with IterationCapReached (the execution's error name)
    with pytest.raises(IterationCapReached):
        extract_handler(event, extract_context)
    assert wiring.state_store().get_run(run.run_id).error == "IterationCapReached"


@pytest.mark.parametrize("action", ["session", "fail"])
def test_unknown_run_raises_not_found(
    aws_stack, extract_handler, extract_context, load_event, action: str
) -> None:
    # Given a task input naming a run that does not exist
    event = load_event("sfn-extract-input.json")
    event.update(action=action, run_id="run-doesnotexist")
    if action == "fail":
        event["error"] = {"Error": "X", "Cause": "Y"}

    # When the handler runs
    with pytest.raises(NotFound) as raised:
        extract_handler(event, extract_context)

    # Then the error's class name (Lambda's errorType, what Step Functions matches) is NotFound
    assert type(raised.value).__name__ == "NotFound"
    assert "run-doesnotexist" in str(raised.value)


def test_a_run_that_ends_is_snapshotted_into_the_review_queue(
    aws_stack, ingested_contract: DocumentRecord, extract_handler, extract_context, load_event,
) -> None:
    # Given a run over the contract, driven by the handler until the session says DONE
    run = new_run(ingested_contract)
    out: dict[str, Any] = {"status": "CONTINUE"}
    iteration = 0
    while out["status"] == "CONTINUE" and iteration < 10:
        out = extract_handler(session_event(load_event, run, iteration=iteration), extract_context)
        iteration = out["iteration"]
    assert out["status"] == "DONE"
    # When the review store is read directly (nobody has opened the run through GET /reviews)
    stored = wiring.decision_store().list_items(run.run_id)
    # Then the run's answers are already items there, one per extraction, with their confidence
    extractions = wiring.state_store().list_extractions(run.run_id)
    assert sorted(i.clause_type for i in stored) == sorted(e.clause_type for e in extractions)
    assert all(0.0 <= i.confidence <= 1.0 for i in stored)
    assert {i.run_id for i in stored} == {run.run_id}
