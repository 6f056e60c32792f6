"""What both StateStore adapters share: checkpoint expiry, timestamps, checkpoint parsing and the conflict error."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

from longdoc.core import records as models
from longdoc.core.errors import CheckpointConflict, CheckpointSchemaError, RunLeaseLost
from longdoc.core.models import DocumentRecord
from longdoc.core.records import CASE_FACTS_SCHEMA_VERSION, Checkpoint, RunLease, migrate_checkpoint_data

CHECKPOINT_TTL_SECONDS = models.CHECKPOINT_TTL_SECONDS
"""Checkpoint lifetime after the run ends, in seconds (30 days); see :func:`checkpoint_expiry`."""


def checkpoint_expiry(now: float | None = None) -> int:
    """Epoch seconds at which an ended run's checkpoint expires (``now`` + 30 days)."""
    return int(time.time() if now is None else now) + CHECKPOINT_TTL_SECONDS


def now_iso() -> str:
    """Return the current UTC time as ISO 8601 with microseconds (``2025-01-31T12:00:00.000001+00:00``)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def parse_checkpoint(body: str, run_id: str) -> Checkpoint:
    """Parse a stored checkpoint body, migrating an older CASE_FACTS schema version.

    Version 1 is migrated by :func:`longdoc.core.records.migrate_checkpoint_data`; any other
    version than :data:`longdoc.core.records.CASE_FACTS_SCHEMA_VERSION` raises
    :class:`CheckpointSchemaError` naming the stored and the expected version.
    """
    data = json.loads(body)
    stored = (data.get("case_facts") or {}).get("schema_version")
    try:
        data = migrate_checkpoint_data(data)
    except ValueError:
        raise CheckpointSchemaError(
            f"checkpoint of run {run_id} has CASE_FACTS schema_version {stored}; "
            f"this code reads schema_version {CASE_FACTS_SCHEMA_VERSION} (and migrates 1 and 2)"
        ) from None
    return Checkpoint.model_validate(data)


def same_entry(stored: DocumentRecord | None, expected: DocumentRecord | None) -> bool:
    """Whether a stored registry entry is the ``expected`` one: both absent, or equal status and revision."""
    if stored is None or expected is None:
        return stored is None and expected is None
    return (stored.status, stored.revision) == (expected.status, expected.revision)


def conflict_error(checkpoint: Checkpoint) -> CheckpointConflict:
    """Build the error for a lost conditional checkpoint write."""
    expected = "no checkpoint" if checkpoint.version <= 1 else f"version {checkpoint.version - 1}"
    return CheckpointConflict(
        f"run {checkpoint.run_id}: cannot save checkpoint version {checkpoint.version}; "
        f"expected {expected} stored, another writer saved first"
    )


def lease_lost_error(run_id: str, fence: int, lease: RunLease | None) -> RunLeaseLost:
    """The error of a fenced write refused because the run's lease is no longer at generation ``fence``."""
    if lease is None:
        now = "no lease is stored any more"
    elif lease.released:
        now = f"the lease is at generation {lease.generation}, released by {lease.owner}"
    else:
        now = f"{lease.owner} holds it now (generation {lease.generation})"
    return RunLeaseLost(f"run {run_id}: this process lost the run's lease (it held generation {fence}; {now}); "
                        f"its write was refused and it stopped. See `longdoc runs show {run_id}`")
