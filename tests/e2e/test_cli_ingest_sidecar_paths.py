"""``longdoc ingest dir/*``: a sidecar among the paths is read with its document, never ingested as one."""

from __future__ import annotations

import json

import pytest

from longdoc import wiring
from longdoc.cli import main
from tests.e2e.cli_support import offline_home

pytestmark = pytest.mark.slow

WORDING = "# Home Wording\n\n## 1 Fire\n\nWe pay for direct physical loss caused by fire or lightning.\n"
SIDECAR = {"collection": "home-set", "doc_type": "policy", "line_of_business": "home", "effective_from": "2024-01-01"}


@pytest.fixture
def folder(tmp_path, monkeypatch):
    for home in offline_home(tmp_path, monkeypatch):
        (home / "wording.md").write_text(WORDING, encoding="utf-8")
        (home / "wording.md.metadata.json").write_text(json.dumps(SIDECAR), encoding="utf-8")
        yield home


def test_a_document_and_its_sidecar_both_given_ingest_the_document_once(folder, capsys) -> None:
    # Given `ingest wording.md wording.md.metadata.json` (what `ingest dir/*` passes)
    # When it runs, Then it ends (it used to wait forever for a claim) with one row, the sidecar applied
    assert main(["ingest", "--json", str(folder / "wording.md"), str(folder / "wording.md.metadata.json")]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["doc_id"] for r in rows] == ["wording"]
    record = wiring.state_store().get_document("wording")
    assert record is not None and record.metadata.collection == "home-set"


def test_a_sidecar_alone_ingests_its_document(folder, capsys) -> None:
    assert main(["ingest", "--json", str(folder / "wording.md.metadata.json")]) == 0
    captured = capsys.readouterr()
    assert [json.loads(line)["doc_id"] for line in captured.out.splitlines()] == ["wording"]
    assert "is a sidecar; ingesting its document" in captured.err


def test_a_sidecar_without_its_document_is_one_error_naming_both(folder, capsys) -> None:
    (folder / "wording.md").unlink()
    assert main(["ingest", str(folder / "wording.md.metadata.json")]) == 1
    err = capsys.readouterr().err
    assert "wording.md.metadata.json: is a sidecar (metadata of wording.md)" in err and "is not there" in err
