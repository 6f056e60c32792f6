"""The runs console: a local extraction process killed mid-run is seen as STALE and resumed to the same result.

Given a CUAD contract ingested and a run that needs several sessions (a small output budget),
when the ``longdoc extract`` process running it is killed with SIGKILL after its first
checkpoint, then ``longdoc runs`` shows it ``STALE`` once its lease expires, ``longdoc runs show``
says where it stopped, and ``longdoc runs resume`` finishes it with the same extractions as an
uninterrupted run, while a second resume at the same time is refused.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from longdoc import wiring
from longdoc.adapters.state import SqliteStateStore
from longdoc.cli import main

pytestmark = pytest.mark.slow

DOC = "cuad/urscorpnew-cooperation-agreement.pdf"
DOC_ID = "urscorpnew-cooperation-agreement"
CLAUSES = "Agreement Date,Expiration Date,Governing Law,Non-Compete,Anti-Assignment,Audit Rights,Insurance,Source Code Escrow"
LEASE_SECONDS = 3
CLI = [sys.executable, "-c", "import sys; from longdoc.cli import main; sys.exit(main())"]


@pytest.fixture(scope="module")
def home(tmp_path_factory, corpus_dir: Path):
    """A home with the contract ingested; runs' leases last LEASE_SECONDS (in this process and its children)."""
    path = tmp_path_factory.mktemp("runs-home")
    mp = pytest.MonkeyPatch()
    mp.setenv("LONGDOC_HOME", str(path))
    mp.setenv("LONGDOC_MODEL", "baseline")
    mp.setenv("LONGDOC_RUN_LEASE_SECONDS", str(LEASE_SECONDS))
    mp.delenv("ANTHROPIC_API_KEY", raising=False)
    wiring.reset()
    assert main(["ingest", str(corpus_dir / DOC)]) == 0
    yield path
    mp.undo()
    wiring.reset()


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def comparable(extractions: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What a reader compares between two runs: clause type, status, instance, text and citations."""
    return [(e["clause_type"], e["status"], e["instance"], e["clause_text"], json.dumps(e["citations"], sort_keys=True))
            for e in extractions]


def wait_for(predicate, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_killed_run_is_stale_and_resumes_to_the_uninterrupted_result(home, capsys) -> None:
    store = SqliteStateStore(home / "state.sqlite3")
    # Given the extractions of an uninterrupted run
    code, out, _ = cli(capsys, "extract", DOC_ID, "--clause-types", CLAUSES, "--max-tokens", "300", "--json")
    expected = json.loads(out)
    assert code == 0 and expected["sessions"] > 1, "the scenario needs a run of several sessions"
    # When the same extraction runs in its own process, and that process is SIGKILLed after its first checkpoint
    proc = subprocess.Popen([*CLI, "extract", DOC_ID, "--clause-types", CLAUSES, "--max-tokens", "300", "--json"],
                            env=os.environ.copy(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def checkpointed() -> str | None:
            assert proc.poll() is None, "the run finished before it could be killed"
            for run in store.list_runs():
                checkpoint = store.load_checkpoint(run.run_id)
                if run.run_id != expected["run_id"] and checkpoint and checkpoint.version >= 1:
                    return run.run_id
            return None

        run_id = wait_for(checkpointed, 600, "the first checkpoint")
        # (while it lives, its heartbeat keeps it RUNNING)
        _, out, _ = cli(capsys, "runs", "--json")
        assert {r["run_id"]: r["state"] for r in json.loads(out)}[run_id] == "RUNNING"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    checkpoint = store.load_checkpoint(run_id)
    assert checkpoint.case_facts.pending, "killed after the run had finished"

    # Then, once its lease has expired, `longdoc runs` shows it STALE
    time.sleep(LEASE_SECONDS + 0.5)
    code, out, _ = cli(capsys, "runs", "--status", "STALE", "--json")
    assert code == 0
    [stale] = json.loads(out)
    assert (stale["run_id"], stale["state"], stale["doc_id"]) == (run_id, "STALE", DOC_ID)
    assert stale["checkpoints"] >= 1
    code, out, _ = cli(capsys, "runs")
    assert code == 0 and run_id in out and "STALE" in out
    # And `runs show` says where it stopped: its states so far, checkpoint, pending clause types, history file
    code, out, _ = cli(capsys, "runs", "show", run_id, "--json")
    view = json.loads(out)
    assert view["state"] == "STALE" and view["pending"] == checkpoint.case_facts.pending
    assert view["checkpoint"]["version"] >= 1 and Path(view["history"]).is_file()
    assert view["steps"] and view["steps"][0]["state"] == "Extract" and view["steps"][0]["input"]["run_id"] == run_id
    code, text, _ = cli(capsys, "runs", "show", run_id)
    assert code == 0 and "STALE" in text and "pending:" in text and "1. Extract" in text

    # When it is resumed in one process, and a second resume starts while the first one runs
    first = subprocess.Popen([*CLI, "runs", "resume", run_id, "--json"], env=os.environ.copy(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: (lease := store.get_run_lease(run_id)) is not None and lease.live(time.time()), 300,
                 "the first resume to take the lease")
        code, _, err = cli(capsys, "runs", "resume", run_id)
        # Then the second is refused, naming why
        assert code == 1
        assert "another process holds its lease" in err or "another live process" in err
        out, err = first.communicate(timeout=900)
    finally:
        if first.poll() is None:
            first.kill()
    # And the first finishes the run with the extractions of the uninterrupted run
    assert first.returncode == 0, err
    resumed = json.loads(out)
    assert resumed["status"] == "SUCCEEDED" and resumed["run_id"] == run_id
    assert comparable(resumed["extractions"]) == comparable(expected["extractions"])
    assert any(e.endswith("-resume-1") for e in resumed["executions"])
    code, out, _ = cli(capsys, "runs", "--status", "SUCCEEDED", "--json")
    assert run_id in {r["run_id"] for r in json.loads(out)}
    # And a finished run does not resume again
    code, _, err = cli(capsys, "runs", "resume", run_id)
    assert code == 1 and "SUCCEEDED" in err


def test_unknown_run_and_bad_status_are_one_line_errors(home, capsys) -> None:
    code, _, err = cli(capsys, "runs", "show", "run-nope")
    assert code == 1 and "run-nope" in err and err.count("\n") == 1
    code, _, err = cli(capsys, "runs", "resume", "run-nope")
    assert code == 1 and "run-nope" in err
    with pytest.raises(SystemExit):
        main(["runs", "--status", "LOST"])


def test_show_names_a_failed_runs_error_once(home, capsys) -> None:
    # Given a run that failed with a cause recorded as "<error>: <message>" (as the engine records it)
    from longdoc.core.records import RunRecord

    wiring.state_store().put_run(RunRecord(
        run_id="run-failed-rerank", doc_id="d", doc_version="v", clause_types=["Governing Law"], status="FAILED",
        error="RerankUnavailable", cause="RerankUnavailable: Voyage rerank failed after 3 attempts: timed out"))
    # When it is shown
    code, out, _ = cli(capsys, "runs", "show", "run-failed-rerank")
    # Then the last error names the error once, then the message
    assert code == 0
    assert "last error:   RerankUnavailable: Voyage rerank failed after 3 attempts: timed out\n" in out
