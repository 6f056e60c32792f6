"""Workers of ``longdoc serve`` / ``longdoc mcp`` run in a session of their own (a signal to the server's process
group, as an MCP client's stdio shutdown sends, does not reach them), are reaped when they end, and their pid is
recorded so a later server can tell a dead summary worker from a live one."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from longdoc.local.server import MachineStarter, execution_worker_gone, pid_file


@pytest.mark.slow  # starts a worker process and waits for its end
def test_a_worker_has_its_own_session_is_reaped_and_its_end_is_seen(tmp_path: Path) -> None:
    # Given a summary worker started on a definition that does not exist (it starts, then fails)
    starter = MachineStarter("summarize", tmp_path, tmp_path / "missing.asl.json")
    starter.start_execution("sum-0123-1", {"summary_id": "sum-0123"})
    worker = starter.workers[0]
    # Then it leads a session of its own, not this process's (a killpg of ours would not reach it)
    assert os.getsid(worker.pid) == worker.pid != os.getsid(0)
    assert pid_file(tmp_path, "summarize", "sum-0123-1").read_text() == str(worker.pid)
    # And once it has exited it is reaped without anyone waiting for it (no <defunct> entry left)
    deadline = time.monotonic() + 60
    while Path(f"/proc/{worker.pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{worker.pid}").exists()
    # And its end is seen from the recorded pid, by ARN or by name, as another server would see it
    assert execution_worker_gone(tmp_path, "summarize", "arn:aws:states:r:1:execution:longdoc-local-summarize:sum-0123-1")
    assert starter.execution_gone("sum-0123-1")
    assert not execution_worker_gone(tmp_path, "summarize", "never-started")
    assert starter.stop() == 0


def test_a_worker_whose_arguments_are_not_laid_out_yet_is_not_gone(monkeypatch) -> None:
    # Given a live process whose /proc cmdline reads empty, as one in the middle of execve(2) does
    # (subprocess.Popen can return in that window), and one whose cmdline names another program
    from longdoc.local import pids

    real = Path.read_bytes
    cmdlines = {"/proc/4242/cmdline": b"", "/proc/4343/cmdline": b"/usr/bin/sleep\x00100\x00"}
    monkeypatch.setattr(Path, "read_bytes", lambda self: cmdlines[str(self)] if str(self) in cmdlines else real(self))
    monkeypatch.setattr("longdoc.ingest.lease.process_gone", lambda pid: False)
    # Then the first is still the worker (not STALE), the second a reused pid (gone)
    assert pids.worker_gone(4242, "bulk-0123") is False
    assert pids.worker_gone(4343, "bulk-0123") is True
