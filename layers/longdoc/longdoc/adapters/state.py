"""StateStore adapters: one DynamoDB table (:class:`DynamoStateStore`) and SQLite (:class:`SqliteStateStore`).

Both implement :class:`longdoc.core.ports.StateStore` with the same semantics. Every record is
stored as the JSON string of its pydantic model (``model_dump_json()``), so exact values
such as ``"$247.83"`` come back byte for byte.

DynamoDB item layout (hash key ``pk`` S, range key ``sk`` S, TTL attribute ``expires_at``):

================  =========================  ==========================================
pk                sk                         other attributes
================  =========================  ==========================================
``DOC#{doc_id}``  ``VERSION#{doc_version}``  status, doc_version, body, updated_at
``DOC#{doc_id}``  ``LATEST``                 doc_version
``DOC#{doc_id}``  ``CLAIM#{doc_version}``    owner, expires_at (N, epoch s; the ingest claim, adapters/version_claims.py)
``RUN#{run_id}``  ``RUN``                    status, body
``RUN#{run_id}``  ``CHECKPOINT``             version (N), body, expires_at (N, epoch s; ended runs only)
``RUN#{run_id}``  ``EXTRACTION#{key}``       clause_type, body, order (N), created_at
================  =========================  ==========================================

``{key}`` is :attr:`Extraction.key`: the clause type, plus ``#{instance}`` for a found
instance, so each instance of a clause type is its own small item.
Only checkpoints expire, and only once the run has ended: the session that finishes a run
(or the task recording its failure) sets ``Checkpoint.expires_at`` = end time +
:data:`CHECKPOINT_TTL_SECONDS`, written as the TTL attribute; while a run is in progress
its checkpoint has no ``expires_at``. Documents, runs and extractions are results and are kept.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from longdoc.adapters.version_claims import DynamoVersionClaims, SqliteVersionClaims
from longdoc.core import records as models
from longdoc.core.errors import CheckpointConflict, CheckpointSchemaError
from longdoc.core.records import CASE_FACTS_SCHEMA_VERSION, Checkpoint, Extraction, RunRecord, migrate_checkpoint_data
from longdoc.core.models import DocumentRecord

CHECKPOINT_TTL_SECONDS = models.CHECKPOINT_TTL_SECONDS
"""Checkpoint lifetime after the run ends, in seconds (30 days); see :func:`checkpoint_expiry`."""


def checkpoint_expiry(now: float | None = None) -> int:
    """Epoch seconds at which an ended run's checkpoint expires (``now`` + 30 days)."""
    return int(time.time() if now is None else now) + CHECKPOINT_TTL_SECONDS


def _now_iso() -> str:
    """Return the current UTC time as ISO 8601 with microseconds (``2025-01-31T12:00:00.000001+00:00``)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _parse_checkpoint(body: str, run_id: str) -> Checkpoint:
    """Parse a stored checkpoint body, migrating an older CASE_FACTS schema version.

    Version 1 is migrated by :func:`longdoc.core.records.migrate_checkpoint_data`; any other
    version than :data:`longdoc.core.records.CASE_FACTS_SCHEMA_VERSION` raises
    :class:`CheckpointSchemaError` naming the stored and the expected version.
    """
    data = json.loads(body)
    stored = (data.get("case_facts") or {}).get("schema_version")
    try:
        data = migrate_checkpoint_data(data)
    except ValueError:
        raise CheckpointSchemaError(
            f"checkpoint of run {run_id} has CASE_FACTS schema_version {stored}; "
            f"this code reads schema_version {CASE_FACTS_SCHEMA_VERSION} (and migrates 1)"
        ) from None
    return Checkpoint.model_validate(data)


def _conflict(checkpoint: Checkpoint) -> CheckpointConflict:
    """Build the error for a lost conditional checkpoint write."""
    expected = "no checkpoint" if checkpoint.version <= 1 else f"version {checkpoint.version - 1}"
    return CheckpointConflict(
        f"run {checkpoint.run_id}: cannot save checkpoint version {checkpoint.version}; "
        f"expected {expected} stored, another writer saved first"
    )


# --------------------------------------------------------------------------- SQLite

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
"""


