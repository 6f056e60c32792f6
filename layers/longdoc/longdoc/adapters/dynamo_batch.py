"""Batched DynamoDB writes and reads with their unprocessed items retried (state and bulk stores).

``BatchWriteItem`` takes at most 25 put or delete requests per call and may return some of them
as ``UnprocessedItems`` (throughput exceeded, an internal error); ``BatchGetItem`` takes at most
100 keys per call and may return ``UnprocessedKeys``. AWS asks callers to retry those with
exponential backoff (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchWriteItem.html,
https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html). A batch write
is not a transaction: each item is written or not on its own, so callers write a commit marker
after the batch (the bulk ``job`` item, :mod:`longdoc.bulk.intake`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from longdoc.core.errors import StoreBatchIncomplete

WRITE_BATCH = 25
"""Most put/delete requests in one ``BatchWriteItem`` call (DynamoDB's limit)."""
GET_BATCH = 100
"""Most keys in one ``BatchGetItem`` call (DynamoDB's limit)."""
ATTEMPTS = 8
"""Calls per chunk before :class:`StoreBatchIncomplete` (the first and 7 retries of what was unprocessed)."""
BASE_DELAY_SECONDS = 0.05
"""First backoff; doubled per retry with full jitter (at most about 6.4 s before the last call)."""


def _backoff(attempt: int, sleep: Callable[[float], None]) -> None:
    sleep(random.uniform(0, BASE_DELAY_SECONDS * 2 ** attempt))


def batch_write(client: Any, table: str, items: Sequence[dict[str, Any]], *,
                sleep: Callable[[float], None] = time.sleep) -> int:
    """Put ``items`` (DynamoDB attribute maps) in calls of :data:`WRITE_BATCH`, retrying
    ``UnprocessedItems`` with backoff. Returns the number of ``BatchWriteItem`` calls made.
    Raises :class:`StoreBatchIncomplete` when a chunk still has unprocessed items after
    :data:`ATTEMPTS` calls (the items written so far stay written), and the client's errors."""
    calls = 0
    for start in range(0, len(items), WRITE_BATCH):
        pending: list[dict[str, Any]] = [{"PutRequest": {"Item": item}} for item in items[start:start + WRITE_BATCH]]
        for attempt in range(ATTEMPTS):
            calls += 1
            response = client.batch_write_item(RequestItems={table: pending})
            pending = (response.get("UnprocessedItems") or {}).get(table, [])
            if not pending:
                break
            _backoff(attempt, sleep)
        else:
            raise StoreBatchIncomplete(f"BatchWriteItem on {table}: {len(pending)} items unprocessed "
                                       f"after {ATTEMPTS} calls (throttled); retry the step")
    return calls


def batch_get(client: Any, table: str, keys: Sequence[dict[str, Any]], *, consistent: bool = True,
              sleep: Callable[[float], None] = time.sleep) -> list[dict[str, Any]]:
    """The items at ``keys`` (``{"pk", "sk"}`` attribute maps) that exist, in no set order, read
    in calls of :data:`GET_BATCH` (strongly consistent unless ``consistent`` is False), retrying
    ``UnprocessedKeys`` with backoff. Raises :class:`StoreBatchIncomplete` as :func:`batch_write`."""
    found: list[dict[str, Any]] = []
    for start in range(0, len(keys), GET_BATCH):
        pending: dict[str, Any] = {"Keys": list(keys[start:start + GET_BATCH]), "ConsistentRead": consistent}
        for attempt in range(ATTEMPTS):
            response = client.batch_get_item(RequestItems={table: pending})
            found.extend((response.get("Responses") or {}).get(table, []))
            pending = (response.get("UnprocessedKeys") or {}).get(table) or {}
            if not pending.get("Keys"):
                break
            _backoff(attempt, sleep)
        else:
            raise StoreBatchIncomplete(f"BatchGetItem on {table}: {len(pending['Keys'])} keys unprocessed "
                                       f"after {ATTEMPTS} calls (throttled); retry")
    return found
