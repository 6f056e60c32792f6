"""Every corpus document chunks exactly as the stored fingerprints say (ids, sections, boundaries, text hashes).

The stored list (tests/data/chunk_fingerprints.txt) was written before the package restructure of
issue 10; a refactor must leave it identical. A deliberate chunking change regenerates it with
``python scripts/chunk_fingerprints.py --write`` and the diff is reviewed in the same commit.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
CORPUS = REPO.parent / "shared" / "corpus"
sys.path.insert(0, str(REPO / "scripts"))

import chunk_fingerprints  # noqa: E402


@pytest.mark.slow  # parses and chunks every corpus document (about 16 CPU-s)
@pytest.mark.skipif(not CORPUS.is_dir(), reason="needs ../shared/corpus")
def test_every_corpus_document_keeps_its_chunk_ids_sections_and_boundaries() -> None:
    # Given the fingerprints stored before the restructure
    stored = chunk_fingerprints.STORED.read_text(encoding="utf-8").split("\n")[:-1]
    # When every corpus file is parsed and chunked with today's code
    now = chunk_fingerprints.fingerprint(CORPUS)
    # Then every line is identical (a diff names the first differences)
    assert len(now) == len(stored)
    diff = [(a, b) for a, b in zip(stored, now, strict=True) if a != b]
    assert diff == [], diff[:5]
