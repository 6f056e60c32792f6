"""Prompt-cache accounting of bulk rounds (issue 25, item 5): per item, per round, hit rate.

Each ``succeeded`` batch result's ``usage`` is recorded per item (``usage#<round>#<custom_id>``:
input, cache write, 5-minute and 1-hour, and cache read tokens, as billed), overwritten on a
re-run Harvest, so the round's figures (``cache#<round>``, :func:`round_cache`) count each item
once. ``hit_rate`` is the share of the round's items that read anything from the cache;
``read_share`` the share of their input tokens read from it. A round that was primed
(``prime#<round>``, :mod:`longdoc.bulk.submit`) and whose items read nothing is a miss worth a
warning: the prefix the priming batch wrote was not the items' prefix, or it expired.

The priming batch's own result is billed like any batch request (it writes the shared prefix at
the 1-hour rate), so its usage is kept too (``primeusage#<round>``, :func:`record_priming`, once
the batch has ended) and priced into the job's cost (:func:`priming_usage`,
:func:`longdoc.bulk.runs.bulk_status`, where it is also shown apart as ``priming``).
"""

from __future__ import annotations

from typing import Any

from longdoc.bulk.ports import BatchClient, BulkStore
from longdoc.core.messages import Usage


def record_usage(store: BulkStore, bulk_id: str, round_number: int, custom_id: str, usage: Usage) -> None:
    """Keep one item's billed usage (tokens) under ``usage#<round>#<custom_id>`` (idempotent)."""
    store.put(f"bulk#{bulk_id}", f"usage#{round_number:04d}#{custom_id}", {
        "input": usage.input_tokens, "read": usage.cache_read_input_tokens,
        "write": usage.cache_creation_input_tokens, "write_1h": usage.cache_creation_1h_input_tokens})


def round_cache(store: BulkStore, bulk_id: str, round_number: int) -> dict[str, Any]:
    """The round's cache figures, stored as ``cache#<round>`` and returned: ``{"round", "primed",
    "items", "reading", "hit_rate", "read_share", "input_tokens", "read_tokens", "write_tokens",
    "primed_miss"}`` (tokens; ``hit_rate`` / ``read_share`` in [0, 1], rounded to 4 places, 0.0
    for a round without results; ``primed_miss``: primed, with items, and nothing read)."""
    pk = f"bulk#{bulk_id}"
    items = [body for _, body in store.query(pk, f"usage#{round_number:04d}#")]
    read = sum(int(i["read"]) for i in items)
    write = sum(int(i["write"]) for i in items)  # both TTLs (Usage.cache_creation_input_tokens)
    total = sum(int(i["input"]) for i in items) + read + write
    reading = sum(1 for i in items if int(i["read"]) > 0)
    primed = store.get(pk, f"prime#{round_number:04d}") is not None
    out = {"round": round_number, "primed": primed, "items": len(items), "reading": reading,
           "hit_rate": round(reading / len(items), 4) if items else 0.0,
           "read_share": round(read / total, 4) if total else 0.0,
           "input_tokens": total, "read_tokens": read, "write_tokens": write,
           "primed_miss": primed and bool(items) and read == 0}
    store.put(pk, f"cache#{round_number:04d}", out)
    return out


def rounds_cache(store: BulkStore, bulk_id: str) -> list[dict[str, Any]]:
    """Every harvested round's :func:`round_cache` figures, in round order."""
    return [body for _, body in store.query(f"bulk#{bulk_id}", "cache#")]


def record_priming(store: BulkStore, batches: BatchClient, bulk_id: str, round_number: int, model: str) -> bool:
    """Keep the billed usage of round ``round_number``'s priming batch (ended) once, as
    ``primeusage#<round>``: ``{"batch_id", "model", "usage"}`` (every :class:`Usage` field, tokens,
    summed over its ``succeeded`` results: one; an errored or expired one is not billed and adds
    nothing). Returns whether this call recorded it (False: recorded already, or the round has no
    priming batch). Raises the client's errors (a retried step records it then)."""
    pk = f"bulk#{bulk_id}"
    prime = store.get(pk, f"prime#{round_number:04d}")
    if prime is None or store.get(pk, f"primeusage#{round_number:04d}") is not None:
        return False
    usage = Usage()
    for result in batches.results(str(prime["batch_id"])):
        if result.type == "succeeded" and result.response is not None:
            usage = usage.add(result.response.usage)
    store.put(pk, f"primeusage#{round_number:04d}", {"batch_id": prime["batch_id"], "model": model,
                                                      "usage": usage.model_dump()})
    return True


def priming_usage(store: BulkStore, bulk_id: str) -> list[tuple[str, Usage]]:
    """``(model, usage)`` of every recorded priming batch of the job, in round order (one request each)."""
    return [(str(body["model"]), Usage(**body["usage"]))
            for _, body in store.query(f"bulk#{bulk_id}", "primeusage#")]
