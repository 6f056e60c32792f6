"""The ports of bulk extraction: a Message Batches client and a small conditional key-value store.

Shapes follow the Message Batches API (https://docs.anthropic.com/en/api/creating-message-batches,
https://docs.anthropic.com/en/api/retrieving-message-batch-results): a batch is created from
``{"custom_id", "params"}`` requests, has a ``processing_status`` of ``in_progress``,
``canceling`` or ``ended``, and its results (JSONL, in no guaranteed order) are one of
``succeeded``, ``errored``, ``canceled`` or ``expired`` per ``custom_id``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from longdoc.core.messages import ModelResponse

ResultType = Literal["succeeded", "errored", "canceled", "expired"]


@dataclass(frozen=True)
class BatchInfo:
    """A batch as ``retrieve`` reports it: id, ``processing_status``, its request counts and
    ``created_at`` (epoch seconds; None when the client does not say)."""

    id: str
    processing_status: str
    counts: dict[str, int]
    created_at: float | None = None


@dataclass(frozen=True)
class BatchResult:
    """One request's result: ``custom_id``, its type, the message (``succeeded``) or the error
    (``errored``: ``error_type`` such as ``invalid_request_error``, and the API's message)."""

    custom_id: str
    type: ResultType
    response: ModelResponse | None = None
    error_type: str | None = None
    error_message: str | None = None


class BatchClient(Protocol):
    """Create, retrieve, stream results of and cancel Message Batches."""

    def create(self, requests: list[dict[str, Any]]) -> BatchInfo:
        """Create a batch from ``{"custom_id", "params"}`` requests (params: a Messages API body)."""
        ...

    def retrieve(self, batch_id: str) -> BatchInfo:
        """The batch's status; raises :class:`BatchNotFound` for an unknown id."""
        ...

    def results(self, batch_id: str) -> Iterator[BatchResult]:
        """The results of an ended batch, streamed one at a time, in the API's (any) order."""
        ...

    def cancel(self, batch_id: str) -> BatchInfo:
        """Ask the API to cancel the batch."""
        ...

    def list_recent(self, since: float) -> Iterator[BatchInfo]:
        """The workspace's batches created at or after ``since`` (epoch seconds), newest first."""
        ...


class BulkStore(Protocol):
    """Items under a partition key ``pk`` and sort key ``sk`` (a DynamoDB table's shape), JSON bodies."""

    def put(self, pk: str, sk: str, body: dict[str, Any]) -> None:
        """Write the item (overwrite)."""
        ...

    def put_if_absent(self, pk: str, sk: str, body: dict[str, Any]) -> bool:
        """Write the item only if none exists (a conditional write); returns whether it was written."""
        ...

    def get(self, pk: str, sk: str) -> dict[str, Any] | None:
        """The item's body, or None."""
        ...

    def query(self, pk: str, prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
        """``(sk, body)`` of the items under ``pk`` whose sort key starts with ``prefix``, by sort key."""
        ...

    def put_many(self, pk: str, items: list[tuple[str, dict[str, Any]]]) -> None:
        """Write many ``(sk, body)`` items under ``pk`` (overwrite; DynamoDB ``BatchWriteItem``, 25 a
        call, unprocessed items retried; :class:`~longdoc.core.errors.StoreBatchIncomplete`)."""
        ...

    def query_page(self, pk: str, prefix: str, limit: int,
                   after: str | None = None) -> tuple[list[tuple[str, dict[str, Any]]], str | None]:
        """At most ``limit`` ``(sk, body)`` items under ``pk`` with sort keys starting with ``prefix``
        and after ``after``, by sort key; and the last sort key when more may follow (else None)."""
        ...
