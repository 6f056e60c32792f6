"""One ingest attempt past parsing: its registry writes, its deadline, and what happens when its source goes.

Every registry write of an attempt is conditional (:meth:`~longdoc.core.ports.StateStore.replace_document`):
it lands only over the entry the attempt registered over or last wrote. A refused write
means another writer came in between:

- the source object's removal marked the version ``DELETED``
  (:mod:`longdoc.ingest.removal`): the attempt removes what it wrote (vectors always; the
  chunk list and embedding cache unless the version was ``DELETED`` before this attempt and
  may have been cited) and stops with :class:`SourceRemoved`, so a removed file never ends
  ``READY``. When the object is back by then with the same bytes (removed and uploaded
  again), it stops with :class:`IngestRestart` instead, and the redelivery ingests it anew;
- anything else (the claim taken over by another worker that wrote since): it stops with
  :class:`~longdoc.core.errors.VersionClaimed`, leaving the entry to that worker.

Before registering ``READY`` the attempt also checks that the object still exists: a
removal whose event has not been handled yet (S3 events may arrive late) is found here,
what the attempt wrote is removed, and the version is marked ``DELETED`` by the attempt.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NoReturn

from longdoc.core.clock import utc_now
from longdoc.core.documents import chunks_key
from longdoc.core.errors import IngestDeadline, IngestRestart, NotFound, SourceRemoved, VersionClaimed
from longdoc.core.models import Chunk, DocumentRecord
from longdoc.core.ports import BlobStore, Embedder, OcrEngine, StateStore, VectorIndex
from longdoc.ingest.lease import VersionClaim
from longdoc.ingest.embeddings import EmbeddingCache
from longdoc.ingest.source import IngestSource


@dataclass
class IngestAttempt:
    """The state of one ingest attempt of ``source``: the entry it last wrote, counters, its claim.

    ``prior`` is the version's entry before this attempt registered (None: a new version);
    ``record`` is set by :meth:`register`. ``time_left()`` returns the invocation's remaining
    seconds (None: no deadline); fewer than ``deadline_margin`` before a step stops it.
    """

    source: IngestSource
    deps: IngestDeps
    chunks: list[Chunk]
    prior: DocumentRecord | None
    time_left: Callable[[], float] | None
    deadline_margin: float
    started: float
    timings: dict[str, float]
    claim: VersionClaim | None = None
    resuming: bool = False
    record: DocumentRecord = field(init=False)
    embedded: int = 0
    reused: int = 0
    tokens: int = 0

    def register(self, record: DocumentRecord, resuming: bool) -> None:
        """Write the attempt's first entry over :attr:`prior` (conditional; see the module docstring)."""
        self.resuming = resuming
        self.record = self._write(record, self.prior)

    def save(self, **changes: object) -> None:
        """Save the entry with ``changes``, a fresh ``updated_at`` and the timings so far (conditional).

        Raises :class:`SourceRemoved`, :class:`IngestRestart` or :class:`VersionClaimed` when
        another writer changed the entry since this attempt last wrote it.
        """
        self.record = self._write(self.record.model_copy(update={
            **changes, "updated_at": utc_now(), "timings": {k: f"{v:.3f}" for k, v in self.timings.items()}}),
            self.record)

    def check_time(self, step: str) -> None:
        """Renew the claim; raise :class:`IngestDeadline` (progress named) when fewer than the margin's seconds are left.

        Raises :class:`~longdoc.core.errors.VersionClaimed` when another worker took the claim over.
        """
        if self.claim is not None:
            self.claim.renew()
        if self.time_left is not None and self.time_left() < self.deadline_margin:
            n = len(self.chunks)
            raise IngestDeadline(f"less than {self.deadline_margin:.0f} s left before {step}; progress saved: "
                                 f"{self.record.embedded}/{n} embedded, {self.record.upserted}/{n} upserted")

    def finish(self, **changes: object) -> None:
        """Register ``READY`` with ``changes``, unless the source object is gone: then remove it (:class:`SourceRemoved`)."""
        if not self.deps.blobs.exists(self.source.key):
            self.discard()
            gone = self.record.model_copy(update={
                "status": "DELETED", "reason": f"source object {self.source.key} removed during ingest",
                "stage": None, "upserted": 0, "updated_at": utc_now()})
            self.deps.state.replace_document(gone, self.record)  # refused: the removal marked it first
            raise SourceRemoved(self.source.key, self.source.doc_id, self.source.version)
        self.save(**changes)

    def discard(self) -> None:
        """Remove what this attempt wrote: the version's vectors, and its chunk list and embedding cache
        unless the version was ``DELETED`` before (a version once ``READY`` keeps them for past citations)."""
        source, deps = self.source, self.deps
        deps.index.delete_document(source.doc_id, source.version)
        if self.prior is None or self.prior.status != "DELETED":
            deps.blobs.delete(chunks_key(source.doc_id, source.version))
            EmbeddingCache(deps.blobs, deps.embedder, source.doc_id, source.version).delete()

    def _write(self, record: DocumentRecord, expected: DocumentRecord | None) -> DocumentRecord:
        """``replace_document(record, expected)``; on refusal, :meth:`_stop`."""
        written = self.deps.state.replace_document(record, expected)
        if written is None:
            self._stop()
        return written

    def _stop(self) -> NoReturn:
        """Another writer changed the entry: stop as the module docstring says."""
        source = self.source
        stored = self.deps.state.get_document(source.doc_id, source.version)
        if stored is None or stored.status != "DELETED":
            lease = self.claim.lease_seconds if self.claim is not None else 0.0
            raise VersionClaimed(source.doc_id, source.version, lease)
        if self._object_is_back():
            raise IngestRestart(f"{source.key}: removed and uploaded again while version {source.version} "
                                f"was being ingested; the next delivery ingests it again")
        self.discard()
        raise SourceRemoved(source.key, source.doc_id, source.version)

    def _object_is_back(self) -> bool:
        """Whether the object at the source key holds this version's bytes again."""
        try:
            data = self.deps.blobs.get(self.source.key)
        except NotFound:
            return False
        return hashlib.sha256(data).hexdigest() == self.source.sha256


@dataclass(frozen=True)
class IngestDeps:
    """The ports an ingest writes through: chunk lists and caches, registry, embedder, index, and the
    OCR engine for scanned pages (None: OCR off, such pages are only listed)."""

    blobs: BlobStore
    state: StateStore
    embedder: Embedder
    index: VectorIndex
    ocr: OcrEngine | None = None
