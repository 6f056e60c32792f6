"""Greedy packing of items into batches under a count and a cost cap (requests, upserts, map groups).

One mechanism for every place that fills requests up to an API's limits: Voyage embedding
batches (texts, tokens), Pinecone upserts (records, bytes), Message Batches (requests, bytes)
and summary map groups (chunks, tokens). Each caller brings its own limits and their sources.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def pack(items: Iterable[T], cost: Callable[[T], int], *, max_items: int | None = None,
         max_cost: int | None = None,
         split_before: Callable[[list[T], int, T], bool] | None = None) -> Iterator[list[T]]:
    """Yield consecutive, non-empty batches of ``items`` in order, greedily filled.

    A new batch starts before an item when the current batch already holds ``max_items``
    items, when adding the item's ``cost`` (any unit: tokens, bytes) would pass ``max_cost``,
    or when ``split_before(current batch, its cost so far, item)`` says so. A single item over
    ``max_cost`` still gets a batch of its own (callers that must refuse it check first).
    Never raises on its own; ``cost`` and ``split_before`` may.
    """
    current: list[T] = []
    total = 0
    for item in items:
        size = cost(item)
        if current and ((max_items is not None and len(current) >= max_items)
                        or (max_cost is not None and total + size > max_cost)
                        or (split_before is not None and split_before(current, total, item))):
            yield current
            current, total = [], 0
        current.append(item)
        total += size
    if current:
        yield current
