"""SQLite adapter of :class:`longdoc.bulk.ports.BulkStore` (local mode and tests): one table keyed
``(pk, sk)``, the shape of a DynamoDB table with a conditional ``attribute_not_exists(pk)`` put."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any


class SqliteBulkStore:
    """Bulk items in the SQLite file ``path`` (created with its table on first use)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        self._db.execute("CREATE TABLE IF NOT EXISTS bulk (pk TEXT, sk TEXT, body TEXT, PRIMARY KEY (pk, sk))")

    def put(self, pk: str, sk: str, body: dict[str, Any]) -> None:
        """Write the item (overwrite)."""
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO bulk VALUES (?, ?, ?)", (pk, sk, json.dumps(body)))

    def put_if_absent(self, pk: str, sk: str, body: dict[str, Any]) -> bool:
        """Write the item only if absent; returns whether it was written."""
        with self._lock:
            cur = self._db.execute("INSERT OR IGNORE INTO bulk VALUES (?, ?, ?)", (pk, sk, json.dumps(body)))
            return cur.rowcount == 1

    def get(self, pk: str, sk: str) -> dict[str, Any] | None:
        """The item's body, or None."""
        with self._lock:
            row = self._db.execute("SELECT body FROM bulk WHERE pk = ? AND sk = ?", (pk, sk)).fetchone()
        return json.loads(row[0]) if row else None

    def query(self, pk: str, prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
        """``(sk, body)`` under ``pk`` with sort keys starting with ``prefix``, in sort-key order."""
        with self._lock:
            rows = self._db.execute("SELECT sk, body FROM bulk WHERE pk = ? AND substr(sk, 1, ?) = ? ORDER BY sk",
                                    (pk, len(prefix), prefix)).fetchall()
        return [(sk, json.loads(body)) for sk, body in rows]

    def put_many(self, pk: str, items: list[tuple[str, dict[str, Any]]]) -> None:
        """Write many ``(sk, body)`` items under ``pk`` (overwrite) in one transaction."""
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO bulk VALUES (?, ?, ?)",
                                 [(pk, sk, json.dumps(body)) for sk, body in items])
            self._db.execute("COMMIT")

    def query_page(self, pk: str, prefix: str, limit: int,
                   after: str | None = None) -> tuple[list[tuple[str, dict[str, Any]]], str | None]:
        """A page of :meth:`query`: ``limit`` items after sort key ``after``, and the next page's start."""
        with self._lock:
            rows = self._db.execute("SELECT sk, body FROM bulk WHERE pk = ? AND substr(sk, 1, ?) = ? AND sk > ? "
                                    "ORDER BY sk LIMIT ?", (pk, len(prefix), prefix, after or "", limit)).fetchall()
        page = [(sk, json.loads(body)) for sk, body in rows]
        return page, (page[-1][0] if len(page) == limit else None)