class SqliteStateStore(SqliteVersionClaims):
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

    def put_document(self, record: DocumentRecord) -> None:
        """Create or replace ``(doc_id, doc_version)`` and point the document's latest at it."""
        with self._write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO documents VALUES (?, ?, ?, ?, ?)",
                (record.doc_id, record.doc_version, record.status,
                 record.model_dump_json(), record.updated_at),
            )
            conn.execute(
                "INSERT OR REPLACE INTO latest VALUES (?, ?)", (record.doc_id, record.doc_version)
            )

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

    def put_run(self, run: RunRecord) -> None:
        """Create or replace a run record."""
        with self._write() as conn:
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
        return _parse_checkpoint(row[0], run_id) if row else None

    def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        """Save ``checkpoint`` if the stored version is ``checkpoint.version - 1``.

        Versions 0 and 1 require that no checkpoint is stored yet. The check and the
        write are one statement, so concurrent writers of the same version get exactly
        one winner. Raises :class:`CheckpointConflict` for the losers.
        """
        body = checkpoint.model_dump_json()
        with self._write() as conn:
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
                raise _conflict(checkpoint)

    def put_extraction(self, run_id: str, extraction: Extraction) -> None:
        """Store an extraction by ``(run_id, extraction.key)``; a repeat overwrites the body only.

        The ``clause_type`` column holds :attr:`Extraction.key` (clause type plus instance).
        The position in :meth:`list_extractions` and ``created_at`` come from the first write.
        """
        with self._write() as conn:
            conn.execute(
                "INSERT INTO extractions VALUES (?, ?, "
                "(SELECT COALESCE(MAX(seq), 0) + 1 FROM extractions WHERE run_id = ?), ?, ?) "
                "ON CONFLICT (run_id, clause_type) DO UPDATE SET body = excluded.body",
                (run_id, extraction.key, run_id, extraction.model_dump_json(), _now_iso()),
            )

    def list_extractions(self, run_id: str) -> list[Extraction]:
        """Return the run's extractions ordered by the first write of each clause type."""
        bodies = self._read_bodies("SELECT body FROM extractions WHERE run_id = ? ORDER BY seq", run_id)
        return [Extraction.model_validate_json(body) for body in bodies]


# --------------------------------------------------------------------------- DynamoDB


def _s(value: str) -> dict[str, str]:
    """DynamoDB string attribute value."""
    return {"S": value}


def _n(value: int) -> dict[str, str]:
    """DynamoDB number attribute value from an int (never a float)."""
    return {"N": str(int(value))}


