"""The one way a run starts (:func:`longdoc.extract.runs.start_extraction`), with a SQLite store and a fake starter.

The API, the CLI and the local engine all start runs through it; these tests pin its run
ids (the same request names the same run as before the service existed), its idempotency
rules, and the state machine input it builds (the same fields the ASL's continue-as-new writes).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from longdoc.adapters.state import SqliteStateStore
from longdoc.config import ExtractionSettings
from longdoc.core.errors import IdempotencyConflict, NotFound, UnknownClauseType
from longdoc.core.models import DocumentRecord
from longdoc.core.ports import ExecutionStarter
from longdoc.extract.catalogue import load_catalogue
from longdoc.extract.runs import RunRequest, start_extraction
from longdoc.extract.payloads import ExecutionInput, ExtractTaskInput, execution_name

REPO = Path(__file__).resolve().parents[3]
VERSION = "a" * 64


class RecordingStarter:
    """An :class:`ExecutionStarter` that records each start and answers a made-up ARN."""

    def __init__(self) -> None:
        self.started: list[tuple[str, dict[str, Any]]] = []

    def start_execution(self, name: str, execution_input: dict[str, Any]) -> str:
        """Record the start; return ``arn:local:<name>``."""
        self.started.append((name, execution_input))
        return f"arn:local:{name}"


@pytest.fixture
def state(tmp_path: Path) -> SqliteStateStore:
    """A state store holding one READY document, ``contract`` at :data:`VERSION`."""
    store = SqliteStateStore(tmp_path / "state.sqlite3")
    store.put_document(DocumentRecord(doc_id="contract", doc_version=VERSION, source="contract.pdf", status="READY",
                                      pages=3, chunks=4))
    return store


def start(state: SqliteStateStore, starter: RecordingStarter, request: RunRequest, **options: Any):
    """Start ``request`` with the default settings and the baseline's name."""
    return start_extraction(request, state=state, catalogue=load_catalogue(), settings=ExtractionSettings(),
                            starter=starter, model_name="offline-extractive-baseline-v1", **options)


REQUEST = RunRequest(doc_id="contract", clause_types=["Governing Law", "Cap On Liability"], facts={"fee": "$247.83"})


def test_the_port_is_satisfied_by_the_fake_and_by_both_real_starters() -> None:
    from longdoc.adapters.executions import StepFunctionsStarter
    from longdoc.local.engine import LocalStepFunctions

    assert isinstance(RecordingStarter(), ExecutionStarter)
    assert isinstance(StepFunctionsStarter("arn:aws:states:us-east-1:1:stateMachine:x"), ExecutionStarter)
    assert callable(LocalStepFunctions.start_execution)


def test_without_a_key_the_run_id_is_the_hash_of_the_request_and_its_ready_version(state) -> None:
    # Given a request without an Idempotency-Key
    starter = RecordingStarter()
    # When it starts
    run = start(state, starter, REQUEST)
    # Then the run id is the one the API always derived: SHA-256 of the request JSON @ READY version
    seed = REQUEST.model_dump_json() + "@" + VERSION
    assert run.run_id == "run-" + hashlib.sha256(seed.encode()).hexdigest()[:16]
    # And one execution named after the run starts with the first-execution input
    assert starter.started == [(run.run_id, {"run_id": run.run_id, "doc_id": "contract", "iteration": 0,
                                             "max_iterations": 40, "execution_iterations": 0,
                                             "iterations_per_execution": 500, "generation": 1})]
    assert (run.status, run.execution_arn, run.executions) == ("RUNNING", f"arn:local:{run.run_id}", [run.run_id])
    assert state.get_run(run.run_id) == run
    assert run.request_hash == hashlib.sha256(REQUEST.model_dump_json().encode()).hexdigest()


