"""Local workers' pids (``longdoc serve``): where a summary or bulk worker's pid is recorded and
whether that worker still runs. Split from :mod:`longdoc.local.server` so :mod:`longdoc.local.console`
can ask without an import cycle; the server re-exports ``pid_file`` and ``execution_worker_gone``."""

from __future__ import annotations

from pathlib import Path


def pid_file(home: Path, kind: str, name: str) -> Path:
    """``<home>/workers/<kind>-<name>.pid``: the pid of the worker of execution ``name``, beside its log."""
    return Path(home) / "workers" / f"{kind}-{name}.pid"


def execution_worker_gone(home: Path, kind: str, execution: str) -> bool:
    """Whether the worker of ``execution`` (its name, or its ARN: the part after the last ``:``) of the
    ``kind`` machine has ended: the pid recorded at its start (:func:`pid_file`) runs no more, or
    runs another program (:func:`worker_gone`). False when no pid was recorded (started elsewhere)."""
    name = execution.rpartition(":")[2]
    try:
        pid = int(pid_file(home, kind, name).read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return False
    return worker_gone(pid, name)


def execution_worker_alive(home: Path, kind: str, execution: str) -> bool:
    """Whether a worker of ``execution`` of the ``kind`` machine is known to run now: a pid was
    recorded at its start (:func:`pid_file`) and that process still runs it (:func:`worker_gone`).
    False without a pid file (an in-process ``longdoc bulk`` run, or started elsewhere)."""
    name = execution.rpartition(":")[2]
    try:
        pid = int(pid_file(home, kind, name).read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return False
    return not worker_gone(pid, name)


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
