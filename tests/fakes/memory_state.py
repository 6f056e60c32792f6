"""The SQLite state store on one in-memory connection: the real adapter's SQL and compare-and-set
semantics without a file, an fsync or a connection per call (tests that need thousands of runs)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from longdoc.adapters.state import SqliteStateStore


class MemoryStateStore(SqliteStateStore):
    """:class:`SqliteStateStore` on a private in-memory database (one connection, one lock)."""

    def __init__(self) -> None:
        self._conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._lock = threading.RLock()
        super().__init__(Path(":memory:"))

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """The one connection, held by one caller at a time."""
        with self._lock:
            yield self._conn
