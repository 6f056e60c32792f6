"""Many runs at once and the collection index, for both StateStore adapters (mixed into their classes).

Runs: :meth:`put_runs` writes many ``PENDING`` runs in few calls (a bulk job's CreateRuns state),
:meth:`get_runs` reads many (a page of ``GET /bulk-extractions/{id}``). Collection index (issue 26:
triage queries its members instead of scanning the registry): one item per member, written with
the document's entry at ingest (:meth:`index_items`), read by :meth:`collection_members`.

- DynamoDB: ``pk = COLLECTION#{name}``, ``sk = DOC#{doc_id}`` (attribute ``doc_id``) per member and
  ``pk = COLLECTIONS``, ``sk = NAME#{name}`` per collection name; the member item is in the
  document's ``TransactWriteItems`` (``dynamo.py``), the name item a PutItem right after it
  (:meth:`DynamoRunsAndCollections.index_items`); read with ``Query`` (every page). Runs go
  through ``BatchWriteItem`` / ``BatchGetItem`` (:mod:`longdoc.adapters.dynamo_batch`).
- SQLite: table ``collection_members (name, doc_id)``, written in the document's transaction.

An index item only says "this document was ingested into this collection": a document re-ingested
into another collection keeps its old item, so readers check the document's own metadata
(:func:`longdoc.triage.collections.load_collection` does). Items written before the index existed
are made by ``longdoc admin reindex-collections`` (:func:`longdoc.triage.collections.reindex`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from longdoc.adapters.dynamo_batch import batch_get, batch_write
from longdoc.core.models import DocumentRecord
from longdoc.core.records import RunRecord

_MEMBERS_TABLE = """CREATE TABLE IF NOT EXISTS collection_members (
    name TEXT NOT NULL, doc_id TEXT NOT NULL, PRIMARY KEY (name, doc_id))"""


def _s(value: str) -> dict[str, str]:
    return {"S": value}


class DynamoRunsAndCollections:
    """Batched runs and the collection index in the DynamoDB table (needs the store's ``client``, ``table_name``)."""

    if TYPE_CHECKING:  # provided by DynamoStateStore
        table_name: str

        @property
        def client(self) -> Any: ...

        def _query_prefix(self, pk: str, sk_prefix: str) -> list[dict[str, Any]]: ...

    def index_items(self, record: DocumentRecord) -> list[dict[str, Any]]:
        """The member Put (a TransactWriteItems item) of a document entry: none without a collection.

        The ``COLLECTIONS`` name item is not in the transaction: every ingest into a collection
        writes it, and transactions touching one item at once cancel each other
        (``TransactionConflict``); :meth:`index_name` puts it after the transaction."""
        name = record.metadata.collection
        if not name:
            return []
        return [{"Put": {"TableName": self.table_name, "Item": self._index_rows(name, record.doc_id)[0]}}]

    def index_name(self, record: DocumentRecord) -> None:
        """Put the ``COLLECTIONS`` name item of a document entry written (a plain, idempotent PutItem)."""
        if record.metadata.collection:
            self.client.put_item(TableName=self.table_name,
                                 Item=self._index_rows(record.metadata.collection, record.doc_id)[1])

    @staticmethod
    def _index_rows(name: str, doc_id: str) -> list[dict[str, Any]]:
        return [{"pk": _s(f"COLLECTION#{name}"), "sk": _s(f"DOC#{doc_id}"), "doc_id": _s(doc_id)},
                {"pk": _s("COLLECTIONS"), "sk": _s(f"NAME#{name}"), "name": _s(name)}]

    def index_collection_member(self, name: str, doc_id: str) -> None:
        """Write the index items of ``doc_id`` in collection ``name`` (idempotent; the backfill)."""
        batch_write(self.client, self.table_name, self._index_rows(name, doc_id))

    def collection_members(self, name: str) -> list[str]:
        """The doc_ids indexed under collection ``name``, sorted (one ``Query``, every page)."""
        return sorted(i["doc_id"]["S"] for i in self._query_prefix(f"COLLECTION#{name}", "DOC#"))

    def collection_names(self) -> list[str]:
        """Every indexed collection name, sorted (one ``Query`` of the ``COLLECTIONS`` partition)."""
        return sorted(i["name"]["S"] for i in self._query_prefix("COLLECTIONS", "NAME#"))

    def put_runs(self, runs: Sequence[RunRecord]) -> None:
        """Create or replace many run items (the layout of ``put_run``) with ``BatchWriteItem``, 25 a call."""
        batch_write(self.client, self.table_name, [
            {"pk": _s(f"RUN#{r.run_id}"), "sk": _s("RUN"), "status": _s(r.status), "body": _s(r.model_dump_json())}
            for r in runs])

    def get_runs(self, run_ids: Sequence[str]) -> dict[str, RunRecord]:
        """The runs of ``run_ids`` that exist, by id (``BatchGetItem``, 100 keys a call, consistent)."""
        keys = [{"pk": _s(f"RUN#{rid}"), "sk": _s("RUN")} for rid in dict.fromkeys(run_ids)]
        runs = (RunRecord.model_validate_json(item["body"]["S"]) for item in batch_get(self.client, self.table_name, keys))
        return {r.run_id: r for r in runs}


class SqliteRunsAndCollections:
    """Batched runs and the collection index in the store's SQLite file (needs ``_write``/``_connect``)."""

    if TYPE_CHECKING:  # provided by SqliteStateStore
        def _write(self) -> AbstractContextManager[sqlite3.Connection]: ...

        def _connect(self) -> AbstractContextManager[sqlite3.Connection]: ...

    @staticmethod
    def index_document(conn: sqlite3.Connection, record: DocumentRecord) -> None:
        """Inside the document's write: its index row, when it has a collection."""
        if record.metadata.collection:
            conn.execute(_MEMBERS_TABLE)
            conn.execute("INSERT OR IGNORE INTO collection_members VALUES (?, ?)",
                         (record.metadata.collection, record.doc_id))

    def index_collection_member(self, name: str, doc_id: str) -> None:
        """Write the index row of ``doc_id`` in collection ``name`` (idempotent; the backfill)."""
        with self._write() as conn:
            conn.execute(_MEMBERS_TABLE)
            conn.execute("INSERT OR IGNORE INTO collection_members VALUES (?, ?)", (name, doc_id))

    def _index_rows(self, sql: str, *params: str) -> list[str]:
        with self._connect() as conn:
            conn.execute(_MEMBERS_TABLE)
            return [value for (value,) in conn.execute(sql, params).fetchall()]

    def collection_members(self, name: str) -> list[str]:
        """The doc_ids indexed under collection ``name``, sorted."""
        return self._index_rows("SELECT doc_id FROM collection_members WHERE name = ? ORDER BY doc_id", name)

    def collection_names(self) -> list[str]:
        """Every indexed collection name, sorted."""
        return self._index_rows("SELECT DISTINCT name FROM collection_members ORDER BY name")

    def put_runs(self, runs: Sequence[RunRecord]) -> None:
        """Create or replace many runs in one transaction."""
        with self._write() as conn:
            conn.executemany("INSERT OR REPLACE INTO runs VALUES (?, ?, ?)",
                             [(r.run_id, r.status, r.model_dump_json()) for r in runs])

    def get_runs(self, run_ids: Sequence[str]) -> dict[str, RunRecord]:
        """The runs of ``run_ids`` that exist, by id (one query per 500 ids)."""
        ids, out = list(dict.fromkeys(run_ids)), {}
        with self._connect() as conn:
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                rows = conn.execute(f"SELECT body FROM runs WHERE run_id IN ({','.join('?' * len(chunk))})", chunk)
                for (body,) in rows.fetchall():
                    run = RunRecord.model_validate_json(body)
                    out[run.run_id] = run
        return out
