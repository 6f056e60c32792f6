"""Fenced checkpoints: a process that stalled past its run lease cannot overwrite the new holder's work.

Two "workers" in one process share one SQLite state store. Worker A holds the run's lease
(generation 1) and stalls inside a session; its lease runs out and worker B takes the run over
(generation 2). When A comes back, its late checkpoint, extraction and status writes are refused
with :class:`RunLeaseLost` (naming the run and B), and B's checkpoint stands. Through the local
engine, A's run ends with that named error, not a FAILED run without a cause.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from longdoc.adapters.state import SqliteStateStore
from longdoc.core.errors import RunLeaseLost
from longdoc.core.records import Checkpoint, RunRecord
from longdoc.core.run_fence import holding, run_fence
from longdoc.extract.payloads import ExecutionInput
from longdoc.extract.runs import fail_or_resume
from longdoc.extract.session import _save, open_session
from longdoc.extract.session_types import Deps, SessionOptions
from longdoc.local.runner import LeasedEngine, claim_run

REPO = Path(__file__).resolve().parents[2]
ASL = REPO / "statemachine" / "extract.asl.json"
RUN_ID = "run-fenced"


class NamedModel:
    """The slice of the model port a checkpoint save reads: its name."""

    name = "baseline"


def _store(tmp_path: Path) -> SqliteStateStore:
    state = SqliteStateStore(tmp_path / "state.sqlite3")
    state.put_run(RunRecord(run_id=RUN_ID, doc_id="msa", doc_version="v1", clause_types=["Governing Law"],
                            status="RUNNING", model="baseline"))
    return state


def _deps(state: SqliteStateStore) -> Deps:
    return Deps(state=state, blobs=None, embedder=None, index=None, model=NamedModel(), catalogue=None)  # type: ignore[arg-type]


def test_a_stalled_sessions_late_checkpoint_is_refused_and_the_new_holders_stands(tmp_path: Path) -> None:
    state = _store(tmp_path)
    deps = _deps(state)
    # Given worker A holds the run's lease (1 s) and opened a session, then stalled (no heartbeat)
    generation_a = claim_run(state, RUN_ID, "host:1:worker-a", 1.0)
    with holding(RUN_ID, generation_a):
        session_a = open_session(deps, RUN_ID)
    assert (generation_a, session_a.fence) == (1, 1)
    time.sleep(1.1)
    # And worker B took the run over once A's lease ran out, and opened its own session from the same checkpoint
    generation_b = claim_run(state, RUN_ID, "host:2:worker-b", 30.0)
    with holding(RUN_ID, generation_b):
        session_b = open_session(deps, RUN_ID)
    assert (generation_b, session_b.fence) == (2, 2)
    # When A comes back and saves its checkpoint first
    session_a.facts.decisions.append("written by A after it lost the lease")
    with pytest.raises(RunLeaseLost) as lost:
        _save(deps, session_a, SessionOptions(), done=False)
    # Then A's write is refused, naming the run, its generation and the holder now
    message = str(lost.value)
    assert f"run {RUN_ID}" in message and "generation 1" in message and "host:2:worker-b" in message
    assert "\n" not in message
    assert state.load_checkpoint(RUN_ID) is None
    # And B's checkpoint (version 1, which A's late write would have taken from it) is accepted and stands
    session_b.facts.decisions.append("written by B, the holder")
    assert _save(deps, session_b, SessionOptions(), done=False) == 1
    stored = state.load_checkpoint(RUN_ID)
    assert stored is not None and stored.version == 1
    assert stored.case_facts.decisions == ["written by B, the holder"]
    assert state.get_run(RUN_ID).checkpoint_version == 1


def test_without_a_holding_block_a_session_is_fenced_by_the_lease_stored_when_it_opens(tmp_path: Path) -> None:
    state = _store(tmp_path)
    # Given no lease: the session is unfenced (AWS: Step Functions drives the run)
    assert run_fence(state, RUN_ID) is None
    assert open_session(_deps(state), RUN_ID).fence is None
    # Given a lease at generation 1 / Then a session opened now carries generation 1
    claim_run(state, RUN_ID, "host:1:worker-a", 30.0)
    assert open_session(_deps(state), RUN_ID).fence == 1


def test_a_lost_lease_is_not_recorded_as_the_runs_failure(tmp_path: Path) -> None:
    # Given a run B took over, and A's session failed with RunLeaseLost
    state = _store(tmp_path)
    claim_run(state, RUN_ID, "host:2:worker-b", 30.0)
    cause = '{"errorType": "RunLeaseLost", "errorMessage": "run run-fenced: this process lost the run\'s lease", ' \
            '"stackTrace": ["  File \\"/abs/path/session.py\\", line 9"]}'
    # When A's failure-recording state runs / Then it raises the named error again and records nothing
    with pytest.raises(RunLeaseLost, match="run run-fenced: this process lost") as raised:
        fail_or_resume(state, RUN_ID, "RunLeaseLost", cause, "2025-01-31T12:00:00Z")
    assert "/abs/path" not in str(raised.value)
    run = state.get_run(RUN_ID)
    assert run.status == "RUNNING" and run.error is None


def test_the_local_engine_of_a_stalled_process_ends_with_run_lease_lost_naming_the_new_holder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LONGDOC_RUN_LEASE_SECONDS", "1")
    state = _store(tmp_path)
    stalled, resumed = threading.Event(), threading.Event()

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        """A session that stalls, then saves a checkpoint with its fence; the fail action as the extract function's."""
        if event.get("action") == "fail":
            error = event["error"]
            fail_or_resume(state, event["run_id"], error["Error"], error["Cause"], event.get("entered"))
            raise AssertionError("a lost lease must not be recorded as a failure")
        stalled.set()
        assert resumed.wait(30)
        facts = open_session(_deps(state), RUN_ID).facts
        state.save_checkpoint(Checkpoint(run_id=RUN_ID, version=1, case_facts=facts), run_fence(state, RUN_ID))
        raise AssertionError("the stale write went through")

    # Given worker A's engine running the run, its session stalled and its heartbeat stopped (a frozen process)
    with LeasedEngine(state, tmp_path, ASL, {"ExtractFunctionArn": handler}, owner="host:1:worker-a") as engine:
        first = ExecutionInput.first(RUN_ID, "msa", max_iterations=5, iterations_per_execution=5)
        arn = engine.start_execution(RUN_ID, first.model_dump())
        assert stalled.wait(30) and engine.generation == 1
        engine._heartbeat.stop()  # noqa: SLF001 - the frozen process renews nothing
        time.sleep(1.2)
        # And worker B takes the run over and saves its checkpoint
        generation_b = claim_run(state, RUN_ID, "host:2:worker-b", 30.0)
        facts = open_session(_deps(state), RUN_ID).facts.model_copy(update={"decisions": ["B"]})
        state.save_checkpoint(Checkpoint(run_id=RUN_ID, version=1, case_facts=facts), generation_b)
        # When A's session comes back and writes
        resumed.set()
        # Then A's run ends with RunLeaseLost naming B and what to look at, not a FAILED result
        with pytest.raises(RunLeaseLost) as lost:
            engine.finish(arn)
    message = str(lost.value)
    assert "host:2:worker-b" in message and "generation 2" in message and f"longdoc runs show {RUN_ID}" in message
    # And B's checkpoint, lease and run record stand; A wrote no result.json
    assert state.load_checkpoint(RUN_ID).case_facts.decisions == ["B"]
    assert state.get_run_lease(RUN_ID).owner == "host:2:worker-b"
    assert state.get_run(RUN_ID).status == "RUNNING" and state.get_run(RUN_ID).error is None
    assert not (tmp_path / "runs" / RUN_ID / "result.json").exists()


