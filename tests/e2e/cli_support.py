"""Shared helpers of the CLI end-to-end tests: a local home with the offline model, and one CLI call."""

from __future__ import annotations

import re
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


PROGRESS_LINE = re.compile(r"^longdoc: (?:parse|chunk|embed|index|summarise|eval \w+) .*: \d+ \w+ in [\d.]+ s"
                           r"(?: \([\d.]+ \w+/s\))?\n", re.M)
"""A progress line of a finished stage (:mod:`longdoc.cli.progress`, off a terminal); tests/e2e/test_cli_progress.py
checks them, the other tests read stderr without them."""


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``longdoc ARGV`` in-process: ``(exit status, stdout, stderr without its progress lines)``."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, PROGRESS_LINE.sub("", err)
