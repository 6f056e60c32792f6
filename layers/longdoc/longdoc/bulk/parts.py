"""Reading a round's batch part items (``part#<round>#<label>``) back from the blob store."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from longdoc.core.ports import BlobStore


def part_lines(blobs: BlobStore, part: dict[str, Any]) -> Iterator[str]:
    """The non-empty JSONL lines (one request each) of a batch part item: its ``blobs`` (the slice's
    pieces, in order, :mod:`longdoc.bulk.slices`) or, for a part written before slices, its one
    ``blob``. Reads one blob at a time. Raises what ``blobs.get`` raises for a missing blob."""
    for key in part.get("blobs") or [part["blob"]]:
        yield from (line for line in blobs.get(str(key)).decode().splitlines() if line)
