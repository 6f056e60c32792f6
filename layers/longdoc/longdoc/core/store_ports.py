"""The StateStore's issue-26 part: many runs at once and the collection index (:class:`RunsAndCollections`).

Kept apart from :mod:`longdoc.core.ports` (which :class:`~longdoc.core.ports.StateStore` extends
it in) so each module stays small. DynamoDB: batches of ``BatchWriteItem`` / ``BatchGetItem``
(:mod:`longdoc.adapters.dynamo_batch`) and Query over the index items
(:mod:`longdoc.adapters.state.collection_index`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from longdoc.core.records import RunRecord


class RunsAndCollections(Protocol):
    """Many runs at once (a bulk job's CreateRuns state and status pages) and the collection index
    (one entry per member, written with the document at ingest; triage queries it, no Scan)."""

    def put_runs(self, runs: Sequence[RunRecord]) -> None:
        """Create or replace many runs, unfenced (25 per BatchWriteItem; :class:`StoreBatchIncomplete`)."""
        ...

    def get_runs(self, run_ids: Sequence[str]) -> dict[str, RunRecord]:
        """The stored runs of ``run_ids`` by id, absent ones left out (100 per BatchGetItem)."""
        ...

    def collection_members(self, name: str) -> list[str]:
        """Doc ids ever ingested into collection ``name``, sorted (a Query): check each one's metadata."""
        ...

    def collection_names(self) -> list[str]:
        """Every indexed collection name, sorted."""
        ...

    def index_collection_member(self, name: str, doc_id: str) -> None:
        """Index ``doc_id`` under ``name`` (idempotent; the backfill, ``longdoc admin reindex-collections``)."""
        ...
