"""``longdoc watch DIR``: a local folder acting as the bucket's ``incoming/`` prefix.

Files that appear or change in ``DIR`` (sub-folders included, except ``DIR/failed/``) are
copied into the blob store under ``incoming/<relative path>`` and handed to the real
ingest handler in the event shape AWS delivers (an SQS message wrapping an S3
``ObjectCreated`` notification, :func:`longdoc.local.lambda_runtime.s3_event_for`). File-system events
come from the ``watchdog`` library; a burst of events for one file (editors and copies
write in several steps) is processed once, after :data:`SETTLE_SECONDS` of quiet.

A file is taken only when it is whole (issue 27): its size and modification time are the same
at both ends of the settle window, and its format's own check passes (:mod:`.whole`: a PDF ends
in its ``%%EOF`` trailer and PDFium opens it; a ZIP package such as a DOCX has its
end-of-central-directory record and :mod:`zipfile` opens it). While it waits, ``notify`` gets
``waiting for X to be whole (N s: why)`` every :data:`WAIT_NOTICE_SECONDS`. A file that never becomes
whole is taken after :data:`INCOMPLETE_WAIT_SECONDS` (600 s), and one that can never be whole (a
``.pdf`` without a ``%PDF-`` header) at once; both then fail with their reason.
A change to a sidecar ``<file>.metadata.json`` while watching re-delivers ``<file>``, so the new
metadata is applied (same bytes: the chunks' metadata is rewritten, nothing re-parsed).

Outcomes per file:
- ingested (or already ingested: the same bytes are a no-op, and a file whose bytes were
  already handled in this session is not even handed over again);
- the document itself is unusable (FAILED in the registry): the file is moved to
  ``DIR/failed/`` beside ``<name>.reason.txt`` holding the reason; a name already taken there
  gets a suffix (``report.20261201T101500Z-2.pdf``), so nothing in ``failed/`` is overwritten;
- a transient failure (embedding or index unavailable): reported, the file stays where it
  is and is tried again when it changes or on the next run;
- a bad sidecar edit for bytes already ``READY``: reported (``RETRY``), the document stays where it is
  and its version keeps its chunks and earlier metadata; the fixed sidecar is applied when it changes.
"""

from __future__ import annotations

import hashlib
import queue
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longdoc.ingest.metadata import METADATA_SUFFIX
from longdoc.local.ingest_runner import LocalIngest, endorsement_last
from longdoc.local.whole import TRAILER_WINDOW, Wholeness, is_whole, wholeness

__all__ = ["INCOMPLETE_WAIT_SECONDS", "SETTLE_SECONDS", "TRAILER_WINDOW", "Outcome", "Watcher", "is_whole",
           "reason_path", "signature", "unique_target"]

SETTLE_SECONDS = 2.0
"""Quiet time after the last file-system event for a file before it is processed; its size and
mtime must not change over it (0.5 s took files still being copied, issue 27)."""
INCOMPLETE_WAIT_SECONDS = 600.0
"""Longest wait (seconds) for a stable file to become whole (:mod:`.whole`) before it is handed over
as it is (and fails with its reason)."""
WAIT_NOTICE_SECONDS = 10.0
"""How often (seconds) the ``waiting for X to be whole (N s)`` line is repeated while waiting."""

FAILED_DIR = "failed"
REASON_SUFFIX = ".reason.txt"


@dataclass(frozen=True)
class Outcome:
    """What happened to one file: ``status`` is ``READY``, ``DUPLICATE``, ``FAILED``, ``RETRY`` or ``DELETED``."""

    path: Path
    status: str
    doc_id: str | None = None
    doc_version: str | None = None
    pages: int = 0
    chunks: int = 0
    reused: int = 0
    reason: str | None = None
    change: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON view: ``{"path", "status", "doc_id", "doc_version", "pages", "chunks", "reused", "reason",
        "change"}``; ``change`` (READY only, :attr:`~longdoc.local.ingest_runner.LocalIngest.change`):
        ``ingested``, ``metadata updated``, ``re-chunked`` or ``unchanged``."""
        return {"path": str(self.path), "status": self.status, "doc_id": self.doc_id,
                "doc_version": self.doc_version, "pages": self.pages, "chunks": self.chunks,
                "reused": self.reused, "reason": self.reason, "change": self.change}


def signature(path: Path) -> tuple[int, int] | None:
    """``(size in bytes, mtime in ns)`` of a file, or None when it is gone."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


def unique_target(target: Path) -> Path:
    """``target``, or when it (or its reason file) exists, ``<stem>.<UTC time>-<n><suffix>`` beside it
    for the first free ``n``: a file moved to ``failed/`` never replaces another."""
    if not target.exists() and not reason_path(target).exists():
        return target
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    n = 1
    while True:
        candidate = target.with_name(f"{target.stem}.{stamp}-{n}{target.suffix}")
        if not candidate.exists() and not reason_path(candidate).exists():
            return candidate
        n += 1


