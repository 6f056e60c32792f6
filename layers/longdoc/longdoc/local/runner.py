"""The local engine under a run lease: one process drives a run's executions, and says so by a heartbeat.

On AWS, Step Functions keeps an execution alive for a year and its console shows where it
stands. Locally the execution lives in the memory of the process that runs it (moto), so:

- before a process starts an execution of a run it takes the run's lease
  (:meth:`~longdoc.core.ports.StateStore.acquire_run_lease`, a conditional write): two live
  executions of one run can never exist; a second driver gets :class:`RunLeaseHeld`;
- a heartbeat thread renews the lease every third of its lifetime and writes the execution
  history so far to ``$LONGDOC_HOME/runs/<run_id>/history.json``; a process that died stops
  renewing, its lease expires, and the run shows as ``STALE`` (:mod:`longdoc.local.console`);
- when the execution ends, the history and ``result.json`` are written and the lease released;
- fencing: the lease's ``generation`` (taken once, at the claim) is the fence of every write the
  engine's tasks make for the run (:func:`longdoc.core.run_fence.holding`); a process that stalled
  past its lease and comes back after another took the run over has its writes refused, and
  :meth:`LeasedEngine.finish` raises :class:`~longdoc.core.errors.RunLeaseLost` naming the holder
  now instead of reporting the run FAILED (it writes neither ``history.json`` nor ``result.json``:
  they are the new holder's).

Lease lifetime: ``LONGDOC_RUN_LEASE_SECONDS`` (default 30 s). :class:`LeasedEngine` is the
:class:`~longdoc.core.ports.ExecutionStarter` that ``longdoc extract``, ``longdoc runs resume`` and
the ``longdoc serve`` worker (:mod:`longdoc.local.worker`) hand to
:func:`longdoc.extract.runs.start_extraction`.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from longdoc.core.errors import RunLeaseHeld, RunLeaseLost
from longdoc.core.failures import innermost_error
from longdoc.core.ports import StateStore
from longdoc.core.run_fence import holding
from longdoc.local.engine import ExecutionResult, Handler, LocalStepFunctions

DEFAULT_LEASE_SECONDS = 30.0


def lease_seconds() -> float:
    """The lease lifetime in seconds: ``LONGDOC_RUN_LEASE_SECONDS`` (at least 1), default 30."""
    try:
        return max(1.0, float(os.environ.get("LONGDOC_RUN_LEASE_SECONDS", DEFAULT_LEASE_SECONDS)))
    except ValueError:
        return DEFAULT_LEASE_SECONDS


def new_owner() -> str:
    """A lease owner id naming this process: ``<host>:<pid>:<8 hex>``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def run_dir(home: Path, run_id: str) -> Path:
    """``$LONGDOC_HOME/runs/<run_id>`` (created): the run's history, result and worker log."""
    path = Path(home) / "runs" / run_id
    path.mkdir(parents=True, exist_ok=True)
    return path


def read_history(home: Path, run_id: str) -> list[dict[str, Any]]:
    """The run's recorded execution history (every attempt, oldest first); ``[]`` when none is written."""
    path = Path(home) / "runs" / run_id / "history.json"
    try:
        events = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return events if isinstance(events, list) else []


def _write_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON atomically (a reader never sees half a file). Each write has its own
    temporary file, so writers in two threads never rename one another's file away."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(data, indent=1, ensure_ascii=False))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def claim_run(state: StateStore, run_id: str, owner: str, ttl_seconds: float | None = None) -> int:
    """Take ``run_id``'s lease for ``owner``; returns its generation (the fence of ``owner``'s writes).

    Raises :class:`RunLeaseHeld` naming the live holder, also when another owner took the lease
    between the write and the read back.
    """
    ttl = ttl_seconds or lease_seconds()
    taken = state.acquire_run_lease(run_id, owner, ttl)
    lease = state.get_run_lease(run_id)
    if not taken or lease is None or lease.owner != owner:
        holder = f" by {lease.owner}" if lease else ""
        raise RunLeaseHeld(f"run {run_id} is being run by another live process (lease held{holder}); "
                           f"wait for it, or for its lease to expire if that process died")
    return lease.generation


