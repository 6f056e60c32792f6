"""The runs console of local mode: where each run stands, the way the Step Functions console shows it.

A run's *state* is its stored status, except that a ``RUNNING`` or ``PENDING`` run whose lease
is missing or expired is ``STALE``: the process that drove it died (see
:mod:`longdoc.local.runner`). :func:`list_runs` and :func:`show_run` read; :func:`resume_plan`
says how :func:`longdoc.cli.runs` continues a ``FAILED`` or ``STALE`` run from its checkpoint
(the local counterpart of a redrive: a new execution for the same run id).
"""

from __future__ import annotations

import json
import re
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from longdoc.core.errors import CheckpointSchemaError, LongdocError, NotFound
from longdoc.core.ports import StateStore
from longdoc.core.records import Checkpoint, RunRecord
from longdoc.ingest.lease import claim_holder_gone
from longdoc.local.runner import LeasedEngine, read_history

STATES = ("PENDING", "RUNNING", "STALE", "SUCCEEDED", "FAILED")


def lease_live(state: StateStore, run_id: str, now: float | None = None) -> bool:
    """Whether a live process holds ``run_id``'s lease: stored, not expired or released, and its holder
    process not gone from this host (:func:`~longdoc.ingest.lease.claim_holder_gone`, e.g. ``kill -9``:
    the SQLite store lets another driver take such a lease over at once)."""
    lease = state.get_run_lease(run_id)
    return lease is not None and lease.live(time.time() if now is None else now) \
        and not claim_holder_gone(lease.owner)


def run_state(state: StateStore, run: RunRecord, now: float | None = None) -> str:
    """``STALE`` for a ``RUNNING``/``PENDING`` run without a live lease (:func:`lease_live`), ``RUNNING`` for a
    ``FAILED`` one whose lease a live process holds (a resume that has not marked it yet), else the stored status.
    """
    if run.status == "FAILED":
        return "RUNNING" if lease_live(state, run.run_id, now) else "FAILED"
    if run.status not in ("RUNNING", "PENDING"):
        return run.status
    return run.status if lease_live(state, run.run_id, now) else "STALE"


def next_step(run_id: str, state: str) -> str | None:
    """What to run next for a run in ``state``: the resume command for ``STALE`` and ``FAILED`` runs, else None."""
    return f"longdoc runs resume {run_id}" if state in ("STALE", "FAILED") else None


