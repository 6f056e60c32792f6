"""Local workers' pids (``longdoc serve``): where a summary or bulk worker's pid is recorded and
whether that worker still runs. Split from :mod:`longdoc.local.server` so :mod:`longdoc.local.console`
can ask without an import cycle; the server re-exports ``pid_file`` and ``execution_worker_gone``."""

from __future__ import annotations

import os
from pathlib import Path


def pid_file(home: Path, kind: str, name: str) -> Path:
    """``<home>/workers/<kind>-<name>.pid``: the pid of the worker of execution ``name``, beside its log."""
    return Path(home) / "workers" / f"{kind}-{name}.pid"


def process_started(pid: int) -> str | None:
    """When process ``pid`` started, as the kernel counts it (``starttime``, field 22 of
    ``/proc/<pid>/stat``, clock ticks since boot; proc(5)), or None without ``/proc`` (macOS) or
    once the process is gone. Two processes that had the same pid never share it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None


def record_in_process_worker(home: Path, kind: str, name: str) -> Path:
    """Record this process as the worker of execution ``name`` of the ``kind`` machine (an
    in-process run: ``longdoc bulk`` runs the engine itself, its command line does not name the
    execution): ``<pid> <starttime>`` in :func:`pid_file`, so :func:`execution_worker_gone` sees it
    end (SIGKILL included) and never mistakes a later process with the same pid for it. Returns the file."""
    path = pid_file(home, kind, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    pid = os.getpid()
    path.write_text(f"{pid} {process_started(pid) or ''}".strip(), encoding="ascii")
    return path


def _recorded(home: Path, kind: str, name: str) -> tuple[int, str | None] | None:
    """``(pid, starttime or None)`` of :func:`pid_file`, None when none was recorded (or unreadable)."""
    try:
        parts = pid_file(home, kind, name).read_text(encoding="ascii").split()
        return int(parts[0]), parts[1] if len(parts) > 1 else None
    except (OSError, ValueError, IndexError):
        return None


def _gone(pid: int, started: str | None, name: str) -> bool:
    """:func:`worker_gone`, or for an in-process worker (``started`` recorded) whether that process
    runs no more: gone or a zombie, or its pid now belongs to a process started at another time."""
    if started is None:
        return worker_gone(pid, name)
    from longdoc.ingest.lease import process_gone

    if process_gone(pid):
        return True
    now = process_started(pid)
    return now is not None and now != started


def execution_worker_gone(home: Path, kind: str, execution: str) -> bool:
    """Whether the worker of ``execution`` (its name, or its ARN: the part after the last ``:``) of the
    ``kind`` machine has ended: the pid recorded at its start (:func:`pid_file`) runs no more, or
    runs another program (:func:`worker_gone`; for an in-process worker,
    :func:`record_in_process_worker`, another process since). False when no pid was recorded
    (started elsewhere)."""
    name = execution.rpartition(":")[2]
    recorded = _recorded(home, kind, name)
    return recorded is not None and _gone(recorded[0], recorded[1], name)


def execution_worker_alive(home: Path, kind: str, execution: str) -> bool:
    """Whether a worker of ``execution`` of the ``kind`` machine is known to run now: a pid was
    recorded at its start (:func:`pid_file`, :func:`record_in_process_worker`) and that process
    still runs it. False without a pid file (started elsewhere)."""
    name = execution.rpartition(":")[2]
    recorded = _recorded(home, kind, name)
    return recorded is not None and not _gone(recorded[0], recorded[1], name)


def worker_gone(pid: int, name: str) -> bool:
    """Whether the worker ``pid`` of execution ``name`` has ended: the process is gone or a zombie
    (:func:`~longdoc.ingest.lease.process_gone`), or, on Linux, ``/proc/<pid>/cmdline`` (proc(5))
    no longer names the execution (the pid was reused by another program). An empty ``cmdline`` is
    not an end: a process in the middle of ``execve(2)`` shows none until the kernel has laid out
    its new arguments, and ``subprocess.Popen`` may return in that window (a POST answered at once
    after the start read it so and said ``STALE``, CI 2026-12-04); a zombie has an empty one too,
    and the pid probe has already said so."""
    from longdoc.ingest.lease import process_gone

    if process_gone(pid):
        return True
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # no /proc (macOS): the pid probe decides
        return False
    return bool(command) and name.encode("utf-8") not in command
