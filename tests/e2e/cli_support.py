"""Shared helpers of the CLI end-to-end tests: a local home with the offline model, and one CLI call."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from longdoc import wiring
from longdoc.cli import main


def offline_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Body of a ``home`` fixture: ``LONGDOC_HOME`` under ``tmp_path``, the offline baseline model, no API
    key, the wiring reset before and after; yields ``tmp_path``."""
    monkeypatch.setenv("LONGDOC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LONGDOC_MODEL", "baseline")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    wiring.reset()
    yield tmp_path
    wiring.reset()


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``longdoc ARGV`` in-process: ``(exit status, stdout, stderr)``."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
