"""The registry's clock: one timestamp format for every stored record."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> str:
    """The current UTC time as ISO 8601 to the second (``2026-11-30T14:05:00+00:00``), the format of
    every ``created_at`` / ``updated_at`` the stores keep."""
    return datetime.now(UTC).isoformat(timespec="seconds")