def reason_path(target: Path) -> Path:
    """Where the reason for a failed file ``target`` is written: ``<name>.reason.txt`` beside it, or, when
    that name would pass the file system's 255 bytes a name, ``<first 200 bytes of the name>-<8 hex of
    its SHA-256>.reason.txt`` (names of up to 255 bytes are legal, the suffix may not fit)."""
    name = target.name + REASON_SUFFIX
    if len(name.encode("utf-8")) <= 255:
        return target.with_name(name)
    head = target.name.encode("utf-8")[:200].decode("utf-8", errors="ignore")
    return target.with_name(f"{head}-{hashlib.sha256(target.name.encode('utf-8')).hexdigest()[:8]}{REASON_SUFFIX}")


class Watcher:
    """Feeds files of ``root`` to the ingest handler; see the module docstring.

    ``report(outcome)`` is called once per processed file (the CLI prints it); ``notify(line)`` with
    the ``waiting for X to be whole (N s: why)`` lines of :meth:`serve` (the CLI prints them to stderr).
    """

    def __init__(self, root: Path, report: Callable[[Outcome], None] | None = None,
                 notify: Callable[[str], None] | None = None):
        """Prepare (nothing is read until :meth:`run_once` or :meth:`serve`)."""
        self.root = Path(root).resolve()
        self.failed_dir = self.root / FAILED_DIR
        self.report = report or (lambda outcome: None)
        self.notify = notify or (lambda line: None)
        self._seen: dict[Path, str] = {}
        self._lock = threading.Lock()

    def candidates(self) -> list[Path]:
        """Files under ``root`` to ingest, sorted, wordings before endorsements
        (:func:`~longdoc.local.ingest_runner.endorsement_last`; hidden files and ``failed/`` left out)."""
        return sorted(sorted(p for p in self.root.rglob("*") if p.is_file() and self._wanted(p)),
                      key=endorsement_last)

    def _wanted(self, path: Path) -> bool:
        try:
            relative = path.resolve().relative_to(self.root)
        except ValueError:
            return False
        parts = relative.parts
        if parts and parts[-1].endswith(METADATA_SUFFIX):
            return False  # a metadata sidecar travels with its document, it is not one
        return bool(parts) and parts[0] != FAILED_DIR and not any(p.startswith(".") for p in parts)

    def run_once(self, settle: float = SETTLE_SECONDS) -> list[Outcome]:
        """Process every file present now that is whole; returns the outcomes in :meth:`candidates` order.

        When some file was modified less than ``settle`` seconds ago, the run first waits out the rest
        of that window (once, for all files). A file that changed meanwhile, or that is not whole
        (:func:`~.whole.wholeness`: a PDF with no ``%%EOF`` yet, an empty file) and was modified less
        than :data:`INCOMPLETE_WAIT_SECONDS` ago, is left where it is as ``RETRY`` (still arriving:
        the next run takes it), never moved to ``failed/``. One not whole for longer is taken as it
        is and fails with its reason, as :meth:`serve` does."""
        paths = self.candidates()
        seen = {p: signature(p) for p in paths}
        now = time.time()
        ages = [now - s[1] / 1e9 for s in seen.values() if s is not None]
        wait = max((settle - age for age in ages if 0 <= age < settle), default=0.0)
        if wait > 0:
            time.sleep(wait)
        return [self._guarded(p, lambda q: self._once(q, seen[q])) for p in paths]

    def _once(self, path: Path, seen: tuple[int, int] | None) -> Outcome:
        """:meth:`process` ``path`` when it has arrived whole (see :meth:`run_once`); else ``RETRY``."""
        current = signature(path)
        if current is not None and current != seen:
            return self._left(path, "still being written")
        age = time.time() - current[1] / 1e9 if current is not None else INCOMPLETE_WAIT_SECONDS
        found = wholeness(path) if current is not None and self._wanted(path) else Wholeness("whole")
        if found.state == "incomplete" and age < INCOMPLETE_WAIT_SECONDS:
            return self._left(path, f"not whole yet ({found.reason}); modified {age:.0f} s ago, taken as it "
                                    f"is once unchanged for {INCOMPLETE_WAIT_SECONDS:.0f} s")
        return self.process(path)

    def _left(self, path: Path, why: str) -> Outcome:
        """The ``RETRY`` outcome (reported) of a file left in place for the next run."""
        outcome = Outcome(path, "RETRY", reason=f"{why}: left in place for the next run")
        self.report(outcome)
        return outcome

    def _guarded(self, path: Path, action: Callable[[Path], Outcome] | None = None) -> Outcome:
        """``action(path)`` (default :meth:`process`), with an unexpected error reported as RETRY (the
        file stays): one bad file never stops the others."""
        try:
            return (action or self.process)(path)
        except Exception as exc:
            outcome = Outcome(path, "RETRY", reason=f"{type(exc).__name__}: {exc}")
            self.report(outcome)
            return outcome

    def process(self, path: Path) -> Outcome:
        """Hand one file to the ingest handler and act on the outcome (see module docstring)."""
        from longdoc import wiring
        from longdoc.core.documents import INCOMING_PREFIX
        from longdoc.core.errors import DocumentError
        from longdoc.ingest.ids import resolve_doc_id, version_from_sha256
        from longdoc.local.ingest_runner import ingest_file, read_sidecar

        path = Path(path).resolve()
        data = path.read_bytes()
        sidecar = read_sidecar(path)
        digest = hashlib.sha256(data).hexdigest() + hashlib.sha256(sidecar or b"").hexdigest()[:16]
        with self._lock:
            if self._seen.get(path) == digest:
                outcome = Outcome(path, "DUPLICATE")
                self.report(outcome)
                return outcome
            self._seen[path] = digest
        name = path.relative_to(self.root).as_posix()
        try:
            done = ingest_file(name, data, sidecar)
        except DocumentError as exc:  # a bad sidecar: nothing was stored
            doc_id = resolve_doc_id(INCOMING_PREFIX + name, wiring.state_store())
            version = version_from_sha256(digest[:64])
            ready = wiring.state_store().get_document(doc_id, version)
            if ready is not None and ready.status == "READY":  # the document is fine: only the sidecar edit is bad
                with self._lock:
                    self._seen.pop(path, None)  # a fixed sidecar is taken again
                outcome = Outcome(path, "RETRY", doc_id, version, ready.pages, ready.chunks,
                                  reason=f"{exc.reason}; the document stays here, READY with its earlier metadata: "
                                         "fix the sidecar")
            else:
                self._move_to_failed(path, exc.reason)
                outcome = Outcome(path, "FAILED", doc_id, version, reason=exc.reason)
            self.report(outcome)
            return outcome
        outcome = self._outcome(path, done)
        self.report(outcome)
        return outcome

    def _outcome(self, path: Path, done: LocalIngest) -> Outcome:
        """READY, RETRY (a transient failure or a version still being ingested elsewhere) or FAILED (moved)."""
        record = done.record
        if record is not None and record.status == "READY" and done.failure is None:
            return Outcome(path, "READY", done.doc_id, record.doc_version, record.pages, record.chunks, record.reused,
                           change=done.change)
        if done.failure is not None or record is None or record.status == "INGESTING":
            with self._lock:
                self._seen.pop(path, None)  # try again on the next change or run
            reason = done.failure or (record.reason if record is not None and record.reason else
                                      "still being ingested elsewhere; will retry")
            return Outcome(path, "RETRY", done.doc_id, done.doc_version, reason=reason)
        reason = record.reason or record.status
        self._move_to_failed(path, reason)
        return Outcome(path, "FAILED", done.doc_id, record.doc_version, reason=reason)

    def remove(self, path: Path) -> Outcome:
        """A watched file was deleted: as S3's ``ObjectRemoved`` on AWS, its staged object is deleted
        and the ingest handler gets the removal event (vectors dropped, versions DELETED).

        Returns the ``DELETED`` outcome (also reported). Raises ``ValueError`` for a path outside
        the watched folder; blob-store and handler errors propagate (callers report them as RETRY)."""
        from longdoc import wiring
        from longdoc.core.documents import INCOMING_PREFIX
        from longdoc.ingest.ids import resolve_doc_id
        from longdoc.local.engine import LocalContext
        from longdoc.local.lambda_runtime import load_handler, s3_event_for

        path = Path(path).resolve()
        key = INCOMING_PREFIX + path.relative_to(self.root).as_posix()
        doc_id = resolve_doc_id(key, wiring.state_store())
        wiring.blob_store().delete(key)
        load_handler("ingest").handler(s3_event_for(key, 0, event_name="ObjectRemoved:Delete"),
                                      LocalContext(function_name="longdoc-local-ingest"))
        with self._lock:
            self._seen.pop(path, None)
        outcome = Outcome(path, "DELETED", doc_id)
        self.report(outcome)
        return outcome

    def _move_to_failed(self, path: Path, reason: str) -> None:
        """Move ``path`` to ``failed/`` (same relative path, :func:`unique_target` when taken) and write
        ``<name>.reason.txt`` beside it. Its sidecar ``<name>.metadata.json``, when there, goes with it
        (named after the moved file), so failed/ holds the pair to fix and move back together and no
        orphan sidecar is left in the folder."""
        target = self.failed_dir / path.relative_to(self.root)
        target.parent.mkdir(parents=True, exist_ok=True)
        target = unique_target(target)
        shutil.move(str(path), str(target))
        sidecar = path.with_name(path.name + METADATA_SUFFIX)
        try:
            if sidecar.is_file():
                shutil.move(str(sidecar), str(target.with_name(target.name + METADATA_SUFFIX)))
        except OSError:  # a name too long for the suffix has no sidecar (or it stays where it was)
            pass
        reason_path(target).write_text(reason + "\n", encoding="utf-8")
        with self._lock:
            self._seen.pop(path, None)

    def _settled(self, path: Path) -> None:
        """Act on a path that has been quiet for the settle time: ingest it, or remove a document
        whose file was ingested by this watcher and is gone now. One bad file never stops the watcher."""
        if path.is_file() and self._wanted(path):
            self._guarded(path)
        elif not path.exists() and path.resolve() in self._seen:
            self._guarded(path, self.remove)

    def serve(self, stop: threading.Event, settle: float = SETTLE_SECONDS) -> None:
        """Watch ``root`` until ``stop`` is set, the files already there included.

        Created, modified and moved-in files (and the documents of changed sidecars) are queued
        by a ``watchdog`` observer and processed one at a time in this thread once whole
        (:meth:`_due`): unchanged over ``settle`` seconds and whole (:func:`~.whole.wholeness`). A file
        this watcher ingested that is deleted (or moved away) is removed (:meth:`remove`).
        """
        from watchdog.events import FileSystemEvent, FileSystemEventHandler
        from watchdog.observers import Observer

        pending: queue.Queue[Path] = queue.Queue()

        class Enqueue(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                if event.is_directory or event.event_type not in ("created", "modified", "moved", "closed", "deleted"):
                    return
                if event.event_type == "moved":  # moved away: its old name is gone
                    pending.put(_document_of(Path(str(event.src_path))))
                target = getattr(event, "dest_path", "") or event.src_path
                pending.put(_document_of(Path(str(target))))

        observer = Observer()
        observer.schedule(Enqueue(), str(self.root), recursive=True)
        observer.start()
        try:
            now = time.monotonic()
            due: dict[Path, _Pending] = {p: _Pending(now + settle, signature(p), now) for p in self.candidates()}
            while not stop.is_set():
                try:
                    path = pending.get(timeout=0.05)
                    now = time.monotonic()
                    first = due[path].first if path in due else now
                    due[path] = _Pending(now + settle, signature(path), first)
                except queue.Empty:
                    pass
                now = time.monotonic()
                for path in [p for p, t in due.items() if t.deadline <= now]:
                    later = self._due(path, due.pop(path), now, settle)
                    if later is not None:
                        due[path] = later
        finally:
            observer.stop()
            observer.join(timeout=5)

    def _due(self, path: Path, waiting: _Pending, now: float, settle: float) -> _Pending | None:
        """Process ``path`` when it is whole (see the module docstring); else the new wait for it."""
        current = signature(path)
        if current is not None and current != waiting.seen:
            return _Pending(now + settle, current, waiting.first, waiting.noticed)  # still being written
        found = wholeness(path) if current is not None and self._wanted(path) else Wholeness("whole")
        waited = now - waiting.first
        if found.state == "incomplete" and waited < INCOMPLETE_WAIT_SECONDS:
            noticed = waiting.noticed
            if noticed is None or now - noticed >= WAIT_NOTICE_SECONDS:
                self.notify(f"waiting for {path} to be whole ({waited:.0f} s: {found.reason}; "
                            f"taken as it is after {INCOMPLETE_WAIT_SECONDS:.0f} s)")
                noticed = now
            return _Pending(now + settle, current, waiting.first, noticed)
        if found.state == "incomplete":
            self.notify(f"{path} is still not whole after {waited:.0f} s ({found.reason}); taking it as it is")
        self._settled(path)
        return None


@dataclass(frozen=True)
class _Pending:
    """A path waiting to be processed: when to look again (monotonic seconds), its :func:`signature`
    then, and when it was first queued."""

    deadline: float
    seen: tuple[int, int] | None
    first: float
    noticed: float | None = None


def _document_of(path: Path) -> Path:
    """The document a path stands for: ``x.pdf`` for its sidecar ``x.pdf.metadata.json``, else itself."""
    if path.name.endswith(METADATA_SUFFIX) and len(path.name) > len(METADATA_SUFFIX):
        return path.with_name(path.name[: -len(METADATA_SUFFIX)])
    return path