def test_a_run_whose_holder_was_killed_is_stale_at_once_and_show_names_the_resume_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import socket
    import subprocess
    import sys

    from longdoc.cli.runs import _print_show
    from longdoc.local.console import check_resumable, run_state, show_run

    # Given a RUNNING run whose 30 s lease is held by a local process that was killed (`kill -9`)
    state = _store(tmp_path)
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    claim_run(state, RUN_ID, f"{socket.gethostname()}:{proc.pid}:0badcafe", 30.0)
    assert state.get_run_lease(RUN_ID).live(time.time())
    # When the console looks at it right away
    run = state.get_run(RUN_ID)
    # Then it is STALE without waiting for the lease, and resumable now (not "live")
    assert run_state(state, run) == "STALE"
    assert check_resumable(state, RUN_ID).run_id == RUN_ID
    # And `runs show` names the command to run next
    view = show_run(state, tmp_path, RUN_ID)
    assert view["next"] == f"longdoc runs resume {RUN_ID}"
    _print_show(view)
    out = capsys.readouterr().out
    assert f"next:         longdoc runs resume {RUN_ID}" in out and "HOLDER GONE" in out
    # And a resume takes the lease over at once, one generation up
    assert claim_run(state, RUN_ID, "host:2:worker-b", 30.0) == 2


def test_a_live_run_names_no_next_step(tmp_path: Path) -> None:
    from longdoc.local.console import show_run

    # Given a run held by this (live) process / Then it is RUNNING and show suggests nothing
    state = _store(tmp_path)
    import os
    import socket

    claim_run(state, RUN_ID, f"{socket.gethostname()}:{os.getpid()}:0000beef", 30.0)
    view = show_run(state, tmp_path, RUN_ID)
    assert view["state"] == "RUNNING" and view["next"] is None
