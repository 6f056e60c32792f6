"""Issue 26: documents ingested before the collection index existed are indexed by ``longdoc admin reindex-collections``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from longdoc import wiring
from longdoc.cli import main
from longdoc.core.models import DocumentMetadata, DocumentRecord
from longdoc.triage.collections import load_collection


def test_reindex_makes_old_documents_visible_to_triage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    # Given a local home with two documents of collection "Motor" and one without, whose index rows
    # are missing (stored before the index existed)
    monkeypatch.setenv("LONGDOC_HOME", str(tmp_path))
    wiring.reset()
    state = wiring.state_store()
    for doc_id, collection in (("w1", "Motor"), ("w2", "Motor"), ("x", None)):
        state.put_document(DocumentRecord(doc_id=doc_id, doc_version="abcd1234abcd1234", source=f"{doc_id}.pdf",
                                          status="READY", pages=1, chunks=1, updated_at="2025-01-31T12:00:00+00:00",
                                          metadata=DocumentMetadata(collection=collection)))
    db = state.path  # type: ignore[attr-defined] - the SQLite store of local mode
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM collection_members")
    assert state.collection_members("Motor") == []
    # When the backfill runs
    assert main(["admin", "reindex-collections"]) == 0
    # Then it reports what it indexed and triage finds both members
    assert json.loads(capsys.readouterr().out) == {"documents": 3, "indexed": 2}
    assert [m.doc_id for m in load_collection(state, "Motor")] == ["w1", "w2"]
    wiring.reset()
