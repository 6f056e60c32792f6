"""StateStore in one SQLite file (local mode): :class:`SqliteStateStore`."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from longdoc.adapters.state.collection_index import SqliteRunsAndCollections
from longdoc.adapters.state.leases import SqliteVersionClaims
from longdoc.adapters.state.common import conflict_error, lease_lost_error, now_iso, parse_checkpoint, same_entry
from longdoc.ingest.lease import claim_holder_gone
from longdoc.core.models import DocumentRecord
from longdoc.core.records import Checkpoint, Extraction, RunLease, RunRecord

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT NOT NULL, doc_version TEXT NOT NULL, status TEXT NOT NULL,
    body TEXT NOT NULL, updated_at TEXT NOT NULL,
    PRIMARY KEY (doc_id, doc_version));
CREATE TABLE IF NOT EXISTS latest (
    doc_id TEXT PRIMARY KEY, doc_version TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, status TEXT NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS checkpoints (
    run_id TEXT PRIMARY KEY, version INTEGER NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS extractions (
    run_id TEXT NOT NULL, clause_type TEXT NOT NULL, seq INTEGER NOT NULL,
    body TEXT NOT NULL, created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, clause_type));
CREATE TABLE IF NOT EXISTS run_leases (
    run_id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at REAL NOT NULL, renewed_at TEXT NOT NULL,
    generation INTEGER NOT NULL DEFAULT 0);
"""


