"""Pure planning of bulk rounds: ``custom_id``s, splitting requests into batches, the poll schedule.

Limits are Anthropic's (Message Batches, https://docs.anthropic.com/en/docs/build-with-claude/batch-processing):
a batch holds at most 100,000 requests or 256 MB, whichever comes first; a batch ends within
24 hours (unfinished requests expire). ``custom_id`` must match ``^[a-zA-Z0-9_-]{1,64}$``.
Step Functions Standard keeps at most 25,000 events in an execution's history.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from longdoc.core.batching import pack

MAX_BATCH_REQUESTS = 100_000
"""Requests per batch (Anthropic's limit)."""
MAX_BATCH_BYTES = 256 * 1024 * 1024
"""Serialised bytes per batch (Anthropic's limit: 256 MB)."""
CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""Allowed ``custom_id`` (Anthropic's Message Batches API)."""
BATCH_LIFETIME_SECONDS = 24 * 3600
"""A batch ends within 24 hours (Anthropic)."""
HISTORY_EVENT_LIMIT = 25_000
"""Events in one Step Functions Standard execution history."""
EVENTS_PER_POLL = 9
"""History events of one poll cycle in ``statemachine/bulk.asl.json``: Wait (entered, exited),
the Poll task (entered, scheduled, started, succeeded, exited) and the Choice (entered, exited)."""


@dataclass(frozen=True)
class BulkLimits:
    """Bounds of a bulk run. ``max_requests`` / ``max_bytes`` per batch (default Anthropic's; tests
    lower them); ``max_rounds``: rounds before a still-pending document fails; ``max_retries``:
    rounds a document may be re-sent after ``errored`` (not invalid_request_error), ``canceled``
    or ``expired``; ``poll_first`` / ``poll_cap``: the first and longest wait between polls
    (seconds), doubling in between; ``not_found_polls``: 404s tolerated right after create;
    ``list_settle_seconds``: how long (seconds) after an interrupted Submit's intent a batch missing
    from the batch list may still appear there (:mod:`longdoc.bulk.submit`); keep it under the
    about 260 s the state machine's ``BatchNotListedYet`` retries wait in all. Prepare in slices
    (:mod:`longdoc.bulk.slices`): ``slice_docs`` run ids a slice (one invocation each);
    ``piece_docs`` runs built and committed together (what a killed slice may build again);
    ``query_pool`` threads building a window's runs at once (retrieval: chunk list, index queries)."""

    max_requests: int = MAX_BATCH_REQUESTS
    max_bytes: int = MAX_BATCH_BYTES
    max_rounds: int = 12
    max_retries: int = 3
    poll_first: int = 30
    poll_cap: int = 300
    not_found_polls: int = 5
    list_settle_seconds: int = 60
    slice_docs: int = 250
    piece_docs: int = 25
    query_pool: int = 8

    @classmethod
    def from_env(cls) -> BulkLimits:
        """Limits from ``LONGDOC_BULK_MAX_REQUESTS``, ``_MAX_BYTES``, ``_MAX_ROUNDS``, ``_MAX_RETRIES``,
        ``_POLL_FIRST``, ``_POLL_CAP``, ``_LIST_SETTLE``, ``_SLICE_DOCS``, ``_PIECE_DOCS``, ``_QUERY_POOL``
        (whole numbers); unset: the defaults."""
        names = {"max_requests": "MAX_REQUESTS", "max_bytes": "MAX_BYTES", "max_rounds": "MAX_ROUNDS",
                 "max_retries": "MAX_RETRIES", "poll_first": "POLL_FIRST", "poll_cap": "POLL_CAP",
                 "list_settle_seconds": "LIST_SETTLE", "slice_docs": "SLICE_DOCS", "piece_docs": "PIECE_DOCS",
                 "query_pool": "QUERY_POOL"}
        values = {f: int(os.environ[f"LONGDOC_BULK_{n}"]) for f, n in names.items()
                  if os.environ.get(f"LONGDOC_BULK_{n}")}
        return cls(**values)


CUSTOM_ID_HASH_CHARS = 12
"""Hex characters of SHA-256 over the exact run id in a ``custom_id`` (48 bits)."""


def custom_id(run_id: str, round_number: int) -> str:
    """``<readable prefix>-<12 hex>-r<round>``: one request's ``custom_id``, distinct for distinct run ids.

    The prefix is the run id's first 40 characters with those outside ``[a-zA-Z0-9_-]`` replaced
    by ``_`` (for people reading a batch); the 12 hex of SHA-256 over the *exact* run id keep
    ids apart that the cleaning would merge (``run.a`` and ``run_a``). At most 40 + 1 + 12 + 2 +
    the round's digits characters, within the API's ``^[a-zA-Z0-9_-]{1,64}$``, which must also be
    unique within a batch (Message Batches create, platform.claude.com API reference, ``custom_id``:
    "Must be unique for each request within the Message Batch", minLength 1, maxLength 64).
    Raises ``ValueError`` for a round of more than 9 digits.
    """
    safe = re.sub(r"[^a-zA-Z0-9_-]", "_", run_id[:40])
    cid = f"{safe}-{hashlib.sha256(run_id.encode()).hexdigest()[:CUSTOM_ID_HASH_CHARS]}-r{round_number}"
    if not CUSTOM_ID.match(cid):
        raise ValueError(f"custom_id {cid!r} of run {run_id!r}, round {round_number} breaks the Message Batches rule")
    return cid


def split(requests: Iterable[dict[str, Any]], limits: BulkLimits) -> Iterator[list[dict[str, Any]]]:
    """Group requests into batches of at most ``limits.max_requests`` requests and ``limits.max_bytes``
    serialised bytes (JSON, UTF-8, plus 2 bytes of separator each). A single request over the byte
    limit raises ValueError (the API would refuse the batch)."""
    def cost(request: dict[str, Any]) -> int:
        size = len(json.dumps(request, ensure_ascii=False).encode()) + 2
        if size + 2 > limits.max_bytes:
            raise ValueError(f"request {request.get('custom_id')} is {size} bytes, over the batch limit")
        return size

    # The batch body's own 2 bytes come off the cap.
    yield from pack(requests, cost, max_items=limits.max_requests, max_cost=limits.max_bytes - 2)


def poll_wait(poll: int, limits: BulkLimits) -> int:
    """Seconds to wait before poll number ``poll`` (0-based): ``poll_first`` doubling, at most ``poll_cap``."""
    return min(limits.poll_first * 2 ** min(poll, 30), limits.poll_cap)


def polls_within(seconds: int, limits: BulkLimits) -> int:
    """How many polls the schedule makes in ``seconds`` (a batch's whole life: 24 h)."""
    elapsed = polls = 0
    while elapsed < seconds:
        elapsed += max(1, poll_wait(polls, limits))
        polls += 1
    return polls


MAX_JOB_DOCUMENTS = 10_000
"""Documents one bulk job may hold (the largest job ``POST /bulk-extractions`` accepts, issue 26)."""
ROUNDS_PER_EXECUTION = 3
"""Rounds one bulk execution runs before it continues as new (``ContinueAsNew`` in
``statemachine/bulk.asl.json``): 3 worst-case rounds (:func:`worst_round_events`, both the priming
batch and the round's batch taking 24 hours, :data:`MAX_JOB_DOCUMENTS` documents) stay under
:data:`HISTORY_EVENT_LIMIT` with a third of it left for retries; 12 rounds are 4 executions."""


def events_per_round(limits: BulkLimits, batch_seconds: int = BATCH_LIFETIME_SECONDS) -> int:
    """History events of one round whose batch takes ``batch_seconds``: polls x :data:`EVENTS_PER_POLL`
    plus Prepare, Submit, Harvest (5 each) and the round's Choice (2)."""
    return polls_within(batch_seconds, limits) * EVENTS_PER_POLL + 3 * 5 + 2


EVENTS_PER_TASK = 5
"""History events of a Task state that succeeds at once: entered, scheduled, started, succeeded, exited."""
EVENTS_PER_CHOICE = 2
"""History events of a Choice or Wait state: entered, exited."""


def map_events(iterations: int) -> int:
    """History events of an inline Map of one-Task iterations: MapStateEntered, MapStateStarted,
    MapStateSucceeded, MapStateExited, and per iteration MapIterationStarted, the Task's
    :data:`EVENTS_PER_TASK` and MapIterationSucceeded."""
    return 4 + iterations * (EVENTS_PER_TASK + 2)


def worst_round_events(limits: BulkLimits, documents: int = MAX_JOB_DOCUMENTS,
                       batch_seconds: int = BATCH_LIFETIME_SECONDS) -> int:
    """History events of one round without retries, at its worst: ``documents`` in
    ``ceil(documents / slice_docs)`` slices, and the priming batch and the round's batch each polled
    for ``batch_seconds`` (:func:`polls_within`). States: Prepare, the PrepareSlices Map, Prepared,
    HasRequests, Prime, Primed, the priming poll cycles, Submit, the poll cycles, Harvest, NextRound."""
    slices = -(-documents // max(1, limits.slice_docs))
    polls = polls_within(batch_seconds, limits)
    tasks = 5  # Prepare, Prepared, Prime, Submit, Harvest
    choices = 3  # HasRequests, Primed, NextRound
    return map_events(slices) + tasks * EVENTS_PER_TASK + choices * EVENTS_PER_CHOICE + 2 * polls * EVENTS_PER_POLL
