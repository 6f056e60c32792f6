"""SQLite adapter of :class:`longdoc.core.ports.DecisionStore` (local mode and tests).

Two tables in ``review.sqlite3`` under the home: ``items`` (one row per item id, ``INSERT OR IGNORE``:
a snapshot is written once) and ``decisions`` keyed ``(item_id, version)``: the primary key is the
conditional write, so of two decisions claiming one version the second raises
:class:`~longdoc.core.errors.DecisionConflict`. Nothing is ever updated or deleted.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

from longdoc.core.errors import DecisionConflict
from longdoc.core.reviews import Decision, ReviewItem


class SqliteDecisionStore:
    """Review items and decisions in the SQLite file ``path`` (created with its tables on first use)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
        self._lock = threading.Lock()
        self._db.execute("CREATE TABLE IF NOT EXISTS items (item_id TEXT PRIMARY KEY, run_id TEXT, clause_type TEXT,"
                         " idx INTEGER, body TEXT)")
        self._db.execute("CREATE TABLE IF NOT EXISTS decisions (item_id TEXT, version INTEGER, body TEXT,"
                         " PRIMARY KEY (item_id, version))")

    def put_items(self, items: Sequence[ReviewItem]) -> int:
        """Store the items not stored yet; returns how many were new (one transaction)."""
        with self._lock:
            before = self._db.total_changes
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("INSERT OR IGNORE INTO items VALUES (?, ?, ?, ?, ?)",
                                     [(i.item_id, i.run_id, i.clause_type, i.index, i.model_dump_json()) for i in items])
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            return self._db.total_changes - before

    def get_item(self, item_id: str) -> ReviewItem | None:
        """The stored item or None."""
        with self._lock:
            row = self._db.execute("SELECT body FROM items WHERE item_id = ?", (item_id,)).fetchone()
        return ReviewItem.model_validate_json(row[0]) if row else None

    def list_items(self, run_id: str | None = None) -> list[ReviewItem]:
        """The items of ``run_id`` (all when None) in ``(run_id, clause_type, index)`` order."""
        query = "SELECT body FROM items" + (" WHERE run_id = ?" if run_id is not None else "")
        with self._lock:
            rows = self._db.execute(query + " ORDER BY run_id, clause_type, idx",
                                    (run_id,) if run_id is not None else ()).fetchall()
        return [ReviewItem.model_validate_json(r[0]) for r in rows]

    def append_decision(self, decision: Decision) -> Decision:
        """Insert ``decision`` as its version; :class:`DecisionConflict` when that version exists."""
        with self._lock:
            try:
                self._db.execute("INSERT INTO decisions VALUES (?, ?, ?)",
                                 (decision.item_id, decision.version, decision.model_dump_json()))
            except sqlite3.IntegrityError:
                raise DecisionConflict(f"item {decision.item_id} already has a decision version {decision.version}: "
                                       "another decision came first; reload it and decide again") from None
        return decision

    def decisions(self, item_id: str) -> list[Decision]:
        """The item's decisions, version 1 first."""
        with self._lock:
            rows = self._db.execute("SELECT body FROM decisions WHERE item_id = ? ORDER BY version",
                                    (item_id,)).fetchall()
        return [Decision.model_validate_json(r[0]) for r in rows]
