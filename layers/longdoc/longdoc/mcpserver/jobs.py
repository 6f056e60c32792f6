"""Work a tool call may not finish within its bound: run on a thread of the server process, answered by id.

Extraction runs and summaries already run elsewhere (a Step Functions execution, or locally a
worker process) and are only started by a call. Ingesting a file and triaging a claim run in this
process: a call starts them on a thread and waits at most :data:`WAIT_SECONDS`; work done by then
is answered in full, longer work with its id, polled afterwards (``list_documents`` for an ingest,
``get_triage`` for a triage). A triage's outcome is kept in the blob store under
:data:`TRIAGE_PREFIX`, so it outlives the call and can be read by another server process on the
same stores.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from longdoc.core.errors import NotFound
from longdoc.core.ports import BlobStore
from longdoc.core.text import one_line

WAIT_SECONDS = 15.0
"""How long a tool call waits for in-process work before it answers with the work's id (seconds):
below the 20 s we allow a call, and well below clients' own request timeouts (Claude Desktop and
the SDK's client wait far longer), so no call is held open for long work."""

TRIAGE_PREFIX = "mcp/triage/"
"""Blob-store prefix of triage outcomes: ``mcp/triage/<triage_id>.json``."""


@dataclass
class Job:
    """One piece of work on a thread: ``result`` or ``error`` once ``done`` is set."""

    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None
    error: BaseException | None = None


class Jobs:
    """The in-process jobs of one server, by key (a key already running is joined, never started twice)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[str, Job] = {}

    def run(self, key: str, work: Callable[[], Any], wait_seconds: float = WAIT_SECONDS) -> Job:
        """Start ``work()`` on a daemon thread under ``key`` (or join the job of that key still running)
        and wait at most ``wait_seconds`` for it; returns the job, ``done`` set or not."""
        with self._lock:
            job = self._running.get(key)
            if job is None:
                job = self._running[key] = Job()
                threading.Thread(target=self._work, args=(key, job, work), name=f"mcp-job-{key}"[:60],
                                 daemon=True).start()
        job.done.wait(wait_seconds)
        return job

    def _work(self, key: str, job: Job, work: Callable[[], Any]) -> None:
        try:
            job.result = work()
        except BaseException as exc:  # noqa: BLE001 - kept for the caller, who reports it as a tool error
            job.error = exc
        finally:
            with self._lock:
                self._running.pop(key, None)
            job.done.set()


def new_triage_id() -> str:
    """A fresh triage id: ``tri-`` + 16 hex characters."""
    return f"tri-{uuid.uuid4().hex[:16]}"


def _triage_key(triage_id: str) -> str:
    return f"{TRIAGE_PREFIX}{triage_id}.json"


def save_triage(blobs: BlobStore, triage_id: str, status: str, result: dict[str, Any] | None = None,
                error: str | None = None) -> dict[str, Any]:
    """Store a triage's outcome (``status`` RUNNING, SUCCEEDED or FAILED, with its result or one-line error); returns it."""
    view: dict[str, Any] = {"triage_id": triage_id, "status": status}
    if result is not None:
        view["result"] = result
    if error is not None:
        view["error"] = one_line(error, 500)
    blobs.put(_triage_key(triage_id), json.dumps(view, ensure_ascii=False).encode("utf-8"))
    return view


def load_triage(blobs: BlobStore, triage_id: str) -> dict[str, Any]:
    """A stored triage outcome; raises :class:`NotFound` for an unknown id (ids are ``tri-`` + hex, never paths)."""
    if not triage_id.startswith("tri-") or not triage_id[4:].isalnum():
        raise NotFound(f"triage {triage_id} does not exist")
    try:
        data = blobs.get(_triage_key(triage_id))
    except NotFound:
        raise NotFound(f"triage {triage_id} does not exist") from None
    view: dict[str, Any] = json.loads(data)
    return view
