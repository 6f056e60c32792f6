"""Shared fixtures: the real corpus and gold sets in ../shared (never copied into the repo)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = (REPO_ROOT / ".." / "shared").resolve()


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """``../shared/corpus`` beside the repo; fails clearly if it is missing."""
    path = SHARED / "corpus"
    assert path.is_dir(), f"corpus not found at {path}: clone next to ../shared"
    return path


@pytest.fixture(scope="session")
def gold_dir() -> Path:
    """``../shared/gold`` beside the repo; fails clearly if it is missing."""
    path = SHARED / "gold"
    assert path.is_dir(), f"gold cases not found at {path}: clone next to ../shared"
    return path