def _age(created_at: str, now: float) -> str:
    """``"3h05m"``, ``"4m12s"`` or ``"9s"`` since an ISO 8601 stamp; ``"-"`` when unreadable."""
    try:
        seconds = int(now - datetime.fromisoformat(created_at).timestamp())
    except ValueError:
        return "-"
    hours, rest = divmod(max(seconds, 0), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else (f"{minutes}m{secs:02d}s" if minutes else f"{secs}s")


def _checkpoint(state: StateStore, run_id: str) -> Checkpoint | None:
    """The run's checkpoint, or None (also when it was written by an incompatible version)."""
    try:
        return state.load_checkpoint(run_id)
    except CheckpointSchemaError:
        return None


def summary(state: StateStore, run: RunRecord, now: float | None = None) -> dict[str, Any]:
    """One row of ``longdoc runs``: run id, document, clause types, state, sessions, checkpoints, age."""
    now = time.time() if now is None else now
    checkpoint = _checkpoint(state, run.run_id)
    return {"run_id": run.run_id, "doc_id": run.doc_id, "clause_types": run.clause_types,
            "state": run_state(state, run, now), "sessions": checkpoint.sessions if checkpoint else 0,
            "checkpoints": checkpoint.version if checkpoint else 0, "age": _age(run.created_at, now),
            "created_at": run.created_at, "updated_at": run.updated_at}


def list_runs(state: StateStore, status: str | None = None) -> list[dict[str, Any]]:
    """Every run of the local state store, newest first, optionally only those in state ``status``.

    Raises :class:`LongdocError` when the store cannot list runs (the console is local-only).
    """
    lister = getattr(state, "list_runs", None)
    if lister is None:
        raise LongdocError("the runs console reads the local state store (LONGDOC_MODE=local); "
                           "on AWS use the Step Functions console (docs/operations.md)")
    rows = [summary(state, run) for run in lister()]
    rows.sort(key=lambda r: r["created_at"], reverse=True)
    return [r for r in rows if status is None or r["state"] == status]


def _details(event: dict[str, Any], key: str) -> dict[str, Any]:
    """An event's ``<key>`` details as a dict (moto stores them as dicts; a str is parsed)."""
    value = event.get(key) or {}
    return value if isinstance(value, dict) else {}


def _parsed(text: Any) -> Any:
    """A state's input or output: parsed JSON when it is JSON text, else as it is."""
    if isinstance(text, str):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def state_steps(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each state visit of the history, in order: ``{"state", "entered", "input", "output"}``.

    ``output`` is None for a state that was entered and never left (the process died in
    it, or the execution failed there). Execution failures are steps named ``(execution failed)``
    with the error and cause as output.
    """
    steps: list[dict[str, Any]] = []
    for event in history:
        kind = str(event.get("type", ""))
        if kind.endswith("StateEntered"):
            details = _details(event, "stateEnteredEventDetails")
            steps.append({"state": details.get("name"), "entered": event.get("timestamp"),
                          "input": _parsed(details.get("input")), "output": None})
        elif kind.endswith("StateExited") and steps:
            steps[-1]["output"] = _parsed(_details(event, "stateExitedEventDetails").get("output"))
        elif kind in ("ExecutionFailed", "ExecutionAborted", "ExecutionTimedOut"):
            details = _details(event, kind[0].lower() + kind[1:] + "EventDetails")
            steps.append({"state": f"({kind})", "entered": event.get("timestamp"), "input": None,
                          "output": {"error": details.get("error"), "cause": _parsed(details.get("cause"))}})
    return steps


def show_run(state: StateStore, home: Path, run_id: str) -> dict[str, Any]:
    """Where a run stands: its summary, lease, checkpoint, pending clause types, last error, history and steps.

    ``next`` is the command to run next (:func:`next_step`: ``longdoc runs resume <id>`` for a
    ``STALE`` or ``FAILED`` run), else None.

    Raises :class:`NotFound` for an unknown run.
    """
    run = state.get_run(run_id)
    if run is None:
        raise NotFound(f"run {run_id} does not exist")
    checkpoint = _checkpoint(state, run_id)
    lease = state.get_run_lease(run_id)
    history_file = Path(home) / "runs" / run_id / "history.json"
    steps = state_steps(read_history(home, run_id))
    failures = [s["output"] for s in steps if s["state"] and s["state"].startswith("(")]
    last_error = ({"error": run.error, "cause": run.cause} if run.error
                  else (failures[-1] if failures else None))
    pending = checkpoint.case_facts.pending if checkpoint else list(run.clause_types)
    row = summary(state, run)
    return {**row, "next": next_step(run_id, row["state"]), "doc_version": run.doc_version, "model": run.model,
            "executions": run.executions,
            "lease": lease.model_dump() if lease else None,
            "checkpoint": None if checkpoint is None else {
                "version": checkpoint.version, "sessions": checkpoint.sessions, "updated_at": checkpoint.updated_at,
                "last_stop_reason": checkpoint.last_stop_reason, "stalled_sessions": checkpoint.stalled_sessions,
                "cut_blocks": checkpoint.cut_blocks,
                "resolved": sorted(checkpoint.case_facts.resolved), "usage": checkpoint.usage.model_dump()},
            "pending": pending, "last_error": last_error,
            "history": str(history_file) if history_file.exists() else None, "steps": steps}


def resume_input(run: RunRecord, history: list[dict[str, Any]], *, max_iterations: int,
                 iterations_per_execution: int) -> dict[str, Any]:
    """The input of the execution that continues ``run``: the counters of the last ``Extract`` it entered.

    A ``FAILED`` run gets a fresh ``iteration`` budget (0), as a redrive does; a ``STALE`` one
    keeps its count. ``execution_iterations`` restarts at 0 (a new execution). With no
    recorded history, the run starts over from its checkpoint at iteration 0.
    """
    from longdoc.extract.payloads import ExecutionInput

    last: dict[str, Any] = {}
    for step in state_steps(history):
        if step["state"] == "Extract" and isinstance(step["input"], dict):
            last = step["input"]
    counters = ExecutionInput(run_id=run.run_id, doc_id=run.doc_id, max_iterations=max_iterations,
                              iterations_per_execution=iterations_per_execution,
                              iteration=0 if run.status == "FAILED" else int(last.get("iteration", 0)),
                              generation=int(last.get("generation", 1)))
    return counters.model_dump()


BULK_MEMBER = re.compile(r"^(bulk-[0-9a-f]+)-\d{5}$")
"""A bulk job's member run id: ``<bulk_id>-NNNNN`` (:func:`longdoc.bulk.intake.create_runs`)."""


def live_bulk_job(run_id: str) -> str | None:
    """The id of the bulk job ``run_id`` belongs to (its ``run#`` item under the job) when that job's
    current execution has a live local worker (:func:`~longdoc.local.pids.execution_worker_alive`),
    else None. Such a run is driven by the job's rounds: resuming it alone would race the batch."""
    match = BULK_MEMBER.match(run_id)
    if match is None:
        return None
    from longdoc import wiring
    from longdoc.bulk.intake import execution_name
    from longdoc.config import get_settings
    from longdoc.local.pids import execution_worker_alive

    bulk_id, store = match.group(1), wiring.bulk_store()
    if store.get(f"bulk#{bulk_id}", f"run#{run_id}") is None:
        return None
    alive = execution_worker_alive(get_settings().home, "bulk", execution_name(store, bulk_id))
    return bulk_id if alive else None


def check_resumable(state: StateStore, run_id: str) -> RunRecord:
    """The run, when it is ``FAILED`` or ``STALE`` and not a member of a bulk job whose execution is
    alive (:func:`live_bulk_job`); raises :class:`NotFound` or :class:`LongdocError` saying why not."""
    run = state.get_run(run_id)
    if run is None:
        raise NotFound(f"run {run_id} does not exist")
    bulk_id = live_bulk_job(run_id)
    if bulk_id is not None:
        raise LongdocError(f"run {run_id} belongs to bulk job {bulk_id}, whose execution is running: its rounds "
                           f"drive this run (see GET /bulk-extractions/{bulk_id}); resume it only once that job "
                           "has ended or its worker died")
    current = run_state(state, run)
    if current not in ("FAILED", "STALE"):
        why = ("it is live: another process holds its lease" if current in ("RUNNING", "PENDING")
               else "it has finished")
        raise LongdocError(f"run {run_id} is {current}; only FAILED or STALE runs resume ({why})")
    return run


def resume(engine: LeasedEngine, state: StateStore, run_id: str, *, max_iterations: int,
           iterations_per_execution: int, checked: bool = False) -> dict[str, Any]:
    """Continue a ``FAILED`` or ``STALE`` run from its checkpoint in ``engine``; returns the finished run's result.

    Order: check the state, take the lease (:class:`~longdoc.core.errors.RunLeaseHeld` when another
    live process has it, so two resumes never both run), mark the run ``RUNNING`` (error cleared),
    start execution ``<run_id>-resume-<n>`` with :func:`resume_input`, wait for it
    (:meth:`LeasedEngine.finish`). Every session starts from the run's checkpoint, so nothing
    extracted is lost or repeated. ``checked``: the caller checked the state already and claimed the
    lease for ``engine``'s owner (:meth:`longdoc.local.server.BackgroundStarter.resume`), so the run
    now looks live; the check is skipped.
    """
    from longdoc.core.clock import utc_now

    if not checked:
        check_resumable(state, run_id)
    engine.claim(run_id)
    run = check_claimed(state, run_id)
    execution_input = resume_input(run, read_history(engine.home, run_id), max_iterations=max_iterations,
                                   iterations_per_execution=iterations_per_execution)
    name = f"{run_id}-resume-{1 + sum('-resume-' in e for e in run.executions)}"
    state.put_run(run.model_copy(update={"status": "RUNNING", "error": None, "cause": None, "updated_at": utc_now(),
                                         "failed_state_entered": None, "executions": [*run.executions, name]}),
                  engine.generation)
    arn = engine.start_execution(name, execution_input)
    stored = state.get_run(run_id)
    if stored is not None:
        state.put_run(stored.model_copy(update={"execution_arn": arn}), engine.generation)
    return engine.finish(arn)


def check_claimed(state: StateStore, run_id: str) -> RunRecord:
    """After taking the lease: the run as stored now, unless it finished meanwhile (then :class:`LongdocError`)."""
    run = state.get_run(run_id)
    if run is None or run.status == "SUCCEEDED":
        raise LongdocError(f"run {run_id} finished while the resume started; nothing to resume")
    return run
