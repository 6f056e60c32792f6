"""Whose ingest claim is it: the host and pid in a claim owner's name, and whether that process still runs."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from longdoc.ingest.lease import claim_holder_gone, claim_holder_pid, claim_owner


def dead_pid() -> int:
    """The pid of a process that ran on this host and has been reaped."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_claim_owner_names_this_host_and_process() -> None:
    # Given an owner name made here / Then its pid is this process's, which is not gone
    owner = claim_owner()
    assert claim_holder_pid(owner) == os.getpid()
    assert claim_holder_gone(owner) is False


def test_a_process_of_this_host_that_ended_is_gone() -> None:
    # Given the owner name of a process that was killed / ended and reaped
    owner = f"{socket.gethostname()}:{dead_pid()}:0badcafe"
    # Then it is gone
    assert claim_holder_gone(owner) is True


def test_other_hosts_running_processes_and_foreign_names_are_never_gone() -> None:
    pid = dead_pid()
    # Another host's process cannot be probed from here: not gone, its lease decides
    assert claim_holder_pid(f"lambda-sandbox-7:{pid}:0badcafe") is None
    assert claim_holder_gone(f"lambda-sandbox-7:{pid}:0badcafe") is False
    # A running process (init, pid 1, exists on every POSIX host) is not gone
    assert claim_holder_gone(f"{socket.gethostname()}:1:0badcafe") is False
    # Names not made by claim_owner() (tests, operators) are not gone
    for owner in ("other-worker", f"{socket.gethostname()}:x:1", f"{socket.gethostname()}:{pid}"):
        assert claim_holder_gone(owner) is False