class Heartbeat:
    """A daemon thread that renews a run's lease every ``ttl / 3`` seconds and calls ``on_beat``.

    ``lost`` is set when a renewal fails (another owner took the lease after it expired):
    ``on_lost`` is then called once and the thread stops.
    """

    def __init__(self, state: StateStore, run_id: str, owner: str, ttl: float,
                 on_beat: Callable[[], object], on_lost: Callable[[], None]):
        self.state, self.run_id, self.owner, self.ttl = state, run_id, owner, ttl
        self.on_beat, self.on_lost = on_beat, on_lost
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"heartbeat-{run_id}", daemon=True)

    def start(self) -> None:
        """Start beating."""
        self._thread.start()

    def stop(self) -> None:
        """Stop beating and wait for the thread (the lease is left as it is)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.ttl)

    def _loop(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            if not self.state.renew_run_lease(self.run_id, self.owner, self.ttl):
                self.lost.set()
                self.on_lost()
                return
            try:
                self.on_beat()
            except Exception:  # a history write must never stop the heartbeat
                pass


class LeasedEngine:
    """The local Step Functions engine running one run's executions under that run's lease.

    Use as a context manager (it enters :class:`~longdoc.local.engine.LocalStepFunctions`).
    ``start_execution`` (the :class:`~longdoc.core.ports.ExecutionStarter` port) claims the
    run named in the input, starts the heartbeat, then the execution; :meth:`finish` waits
    for the chain of executions and returns the run's report with an ``execution`` part.
    ``owner`` defaults to a fresh id; pass the one a parent process claimed the lease with.
    """

    def __init__(self, state: StateStore, home: Path, definition_path: Path, handlers: dict[str, Handler], *,
                 owner: str | None = None, prices_path: str | None = None):
        self.state, self.home, self.prices_path = state, Path(home), prices_path
        self.owner = owner or new_owner()
        self.ttl = lease_seconds()
        self.machine = LocalStepFunctions(definition_path, {name: self._recorded(h) for name, h in handlers.items()})
        self._heartbeat: Heartbeat | None = None
        self._run_id = ""
        self._prior: list[dict[str, Any]] = []
        self._history_lock = threading.Lock()  # start, tasks and the heartbeat write history.json
        self.generation = 0  # the lease generation claimed: the fence of this engine's writes

    def __enter__(self) -> LeasedEngine:
        self.machine.__enter__()
        return self

    def _recorded(self, handler: Handler) -> Handler:
        """``handler`` that first writes ``history.json`` (the task's StateEntered event included), so a
        process killed inside a task, even before its first heartbeat, leaves the steps it reached."""
        def invoke(event: Any, context: Any) -> Any:
            if not self._run_id:
                return handler(event, context)
            if not self.lost:
                try:
                    self.write_history()
                except Exception:  # noqa: BLE001 - a history write never fails the task it records
                    pass
            with holding(self._run_id, self.generation):  # the task's writes carry this engine's generation
                return handler(event, context)
        return invoke

    @property
    def lost(self) -> bool:
        """Whether this engine's lease was taken over by another process (its heartbeat could not renew)."""
        return self._heartbeat is not None and self._heartbeat.lost.is_set()

    def __exit__(self, *exc: object) -> None:
        if self._heartbeat is not None:
            self._heartbeat.stop()
        if self._run_id:
            self.state.release_run_lease(self._run_id, self.owner)
        self.machine.__exit__(*exc)

    def claim(self, run_id: str) -> None:
        """Take the run's lease (idempotent for this owner) and start the heartbeat; :class:`RunLeaseHeld` if held."""
        self.generation = claim_run(self.state, run_id, self.owner, self.ttl)
        if self._heartbeat is None:
            self._run_id = run_id
            self._prior = read_history(self.home, run_id)
            self._heartbeat = Heartbeat(self.state, run_id, self.owner, self.ttl, self.write_history, self._abort)
            self._heartbeat.start()

    def start_execution(self, name: str, execution_input: dict[str, Any]) -> str:
        """Claim ``execution_input["run_id"]`` and start execution ``name``; returns its ARN.

        ``history.json`` is written at once (then on every heartbeat), so a process killed
        before its first heartbeat still leaves where its run stood.
        """
        self.claim(str(execution_input["run_id"]))
        arn = self.machine.start_execution(name, execution_input)
        self.write_history()
        return arn

    def write_history(self) -> Path:
        """Write the prior attempts' events plus every execution of this engine so far; returns the file."""
        with self._history_lock:  # one snapshot-and-write at a time: the last file written is the newest
            events = list(self._prior)
            for execution in self.machine.executions():
                events.extend(self.machine.history(execution["executionArn"]))
            path = run_dir(self.home, self._run_id) / "history.json"
            _write_json(path, events)
        return path

    def _lost_error(self) -> RunLeaseLost:
        """The error :meth:`finish` raises when the lease was lost: the run, both generations, the holder now."""
        lease = self.state.get_run_lease(self._run_id)
        holder = (f"{lease.owner} holds it now (generation {lease.generation})" if lease and lease.owner != self.owner
                  else "another process took it over")
        return RunLeaseLost(f"run {self._run_id}: this process lost the run's lease (it held generation "
                            f"{self.generation}; {holder}) and stopped without writing; the run goes on there: "
                            f"`longdoc runs show {self._run_id}`")

    def _abort(self) -> None:
        """The lease was lost: stop this engine's running executions (another process owns the run now)."""
        for execution in self.machine.executions():
            if execution["status"] == "RUNNING":
                self.machine.sfn.stop_execution(executionArn=execution["executionArn"], error="RunLeaseLost",
                                                cause=f"run {self._run_id}: another process took the run's lease")

    def finish(self, execution_arn: str) -> dict[str, Any]:
        """Wait for the execution chain, write ``history.json`` and ``result.json``; returns the result.

        The result is :func:`longdoc.extract.runs.run_result` with ``status`` SUCCEEDED or FAILED
        (from the execution) and ``execution`` (last ARN, history file, event count, error,
        cause, next, every ARN of the chain). The lease is released. ``cause`` is the innermost
        error as one line (:func:`~longdoc.core.failures.innermost_error`: no nested payloads, no
        stack trace; the full cause stays in ``history.json``); ``next`` is the command that
        continues a failed run (``longdoc runs resume <id>``), None when it succeeded.

        Raises :class:`RunLeaseLost` (one line: the run, the holder now, what to do) when another
        process took the run's lease over meanwhile: the heartbeat could not renew it, or a
        task's fenced write was refused. Nothing of this engine is written then.
        """
        from longdoc.extract.runs import run_result

        execution: ExecutionResult = self.machine.wait(execution_arn)
        if self._heartbeat is not None:
            self._heartbeat.stop()
        if self.lost or execution.error == RunLeaseLost.__name__:
            raise self._lost_error()
        history = self.write_history()
        self.state.release_run_lease(self._run_id, self.owner)
        result = run_result(self.state, self._run_id, self.prices_path)
        result["status"] = execution.status if execution.status in ("SUCCEEDED", "FAILED") else "FAILED"
        failed = result["status"] != "SUCCEEDED"
        result["execution"] = {"arn": execution.execution_arn, "history": str(history),
                               "events": len(read_history(self.home, self._run_id)), "error": execution.error,
                               "cause": innermost_error(execution.error, execution.cause) if failed else None,
                               "next": f"longdoc runs resume {self._run_id}" if failed else None,
                               "executions": execution.executions}
        _write_json(run_dir(self.home, self._run_id) / "result.json", result)
        return result