def test_a_key_names_the_run_and_a_retry_starts_nothing_new(state) -> None:
    starter = RecordingStarter()
    first = start(state, starter, REQUEST, idempotency_key="k-1")
    again = start(state, starter, REQUEST, idempotency_key="k-1")
    assert first.run_id == again.run_id == "run-" + hashlib.sha256(b"k-1").hexdigest()[:16]
    assert len(starter.started) == 1


def test_a_key_reused_with_another_body_is_a_conflict_and_starts_nothing(state) -> None:
    starter = RecordingStarter()
    first = start(state, starter, REQUEST, idempotency_key="k-2")
    other = REQUEST.model_copy(update={"clause_types": ["Cap On Liability"]})
    with pytest.raises(IdempotencyConflict) as conflict:
        start(state, starter, other, idempotency_key="k-2")
    assert conflict.value.run_id == first.run_id
    assert len(starter.started) == 1


def test_without_a_key_a_failed_run_gets_a_new_attempt(state) -> None:
    starter = RecordingStarter()
    first = start(state, starter, REQUEST)
    state.put_run(first.model_copy(update={"status": "FAILED"}))
    second = start(state, starter, REQUEST)
    seed = REQUEST.model_dump_json() + "@" + VERSION
    assert second.run_id == "run-" + hashlib.sha256(f"{seed}#attempt2".encode()).hexdigest()[:16]
    assert [name for name, _ in starter.started] == [first.run_id, second.run_id]


def test_a_start_that_failed_is_started_by_the_retry(state) -> None:
    class Refusing(RecordingStarter):
        def start_execution(self, name: str, execution_input: dict[str, Any]) -> str:
            raise RuntimeError("throttled")

    with pytest.raises(RuntimeError):
        start(state, Refusing(), REQUEST, idempotency_key="k-3")
    [pending] = [r for r in [state.get_run("run-" + hashlib.sha256(b"k-3").hexdigest()[:16])] if r]
    assert (pending.status, pending.execution_arn) == ("PENDING", None)
    starter = RecordingStarter()
    run = start(state, starter, REQUEST, idempotency_key="k-3")
    assert run.run_id == pending.run_id and run.status == "RUNNING" and len(starter.started) == 1


def test_without_deduplication_every_start_is_a_fresh_run(state) -> None:
    starter = RecordingStarter()
    settings = ExtractionSettings(max_iterations=7)
    runs = [start_extraction(REQUEST, state=state, catalogue=load_catalogue(), settings=settings, starter=starter,
                             model_name="m", deduplicate=False) for _ in range(2)]
    assert runs[0].run_id != runs[1].run_id
    assert [i["max_iterations"] for _, i in starter.started] == [7, 7]


def test_invalid_requests_store_and_start_nothing(state) -> None:
    starter = RecordingStarter()
    with pytest.raises(UnknownClauseType):
        start(state, starter, REQUEST.model_copy(update={"clause_types": ["Governing Lwa"]}))
    with pytest.raises(NotFound):
        start(state, starter, REQUEST.model_copy(update={"doc_id": "no-such-contract"}))
    assert starter.started == []


def test_the_asl_continue_as_new_input_has_exactly_the_execution_input_fields() -> None:
    # Given the state machine definition
    asl = json.loads((REPO / "statemachine" / "extract.asl.json").read_text())
    written = asl["States"]["ContinueAsNew"]["Parameters"]["Input"]
    # Then continue-as-new writes the fields of ExecutionInput (plus the execution-chain marker)
    fields = {key.removesuffix(".$") for key in written} - {"AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID"}
    assert fields == set(ExecutionInput.model_fields)
    # And it names the next execution as the extract function's output says
    assert asl["States"]["ContinueAsNew"]["Parameters"]["Name.$"] == "$.next_execution"
    event = ExtractTaskInput(run_id="run-1", doc_id="d", generation=2)
    assert event.counters()["next_execution"] == execution_name("run-1", 3) == "run-1-g3"
    assert execution_name("run-1", 1) == "run-1"