class DynamoStateStore(DynamoVersionClaims):
    """StateStore in one DynamoDB table (layout in the module docstring).

    ``client`` is a boto3 low-level DynamoDB client; when omitted one is created on first
    use (once per instance, default credential chain and region). Reads are strongly
    consistent so a checkpoint saved by one Lambda invocation is seen by the next.
    Items are limited to 400 KB by DynamoDB
    (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html);
    bodies are stored as plain JSON strings.
    """

    def __init__(self, table_name: str, client: Any | None = None) -> None:
        """Use the table ``table_name``, through ``client`` if given."""
        self.table_name = table_name
        self._client = client
        self._lock = threading.Lock()
        self._last_order = 0

    @property
    def client(self) -> Any:
        """The boto3 DynamoDB client, created on first access (thread-safe, once per instance)."""
        if self._client is None:
            with self._lock:
                if self._client is None:
                    import boto3

                    self._client = boto3.client("dynamodb")
        return self._client

    def _get(self, pk: str, sk: str) -> dict[str, Any] | None:
        """Return the raw item at ``(pk, sk)`` (consistent read) or None."""
        response = self.client.get_item(
            TableName=self.table_name,
            Key={"pk": _s(pk), "sk": _s(sk)},
            ConsistentRead=True,
        )
        item: dict[str, Any] | None = response.get("Item")
        return item

    def put_document(self, record: DocumentRecord) -> None:
        """Write the version item and the ``LATEST`` pointer in one TransactWriteItems call."""
        pk = _s(f"DOC#{record.doc_id}")
        self.client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": self.table_name, "Item": {
                    "pk": pk,
                    "sk": _s(f"VERSION#{record.doc_version}"),
                    "status": _s(record.status),
                    "doc_version": _s(record.doc_version),
                    "body": _s(record.model_dump_json()),
                    "updated_at": _s(record.updated_at),
                }}},
                {"Put": {"TableName": self.table_name, "Item": {
                    "pk": pk,
                    "sk": _s("LATEST"),
                    "doc_version": _s(record.doc_version),
                }}},
            ]
        )

    def get_document(self, doc_id: str, doc_version: str | None = None) -> DocumentRecord | None:
        """Return one version of a document (following ``LATEST`` when ``doc_version`` is None) or None."""
        if doc_version is None:
            latest = self._get(f"DOC#{doc_id}", "LATEST")
            if latest is None:
                return None
            doc_version = latest["doc_version"]["S"]
        item = self._get(f"DOC#{doc_id}", f"VERSION#{doc_version}")
        return DocumentRecord.model_validate_json(item["body"]["S"]) if item else None

    def _query_prefix(self, pk: str, sk_prefix: str) -> list[dict[str, Any]]:
        """All items of partition ``pk`` whose sort key starts with ``sk_prefix``, every page of
        a consistent Query (DynamoDB returns at most 1 MB per page, so paging is required)."""
        items: list[dict[str, Any]] = []
        paginator = self.client.get_paginator("query")
        for page in paginator.paginate(
            TableName=self.table_name,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues={":pk": _s(pk), ":prefix": _s(sk_prefix)},
            ConsistentRead=True,
        ):
            items.extend(page.get("Items", []))
        return items

    def list_document_versions(self, doc_id: str) -> list[DocumentRecord]:
        """Query ``DOC#{doc_id}`` items with ``VERSION#`` keys (all pages), ordered by ``updated_at``."""
        records = [DocumentRecord.model_validate_json(item["body"]["S"])
                   for item in self._query_prefix(f"DOC#{doc_id}", "VERSION#")]
        records.sort(key=lambda r: (r.updated_at, r.doc_version))
        return records

    def put_run(self, run: RunRecord) -> None:
        """Create or replace the run item."""
        self.client.put_item(
            TableName=self.table_name,
            Item={
                "pk": _s(f"RUN#{run.run_id}"),
                "sk": _s("RUN"),
                "status": _s(run.status),
                "body": _s(run.model_dump_json()),
            },
        )

    def get_run(self, run_id: str) -> RunRecord | None:
        """Return the run or None."""
        item = self._get(f"RUN#{run_id}", "RUN")
        return RunRecord.model_validate_json(item["body"]["S"]) if item else None

    def load_checkpoint(self, run_id: str) -> Checkpoint | None:
        """Return the run's checkpoint or None.

        Raises :class:`CheckpointSchemaError` when it was written with another
        CASE_FACTS ``schema_version``. An item past its TTL but not yet removed by
        DynamoDB (removal can lag) is still returned.
        """
        item = self._get(f"RUN#{run_id}", "CHECKPOINT")
        return _parse_checkpoint(item["body"]["S"], run_id) if item else None

    def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        """Conditionally write the checkpoint item; ``expires_at`` only when ``checkpoint.expires_at`` is set.

        Condition: ``attribute_not_exists(pk)`` for versions 0 and 1, else
        ``version = checkpoint.version - 1``. Raises :class:`CheckpointConflict` when the
        condition fails (ConditionalCheckFailedException); other errors propagate.
        """
        from botocore.exceptions import ClientError

        condition: dict[str, Any]
        if checkpoint.version <= 1:
            condition = {"ConditionExpression": "attribute_not_exists(pk)"}
        else:
            condition = {
                "ConditionExpression": "#v = :previous",
                "ExpressionAttributeNames": {"#v": "version"},
                "ExpressionAttributeValues": {":previous": _n(checkpoint.version - 1)},
            }
        try:
            item = {
                "pk": _s(f"RUN#{checkpoint.run_id}"),
                "sk": _s("CHECKPOINT"),
                "version": _n(checkpoint.version),
                "body": _s(checkpoint.model_dump_json()),
            }
            if checkpoint.expires_at is not None:
                item["expires_at"] = _n(checkpoint.expires_at)
            self.client.put_item(TableName=self.table_name, Item=item, **condition)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                raise _conflict(checkpoint) from None
            raise

    def _next_order(self) -> int:
        """Return nanoseconds since the epoch, strictly increasing within this instance."""
        with self._lock:
            self._last_order = max(time.time_ns(), self._last_order + 1)
            return self._last_order

    def put_extraction(self, run_id: str, extraction: Extraction) -> None:
        """Upsert the item ``EXTRACTION#{extraction.key}``; ``order`` and ``created_at`` keep their first-write values."""
        self.client.update_item(
            TableName=self.table_name,
            Key={"pk": _s(f"RUN#{run_id}"), "sk": _s(f"EXTRACTION#{extraction.key}")},
            UpdateExpression=(
                "SET #body = :body, clause_type = :clause, "
                "#order = if_not_exists(#order, :order), "
                "created_at = if_not_exists(created_at, :created)"
            ),
            ExpressionAttributeNames={"#body": "body", "#order": "order"},
            ExpressionAttributeValues={
                ":body": _s(extraction.model_dump_json()),
                ":clause": _s(extraction.clause_type),
                ":order": _n(self._next_order()),
                ":created": _s(_now_iso()),
            },
        )

    def list_extractions(self, run_id: str) -> list[Extraction]:
        """Query the run's extraction items (all pages) and return them by first-write order."""
        items = self._query_prefix(f"RUN#{run_id}", "EXTRACTION#")
        items.sort(key=lambda item: (int(item["order"]["N"]), item["sk"]["S"]))
        return [Extraction.model_validate_json(item["body"]["S"]) for item in items]
