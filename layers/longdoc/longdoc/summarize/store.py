"""Where a summary lives in the blob store (S3, or the local folder): its record, plan, partials and result.

``summaries/<summary_id>/record.json`` (:class:`SummaryRecord`), ``plan.json``
(:class:`Plan`), ``map/<group>.json`` and ``reduce/<level>-in<budget>/<batch>.json`` (reduce
levels keyed by the reduce input budget they were cut for, so a rerun with another
``LONGDOC_SUMMARY_REDUCE_INPUT_TOKENS`` recomputes them and keeps the map partials)
(:class:`Partial`), ``result.json`` (the final result), ``spent/<key of the step's output>`` (the usage of
replies billed by failed attempts of a step, :func:`add_spent`). A partial is written once, whole
(the blob store's puts are atomic), so a killed run resumes without redoing it. Only ids
and counters travel through the state machine.
"""

from __future__ import annotations

import json
from typing import Any

from longdoc.core.clock import utc_now
from longdoc.core.errors import NotFound
from longdoc.core.messages import Usage
from longdoc.core.ports import BlobStore
from longdoc.summarize.models import Partial, Plan, SummaryRecord


def prefix(summary_id: str) -> str:
    """``summaries/<summary_id>/``."""
    return f"summaries/{summary_id}/"


def record_key(summary_id: str) -> str:
    """Key of the summary's record."""
    return prefix(summary_id) + "record.json"


def plan_key(summary_id: str) -> str:
    """Key of the summary's plan (groups)."""
    return prefix(summary_id) + "plan.json"


def map_key(summary_id: str, index: int) -> str:
    """Key of the partial summary of group ``index``."""
    return prefix(summary_id) + f"map/{index:05d}.json"


def reduce_key(summary_id: str, level: int, batch: int, budget: int) -> str:
    """Key of reduce batch ``batch`` of level ``level`` (level 1 reduces the map partials), cut for a
    ``budget``-token reduce input (``summary_reduce_input_tokens``; module docstring)."""
    return prefix(summary_id) + f"reduce/{level:02d}-in{budget}/{batch:05d}.json"


def result_key(summary_id: str) -> str:
    """Key of the final result (JSON, the shape :func:`longdoc.summarize.steps.synthesize` writes)."""
    return prefix(summary_id) + "result.json"


def dropped_key(summary_id: str) -> str:
    """Key of the statements a summary that kept none dropped (JSON list, :func:`save_dropped`)."""
    return prefix(summary_id) + "dropped.json"


def save_dropped(blobs: BlobStore, summary_id: str, dropped: list[dict[str, Any]]) -> None:
    """Keep what a summary without a kept statement dropped (``[{"text", "sections", "reason", "stage"}]``),
    for its FAILED status (:func:`longdoc.summarize.runs.summary_view`)."""
    blobs.put(dropped_key(summary_id), json.dumps(dropped, ensure_ascii=False, indent=1).encode("utf-8"))


def load_dropped(blobs: BlobStore, summary_id: str) -> list[dict[str, Any]] | None:
    """What :func:`save_dropped` kept, or None when nothing was kept."""
    key = dropped_key(summary_id)
    return json.loads(blobs.get(key)) if blobs.exists(key) else None


def load_record(blobs: BlobStore, summary_id: str) -> SummaryRecord:
    """The summary's record. Raises :class:`NotFound` for an unknown id."""
    try:
        return SummaryRecord.model_validate_json(blobs.get(record_key(summary_id)))
    except NotFound:
        raise NotFound(f"summary {summary_id} does not exist") from None


def find_record(blobs: BlobStore, summary_id: str) -> SummaryRecord | None:
    """The summary's record, or None."""
    return load_record(blobs, summary_id) if blobs.exists(record_key(summary_id)) else None


def save_record(blobs: BlobStore, record: SummaryRecord) -> SummaryRecord:
    """Store the record with ``updated_at`` set to now; returns what was stored."""
    record = record.model_copy(update={"updated_at": utc_now()})
    blobs.put(record_key(record.summary_id), record.model_dump_json(indent=1).encode())
    return record


def load_plan(blobs: BlobStore, summary_id: str) -> Plan:
    """The stored plan. Raises :class:`NotFound` when the run has not planned yet."""
    return Plan.model_validate_json(blobs.get(plan_key(summary_id)))


def save_plan(blobs: BlobStore, summary_id: str, plan: Plan) -> None:
    """Store the plan."""
    blobs.put(plan_key(summary_id), plan.model_dump_json().encode())


def load_partial(blobs: BlobStore, key: str) -> Partial:
    """A stored partial summary by key."""
    return Partial.model_validate_json(blobs.get(key))


def save_partial(blobs: BlobStore, key: str, partial: Partial) -> None:
    """Store a partial summary under ``key`` (written whole)."""
    blobs.put(key, partial.model_dump_json().encode())


def load_result(blobs: BlobStore, summary_id: str) -> dict[str, Any] | None:
    """The final result, or None before the summary succeeded."""
    key = result_key(summary_id)
    return json.loads(blobs.get(key)) if blobs.exists(key) else None


def save_result(blobs: BlobStore, summary_id: str, result: dict[str, Any]) -> None:
    """Store the final result as JSON (UTF-8, non-ASCII kept)."""
    blobs.put(result_key(summary_id), json.dumps(result, ensure_ascii=False, indent=1).encode("utf-8"))


def spent_key(step_key: str) -> str:
    """Key of the usage billed by failed attempts of the step that writes ``step_key``:
    ``summaries/<id>/map/00003.json`` -> ``summaries/<id>/spent/map/00003.json`` (reduce batches and
    the result likewise)."""
    root, summary_id, rest = step_key.split("/", 2)
    return f"{root}/{summary_id}/spent/{rest}"


def load_spent(blobs: BlobStore, step_key: str) -> Usage:
    """The usage billed by failed attempts of that step (tokens; zero when none failed after a billed reply)."""
    key = spent_key(step_key)
    return Usage.model_validate_json(blobs.get(key)) if blobs.exists(key) else Usage()


def add_spent(blobs: BlobStore, step_key: str, usage: Usage) -> None:
    """Add ``usage`` (the replies a failed attempt got before it failed) to that step's spent usage.

    One writer per step (a step's attempts run one after another), so read-add-write is safe.
    """
    if usage.prompt_tokens() or usage.output_tokens:
        blobs.put(spent_key(step_key), load_spent(blobs, step_key).add(usage).model_dump_json().encode())


def failures_key(step_key: str) -> str:
    """Key of the count of failed attempts of the step that writes ``step_key``
    (``summaries/<id>/failures/map/00003.json``)."""
    root, summary_id, rest = step_key.split("/", 2)
    return f"{root}/{summary_id}/failures/{rest}"


def add_failure(blobs: BlobStore, step_key: str) -> int:
    """Count one more failed attempt of that step; returns the count so far (1 for the first).

    One writer per step (a step's attempts run one after another), so read-add-write is safe.
    """
    key = failures_key(step_key)
    count = int(blobs.get(key).decode()) + 1 if blobs.exists(key) else 1
    blobs.put(key, str(count).encode())
    return count