class SqliteStateStore(SqliteVersionClaims, SqliteRunsAndCollections):
    """StateStore in one SQLite file, safe to use from several threads and processes.

    Each operation opens its own connection (``timeout=30`` seconds of waiting for a
    lock), so instances can be shared between threads. The database runs in WAL mode
    (readers do not block the writer); every write is one ``BEGIN IMMEDIATE``
    transaction. Checkpoint saves are compare-and-set statements (see
    :meth:`save_checkpoint`). Local checkpoints do not expire.
    """

    def __init__(self, path: Path) -> None:
        """Open (creating if needed) the database file at ``path`` and its tables."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(_SCHEMA)
            columns = {row[1] for row in conn.execute("PRAGMA table_info(run_leases)")}
            if "generation" not in columns:  # a store made before leases had a generation
                conn.execute("ALTER TABLE run_leases ADD COLUMN generation INTEGER NOT NULL DEFAULT 0")

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """Yield a fresh autocommit connection and close it afterwards."""
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            yield conn
        finally:
            conn.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """Yield a connection inside ``BEGIN IMMEDIATE``; commit on success, roll back on error."""
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _read_one(self, sql: str, *params: Any) -> tuple[Any, ...] | None:
        """Run one query and return its first row (or None)."""
        with self._connect() as conn:
            row: tuple[Any, ...] | None = conn.execute(sql, params).fetchone()
        return row

    def _read_bodies(self, sql: str, *params: Any) -> list[str]:
        """Run one query whose rows are ``(body,)`` and return the JSON bodies in row order."""
        with self._connect() as conn:
            return [body for (body,) in conn.execute(sql, params).fetchall()]

    @staticmethod
    def _put_document(conn: sqlite3.Connection, record: DocumentRecord) -> None:
        """Create or replace ``(doc_id, doc_version)``, point the document's latest at it and index its collection (inside a write)."""
        conn.execute("INSERT OR REPLACE INTO documents VALUES (?, ?, ?, ?, ?)",
                     (record.doc_id, record.doc_version, record.status, record.model_dump_json(), record.updated_at))
        conn.execute("INSERT OR REPLACE INTO latest VALUES (?, ?)", (record.doc_id, record.doc_version))
        SqliteRunsAndCollections.index_document(conn, record)

    def put_document(self, record: DocumentRecord) -> None:
        """Create or replace ``(doc_id, doc_version)`` and point the document's latest at it."""
        with self._write() as conn:
            self._put_document(conn, record)

    def replace_document(self, record: DocumentRecord, expected: DocumentRecord | None) -> DocumentRecord | None:
        """:meth:`put_document` only while the stored entry has ``expected``'s status and revision (None: absent).

        The read and the write share one ``BEGIN IMMEDIATE`` transaction, so no other
        writer comes between them. Returns the record written (``revision`` one up) or None.
        """
        written = record.model_copy(update={"revision": (expected.revision if expected else 0) + 1})
        with self._write() as conn:
            row = conn.execute("SELECT body FROM documents WHERE doc_id = ? AND doc_version = ?",
                               (record.doc_id, record.doc_version)).fetchone()
            stored = DocumentRecord.model_validate_json(row[0]) if row else None
            if not same_entry(stored, expected):
                return None
            self._put_document(conn, written)
        return written

    def get_document(self, doc_id: str, doc_version: str | None = None) -> DocumentRecord | None:
        """Return one version of a document (the latest when ``doc_version`` is None) or None."""
        if doc_version is None:
            row = self._read_one(
                "SELECT d.body FROM latest l JOIN documents d "
                "ON d.doc_id = l.doc_id AND d.doc_version = l.doc_version WHERE l.doc_id = ?",
                doc_id,
            )
        else:
            row = self._read_one(
                "SELECT body FROM documents WHERE doc_id = ? AND doc_version = ?",
                doc_id, doc_version,
            )
        return DocumentRecord.model_validate_json(row[0]) if row else None

    def list_document_versions(self, doc_id: str) -> list[DocumentRecord]:
        """Return every version of ``doc_id``, ordered by ``updated_at`` then version."""
        bodies = self._read_bodies(
            "SELECT body FROM documents WHERE doc_id = ? ORDER BY updated_at, doc_version", doc_id)
        return [DocumentRecord.model_validate_json(body) for body in bodies]

    def list_document_ids(self) -> list[str]:
        """Every registered doc_id, sorted (collections are read from their documents' metadata)."""
        with self._connect() as conn:
            return [doc_id for (doc_id,) in conn.execute("SELECT doc_id FROM latest ORDER BY doc_id").fetchall()]

    @staticmethod
    def _check_fence(conn: sqlite3.Connection, run_id: str, fence: int | None) -> None:
        """Inside a write: raise :class:`RunLeaseLost` unless ``fence`` is None or the lease's generation."""
        if fence is None:
            return
        row = conn.execute("SELECT owner, expires_at, renewed_at, generation FROM run_leases WHERE run_id = ?",
                           (run_id,)).fetchone()
        if row is None or row[3] != fence:
            lease = None if row is None else RunLease(run_id=run_id, owner=row[0], expires_at=row[1],
                                                      renewed_at=row[2], generation=row[3])
            raise lease_lost_error(run_id, fence, lease)

    def put_run(self, run: RunRecord, fence: int | None = None) -> None:
        """Create or replace a run record (fenced: see :meth:`longdoc.core.ports.StateStore.put_run`)."""
        with self._write() as conn:
            self._check_fence(conn, run.run_id, fence)
            conn.execute(
                "INSERT OR REPLACE INTO runs VALUES (?, ?, ?)",
                (run.run_id, run.status, run.model_dump_json()),
            )

    def get_run(self, run_id: str) -> RunRecord | None:
        """Return the run or None."""
        row = self._read_one("SELECT body FROM runs WHERE run_id = ?", run_id)
        return RunRecord.model_validate_json(row[0]) if row else None

    def load_checkpoint(self, run_id: str) -> Checkpoint | None:
        """Return the run's checkpoint or None.

        Raises :class:`CheckpointSchemaError` when it was written with another
        CASE_FACTS ``schema_version``.
        """
        row = self._read_one("SELECT body FROM checkpoints WHERE run_id = ?", run_id)
        return parse_checkpoint(row[0], run_id) if row else None

    def save_checkpoint(self, checkpoint: Checkpoint, fence: int | None = None) -> None:
        """Save ``checkpoint`` if the stored version is ``checkpoint.version - 1``.

        Versions 0 and 1 require that no checkpoint is stored yet. The check and the
        write are one statement, so concurrent writers of the same version get exactly
        one winner. Raises :class:`CheckpointConflict` for the losers. With ``fence``, the
        lease's generation is checked first in the same transaction (:class:`RunLeaseLost`).
        """
        body = checkpoint.model_dump_json()
        with self._write() as conn:
            self._check_fence(conn, checkpoint.run_id, fence)
            if checkpoint.version <= 1:
                cursor = conn.execute(
                    "INSERT INTO checkpoints VALUES (?, ?, ?) ON CONFLICT (run_id) DO NOTHING",
                    (checkpoint.run_id, checkpoint.version, body),
                )
            else:
                cursor = conn.execute(
                    "UPDATE checkpoints SET version = ?, body = ? WHERE run_id = ? AND version = ?",
                    (checkpoint.version, body, checkpoint.run_id, checkpoint.version - 1),
                )
            if cursor.rowcount != 1:
                raise conflict_error(checkpoint)

    def put_extraction(self, run_id: str, extraction: Extraction, fence: int | None = None) -> None:
        """Store an extraction by ``(run_id, extraction.key)``; a repeat overwrites the body only.

        The ``clause_type`` column holds :attr:`Extraction.key` (clause type plus instance).
        The position in :meth:`list_extractions` and ``created_at`` come from the first write.
        With ``fence``, the lease's generation is checked in the same transaction (:class:`RunLeaseLost`).
        """
        with self._write() as conn:
            self._check_fence(conn, run_id, fence)
            conn.execute(
                "INSERT INTO extractions VALUES (?, ?, "
                "(SELECT COALESCE(MAX(seq), 0) + 1 FROM extractions WHERE run_id = ?), ?, ?) "
                "ON CONFLICT (run_id, clause_type) DO UPDATE SET body = excluded.body",
                (run_id, extraction.key, run_id, extraction.model_dump_json(), now_iso()),
            )

    def list_extractions(self, run_id: str) -> list[Extraction]:
        """Return the run's extractions ordered by the first write of each clause type."""
        bodies = self._read_bodies("SELECT body FROM extractions WHERE run_id = ? ORDER BY seq", run_id)
        return [Extraction.model_validate_json(body) for body in bodies]

    def list_runs(self) -> list[RunRecord]:
        """Every stored run (local mode only; not part of the port: the runs console reads it)."""
        return [RunRecord.model_validate_json(body) for body in self._read_bodies("SELECT body FROM runs ORDER BY rowid")]

    def acquire_run_lease(self, run_id: str, owner: str, ttl_seconds: float) -> bool:
        """Take the lease when none is stored, it ended, its holder process is gone, or ``owner`` holds it.

        One ``BEGIN IMMEDIATE`` transaction reads the lease and writes it; a new owner gets the
        generation one up. A holder whose process is gone from this host
        (:func:`~longdoc.ingest.lease.claim_holder_gone`, e.g. after ``kill -9``) loses its live lease
        at once, as an ingest claim does.
        """
        now = time.time()
        with self._write() as conn:
            row = conn.execute("SELECT owner, expires_at, generation FROM run_leases WHERE run_id = ?",
                               (run_id,)).fetchone()
            if row is not None and row[0] != owner and row[1] > now and not claim_holder_gone(row[0]):
                return False
            generation = 1 if row is None else (row[2] if row[0] == owner and row[2] > 0 else row[2] + 1)
            conn.execute("INSERT OR REPLACE INTO run_leases (run_id, owner, expires_at, renewed_at, generation) "
                         "VALUES (?, ?, ?, ?, ?)", (run_id, owner, now + ttl_seconds, now_iso(), generation))
            return True

    def renew_run_lease(self, run_id: str, owner: str, ttl_seconds: float) -> bool:
        """Extend the lease only while ``owner`` holds it (an expired lease nobody took is still ``owner``'s;
        a released one is not renewed)."""
        with self._write() as conn:
            cursor = conn.execute("UPDATE run_leases SET expires_at = ?, renewed_at = ? "
                                  "WHERE run_id = ? AND owner = ? AND expires_at > 0",
                                  (time.time() + ttl_seconds, now_iso(), run_id, owner))
            return cursor.rowcount == 1

    def release_run_lease(self, run_id: str, owner: str) -> None:
        """End the lease now (``expires_at`` 0, generation kept) when ``owner`` holds it."""
        with self._write() as conn:
            conn.execute("UPDATE run_leases SET expires_at = 0 WHERE run_id = ? AND owner = ?", (run_id, owner))

    def get_run_lease(self, run_id: str) -> RunLease | None:
        """Return the stored lease (live, expired or released) or None."""
        row = self._read_one("SELECT owner, expires_at, renewed_at, generation FROM run_leases WHERE run_id = ?",
                             run_id)
        return (RunLease(run_id=run_id, owner=row[0], expires_at=row[1], renewed_at=row[2], generation=row[3])
                if row else None)
