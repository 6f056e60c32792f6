"""Fixtures shared by the CLI end-to-end tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from longdoc import wiring


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh ``LONGDOC_HOME`` under ``tmp_path`` with the offline baseline model, no Anthropic key and the
    bulk polling and batch-hold settings of the machine cleared; adapters rebuilt before and after."""
    monkeypatch.setenv("LONGDOC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LONGDOC_MODEL", "baseline")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    for name in ("LONGDOC_BULK_POLL_FIRST", "LONGDOC_BULK_POLL_CAP", "LONGDOC_LOCAL_BATCH_HOLD_SECONDS"):
        monkeypatch.delenv(name, raising=False)
    wiring.reset()
    yield tmp_path
    wiring.reset()
