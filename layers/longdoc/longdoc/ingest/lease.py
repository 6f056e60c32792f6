"""The ingest lease (claim) on a document version: one worker embeds a new version, the others stop.

S3 may notify twice and an SQS standard queue delivers at least once, so two workers can
be handed the same new object at the same moment; without a claim both would embed it
(twice the Voyage calls) and, locally, both would write the same rows. Before anything is
registered or embedded the pipeline takes the version's claim with one conditional write
(:meth:`longdoc.core.ports.StateStore.claim_version`); a worker that does not get it stops
with :class:`VersionClaimed`.

The claim is a lease of :data:`CLAIM_LEASE_SECONDS`, renewed by its holder before every
embedding call and upsert slice once a third of it has passed, and released when the
attempt ends (READY, FAILED or stopped at the deadline). A holder killed without releasing
(Lambda timeout, ``kill -9``) blocks the version for at most one lease; then any delivery
takes it over and resumes from the recorded progress. Locally (one machine, the SQLite
store) a claim whose holder process is gone is taken over at once
(:func:`claim_holder_gone`); on AWS only the lease decides, as a Lambda sandbox's host
name and pid say nothing about another sandbox.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from longdoc.core.errors import VersionClaimed
from longdoc.core.ports import StateStore

CLAIM_LEASE_SECONDS = 120.0
"""Seconds a claim lasts without renewal (renewed after a third of it, at the next embedding call or upsert slice)."""


def claim_owner() -> str:
    """A unique owner name for one ingest attempt: ``{host}:{pid}:{8 hex}`` (the host and pid help operators)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def claim_holder_pid(owner: str) -> int | None:
    """The process id in a :func:`claim_owner` name when it names a process of this host, else None."""
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return None
    return int(parts[1])


def process_gone(pid: int) -> bool:
    """Whether process ``pid`` of this host no longer runs: absent, or a zombie (exited, not yet reaped).

    Probed with ``os.kill(pid, 0)``, which sends nothing: ``ProcessLookupError`` means no such
    process (POSIX ``kill(2)``). A zombie still answers that probe, so on Linux its state letter in
    ``/proc/<pid>/stat`` (``Z``; proc(5)) is read too. False for a process that exists (also
    another user's: ``PermissionError``), for this process, and off POSIX (where ``os.kill`` would
    signal). A pid reused since by another process counts as running.
    """
    if pid == os.getpid() or os.name != "posix":
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # PermissionError: it exists under another user
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:  # no /proc (macOS), or it exited meanwhile: the probe above said it was there
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def claim_holder_gone(owner: str) -> bool:
    """Whether ``owner`` (a :func:`claim_owner` name) is a process of this host that no longer runs
    (:func:`process_gone`: absent or a zombie). False for another host, a name not made by
    :func:`claim_owner`, this process, a process that exists, and off POSIX. A pid reused since
    by another process counts as running, so that claim waits for its lease as before.
    """
    pid = claim_holder_pid(owner)
    return pid is not None and process_gone(pid)


class VersionClaim:
    """The claim one ingest attempt holds on ``(doc_id, doc_version)``; see the module docstring.

    Creating it takes the claim or raises :class:`VersionClaimed`. ``lease_seconds`` is the
    lease length; ``clock`` returns monotonic seconds (tests pass a fake).
    """

    def __init__(self, state: StateStore, doc_id: str, doc_version: str, *,
                 lease_seconds: float = CLAIM_LEASE_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.state, self.doc_id, self.doc_version = state, doc_id, doc_version
        self.lease_seconds = lease_seconds
        self.owner = claim_owner()
        self._clock = clock
        self._taken_at = clock()
        if not state.claim_version(doc_id, doc_version, self.owner, lease_seconds):
            raise VersionClaimed(doc_id, doc_version, lease_seconds)

    def renew(self) -> None:
        """Renew the lease once a third of it has passed; raises :class:`VersionClaimed` if another worker took it."""
        if self._clock() - self._taken_at < self.lease_seconds / 3:
            return
        self._taken_at = self._clock()
        if not self.state.claim_version(self.doc_id, self.doc_version, self.owner, self.lease_seconds):
            raise VersionClaimed(self.doc_id, self.doc_version, self.lease_seconds)

    def release(self) -> None:
        """Give the claim up (a claim taken over by another worker stays theirs)."""
        self.state.release_version(self.doc_id, self.doc_version, self.owner)
