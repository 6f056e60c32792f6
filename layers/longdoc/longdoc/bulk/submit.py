"""Creating one batch per part exactly once, even when Submit dies between the API's create and
the write of the batch id (the crash window).

The Message Batches API takes no idempotency key and a batch carries no metadata
(https://docs.anthropic.com/en/api/creating-message-batches), so Submit writes ahead: before
``create`` it records the intent ``submitting#<round>#<part>`` (conditional write: the time, in
epoch seconds, and the part's request count). A Submit that finds an intent but no batch id
was interrupted after writing it, before or after ``create``; it lists the workspace's batches
newest first (``GET /v1/messages/batches``, https://docs.anthropic.com/en/api/listing-message-batches)
back to :data:`CLOCK_SKEW_SECONDS` before the intent and adopts the batch created there with
the part's request count that no other part of the job has recorded (several: the one created
nearest the intent, logged). None listed: if the intent is younger than
``limits.list_settle_seconds`` the list may not show the batch yet (as a retrieve may 404 right
after create), so :class:`BatchNotListedYet` is raised and the state machine retries Submit;
older, the create never happened and the batch is created now.

What adoption cannot rule out: another job's batch with the same request count created in the
same few seconds in the same workspace. Adopting it costs a round, not a result: its results
carry other ``custom_id`` values, which Harvest joins to nothing, and the part's runs, still
pending, are sent again in the next round.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from longdoc.bulk.parts import part_lines
from longdoc.bulk.ports import BatchClient, BatchInfo, BulkStore
from longdoc.core.errors import BatchNotListedYet
from longdoc.core.ports import BlobStore

log = logging.getLogger(__name__)

CLOCK_SKEW_SECONDS = 300
"""How far before the intent a batch's ``created_at`` may lie and still be the intent's (the API's
clock against ours; seconds)."""


def _total(info: BatchInfo) -> int:
    """All requests of a batch, whatever their state (processing, succeeded, errored, canceled, expired)."""
    return sum(int(v) for v in info.counts.values())


def find_created(batches: BatchClient, intent: dict[str, float | int], taken: set[str]) -> BatchInfo | None:
    """The batch an interrupted create made for ``intent`` (``{"at", "requests"}``): listed since
    ``at`` minus :data:`CLOCK_SKEW_SECONDS`, ``requests`` requests, its id not in ``taken``; None
    when no batch fits."""
    at = float(intent["at"])
    fits = [b for b in batches.list_recent(at - CLOCK_SKEW_SECONDS)
            if b.id not in taken and _total(b) == intent["requests"]]
    if len(fits) > 1:
        log.warning("%d batches fit an interrupted Submit (%s); adopting the one created nearest to it",
                    len(fits), ", ".join(b.id for b in fits))
    return min(fits, key=lambda b: abs((b.created_at or at) - at), default=None)


def create_once(blobs: BlobStore, store: BulkStore, batches: BatchClient, bulk_id: str, label: str,
                part: dict[str, object], *, settle_seconds: int, clock: Callable[[], float] = time.time) -> bool:
    """Make sure the part ``label`` (``<round>#<part>``; its item ``part``: blob key, request count)
    has exactly one batch, recorded as ``batch#<label>``; returns whether this call created it.

    Raises :class:`BatchNotListedYet` (see the module docstring) and the client's errors."""
    pk = f"bulk#{bulk_id}"
    if not store.put_if_absent(pk, f"submitting#{label}", {"at": clock(), "requests": part["requests"]}):
        intent = store.get(pk, f"submitting#{label}") or {}
        # batches already recorded, the rounds' priming batches included, are never adopted
        taken = {item["batch_id"] for _, item in [*store.query(pk, "batch#"), *store.query(pk, "prime#")]}
        found = find_created(batches, intent, taken)
        if found is not None:
            log.warning("Submit of %s was interrupted after creating %s; adopting it", label, found.id)
            store.put_if_absent(pk, f"batch#{label}", {"batch_id": found.id, "adopted": True})
            return False
        if clock() - float(intent["at"]) < settle_seconds:
            raise BatchNotListedYet(f"bulk {bulk_id} part {label}: an interrupted Submit's batch is not listed "
                                    f"(yet); retried until {settle_seconds} s after the intent")
    info = batches.create([json.loads(line) for line in part_lines(blobs, part)])
    if store.put_if_absent(pk, f"batch#{label}", {"batch_id": info.id}):
        return True
    log.warning("batch %s lost the conditional write for %s; cancelling it", info.id, label)
    batches.cancel(info.id)
    return False


PRIME_TEXT = "This request only primes the prompt cache for the requests that follow; answer with OK."
"""The user message of a priming request (its answer is never read)."""
PRIME_MAX_TOKENS = 64
"""Output cap of a priming request (tokens): its answer is thrown away."""


def priming_request(item: dict[str, Any], round_number: int) -> dict[str, Any]:
    """The one request of a round's priming batch: ``item`` (the round's first request,
    ``{"custom_id", "params"}``) with the same params (model, tools and system with their 1-hour
    cache marks, settings), so its prefix up to the last breakpoint is byte-identical to every item
    of the round, and a short user message of its own (:data:`PRIME_TEXT`, :data:`PRIME_MAX_TOKENS`).

    Message Batches and Messages calls keep separate caches and the items of one batch do not read
    each other's writes (issue 25; not found on a docs page), so a round is primed by a batch."""
    params = {**item["params"], "max_tokens": PRIME_MAX_TOKENS,
              "messages": [{"role": "user", "content": [{"type": "text", "text": PRIME_TEXT}]}]}
    return {"custom_id": f"prime-r{round_number}", "params": params}


def prime_once(blobs: BlobStore, store: BulkStore, batches: BatchClient, bulk_id: str, round_number: int,
               first_part: dict[str, object], *, settle_seconds: int, clock: Callable[[], float] = time.time) -> str:
    """The id of round ``round_number``'s priming batch, created at most once (item ``prime#<round>``).

    Idempotent as :func:`create_once` is for parts: a retried or redriven step finds the recorded
    id and creates nothing; the write-ahead intent ``priming#<round>`` lets a step that died between
    the API's create and the write adopt the batch it made (one request, listed since the intent).
    ``first_part`` is the round's first part item (its blob's first line is the round's first
    request, :func:`priming_request`). Raises :class:`BatchNotListedYet` and the client's errors."""
    pk, sk = f"bulk#{bulk_id}", f"prime#{round_number:04d}"
    recorded = store.get(pk, sk)
    if recorded is not None:
        return str(recorded["batch_id"])
    if not store.put_if_absent(pk, f"priming#{round_number:04d}", {"at": clock(), "requests": 1}):
        intent = store.get(pk, f"priming#{round_number:04d}") or {}
        taken = {item["batch_id"] for _, item in [*store.query(pk, "batch#"), *store.query(pk, "prime#")]}
        found = find_created(batches, intent, taken)
        if found is not None:
            log.warning("priming of round %d was interrupted after creating %s; adopting it", round_number, found.id)
            store.put_if_absent(pk, sk, {"batch_id": found.id, "adopted": True})
            return str((store.get(pk, sk) or {"batch_id": found.id})["batch_id"])
        if clock() - float(intent["at"]) < settle_seconds:
            raise BatchNotListedYet(f"bulk {bulk_id} round {round_number}: an interrupted priming batch is not "
                                    f"listed (yet); retried until {settle_seconds} s after the intent")
    first = next(part_lines(blobs, first_part))
    info = batches.create([priming_request(json.loads(first), round_number)])
    if store.put_if_absent(pk, sk, {"batch_id": info.id}):
        return info.id
    log.warning("priming batch %s lost the conditional write for round %d; cancelling it", info.id, round_number)
    batches.cancel(info.id)
    return str((store.get(pk, sk) or {"batch_id": info.id})["batch_id"])
