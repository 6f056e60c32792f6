"""``longdoc ingest`` / ``watch`` / ``collections show`` on the outside tester's sidecar findings (issue 31):
a rejected sidecar is recorded FAILED naming the sidecar, a sidecar-only change says "metadata updated"
(or "re-chunked"), and a second wording in force on the same dates is ingested with a warning naming both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longdoc import wiring
from tests.e2e.cli_support import offline_home, run_cli

pytestmark = pytest.mark.slow
WORDING = Path(__file__).resolve().parents[1] / "data" / "triage" / "policy-set" / "homeowners-wording-2024.md"


@pytest.fixture()
def home(tmp_path, monkeypatch):
    yield from offline_home(tmp_path, monkeypatch)


_cli = run_cli


def _wording(home: Path, name: str, sidecar: dict | str | None, extra: str = "") -> Path:
    path = home / name
    path.write_text(WORDING.read_text(encoding="utf-8") + extra, encoding="utf-8")
    if sidecar is not None:
        raw = sidecar if isinstance(sidecar, str) else json.dumps(sidecar)
        (home / (name + ".metadata.json")).write_text(raw, encoding="utf-8")
    return path


def _home(term: str, start: str, end: str, lob: str = "home") -> dict:
    return {"collection": "set", "line_of_business": lob, "term": term, "effective_from": start, "effective_to": end}


@pytest.mark.parametrize(("sidecar", "problem"), [
    ("{bad", "metadata sidecar incoming/w.md.metadata.json is not valid JSON (Expecting property name"),
    ("[1]", "metadata sidecar incoming/w.md.metadata.json must be a JSON object, not an array"),
    ('{"effective_from": "2024-13-01"}',
     "metadata effective_from (sidecar incoming/w.md.metadata.json): must be an ISO date"),
    ('{"collection": 5, "term": 2024}',
     'metadata term (sidecar incoming/w.md.metadata.json): must be a string, not the number 2024 '
     '(write it in quotes: "2024"); metadata collection (sidecar incoming/w.md.metadata.json): must be a string, '
     'not the number 5'),
    ('{"effective_from": "2024-06-01", "effective_to": "2024-01-31"}',
     "metadata effective_to (sidecar incoming/w.md.metadata.json): effective_to 2024-01-31 is before "
     "effective_from 2024-06-01"),
])
def test_a_new_document_with_a_rejected_sidecar_is_recorded_failed_naming_the_sidecar(home, capsys, sidecar,
                                                                                      problem) -> None:
    # Given a new wording whose sidecar is bad
    path = _wording(home, "w.md", sidecar)
    # When it is ingested / Then one line names the file, the sidecar and the problem
    code, out, err = _cli(capsys, "ingest", str(path))
    assert (code, out) == (1, "") and err.startswith(f"longdoc: {path}: {problem}") and len(err.splitlines()) == 1
    # And its version is recorded FAILED with that reason (before: not registered, "document w is not ingested")
    record = wiring.state_store().get_document("w")
    assert record is not None and record.status == "FAILED" and record.reason.startswith(problem)
    code, _, err = _cli(capsys, "chunks", "w")
    assert code == 1 and f"document w is FAILED: {problem}" in err
    # And once the sidecar is fixed the same bytes ingest
    (home / "w.md.metadata.json").write_text(json.dumps(_home("2024", "2024-01-01", "2024-12-31")))
    code, out, _ = _cli(capsys, "ingest", str(path), "--json")
    assert code == 0 and json.loads(out)["change"] == "ingested"


def test_a_rejected_sidecar_on_a_ready_version_keeps_its_chunks_and_metadata(home, capsys) -> None:
    # Given a wording READY under a good sidecar
    path = _wording(home, "w.md", _home("2024", "2024-01-01", "2024-12-31"))
    assert _cli(capsys, "ingest", str(path))[0] == 0
    # When its sidecar turns into broken JSON and it is ingested again
    (home / "w.md.metadata.json").write_text("{bad")
    code, _, err = _cli(capsys, "ingest", str(path))
    # Then it fails naming the sidecar, and the READY version keeps its chunks and metadata
    assert code == 1 and "metadata sidecar incoming/w.md.metadata.json is not valid JSON" in err
    assert wiring.state_store().get_document("w").status == "READY"
    _, shown, _ = _cli(capsys, "chunks", "w", "--json")
    assert {c["term"] for c in json.loads(shown)} == {"2024"}


def test_a_sidecar_only_change_says_metadata_updated_and_a_profile_change_says_rechunked(home, capsys) -> None:
    # Given a wording ingested with no sidecar (the deployment's 1000/2000 chunks)
    path = _wording(home, "w.md", None)
    code, out, _ = _cli(capsys, "ingest", str(path), "--json")
    first = json.loads(out)
    assert (code, first["change"], first["skipped"]) == (0, "ingested", False)
    # When a collection sidecar appears / Then the same version is re-chunked with the policy profile
    (home / "w.md.metadata.json").write_text(json.dumps(_home("2024", "2024-01-01", "2024-12-31")))
    code, out, _ = _cli(capsys, "ingest", str(path))
    assert code == 0 and "re-chunked (1000/2000/0.15 -> 300/400/0.15: another chunk profile; metadata updated)" in out
    # When only the term changes / Then it says metadata updated (before: "unchanged", "skipped": true)
    (home / "w.md.metadata.json").write_text(json.dumps(_home("2024b", "2024-01-01", "2024-12-31")))
    code, out, _ = _cli(capsys, "ingest", str(path), "--json")
    row = json.loads(out)
    assert (code, row["change"], row["skipped"], row["doc_version"]) == (0, "metadata updated", False,
                                                                         first["doc_version"])
    _, shown, _ = _cli(capsys, "chunks", "w", "--json")
    assert {c["term"] for c in json.loads(shown)} == {"2024b"}
    # And the same bytes and sidecar again are unchanged
    code, out, _ = _cli(capsys, "ingest", str(path))
    assert code == 0 and "unchanged (same bytes and metadata already READY)" in out


def test_an_overlapping_wording_is_ingested_with_a_warning_and_collections_show_flags_it(home, capsys) -> None:
    # Given a 2024 home wording and its endorsement, and a 2025 wording starting the day after
    endorsement = {**_home("2024", "2024-03-01", "2024-12-31"), "endorses": "w2024"}
    paths = [_wording(home, "w2024.md", _home("2024", "2024-01-01", "2024-12-31")),
             _wording(home, "e2024.md", endorsement, "\nEndorsement.\n"),
             _wording(home, "w2025.md", _home("2025", "2025-01-01", "2025-12-31"), "\n2025 reissue.\n")]
    code, _, err = _cli(capsys, "ingest", *map(str, paths))
    assert (code, err) == (0, "")
    # When a second 2024 wording of the same line, in force from June, is ingested
    late = _wording(home, "w2024b.md", _home("2024b", "2024-06-01", "2025-05-31", lob="Home"), "\nLate.\n")
    code, out, err = _cli(capsys, "ingest", str(late), "--json")
    # Then it is ingested, and warns naming each wording it overlaps and the shared dates
    assert code == 0 and json.loads(out)["change"] == "ingested"
    lines = err.splitlines()
    assert len(lines) == 2 and all(line.startswith(f"longdoc: {late}: WARNING: ") for line in lines)
    assert "home wordings w2024 (2024-01-01..2024-12-31) and w2024b (2024-06-01..2025-05-31) of collection 'set' " \
           "are both in force 2024-06-01..2024-12-31" in lines[0]
    assert "w2024b (2024-06-01..2025-05-31) and w2025 (2025-01-01..2025-12-31)" in lines[1]
    assert json.loads(out)["warnings"] == [line.split("WARNING: ", 1)[1] for line in lines]
    # And collections show flags both overlaps (text and JSON)
    code, out, _ = _cli(capsys, "collections", "show", "set")
    assert code == 0 and sum(line.startswith("  OVERLAP: home wordings") for line in out.splitlines()) == 2
    _, out, _ = _cli(capsys, "collections", "show", "set", "--json")
    assert json.loads(out)["overlaps"] == [
        {"line_of_business": "home", "doc_ids": ["w2024", "w2024b"], "from": "2024-06-01", "to": "2024-12-31"},
        {"line_of_business": "home", "doc_ids": ["w2024b", "w2025"], "from": "2025-01-01", "to": "2025-05-31"}]
    # When its dates are fixed in the sidecar / Then no warning and no overlap remain
    (home / "w2024b.md.metadata.json").write_text(json.dumps(_home("2026", "2026-01-01", "2026-12-31")))
    code, out, err = _cli(capsys, "ingest", str(late))
    assert (code, err) == (0, "") and "metadata updated" in out
    _, out, _ = _cli(capsys, "collections", "show", "set", "--json")
    assert json.loads(out)["overlaps"] == []


def test_watch_warns_about_an_overlapping_wording_it_ingests(home, capsys) -> None:
    # Given a drop folder with two home wordings in force on the same dates
    drop = home / "drop"
    drop.mkdir()
    _wording(drop, "a.md", _home("2024", "2024-01-01", "2024-12-31"))
    _wording(drop, "b.md", _home("2024b", "2024-12-01", "2025-12-31"), "\nB.\n")
    # When the folder is watched once / Then both are ingested and the second names the overlap
    code, out, err = _cli(capsys, "watch", str(drop), "--once")
    assert code == 0 and len(out.splitlines()) == 2
    assert "WARNING: home wordings a (2024-01-01..2024-12-31) and b (2024-12-01..2025-12-31)" in err


def test_a_misspelt_sidecar_key_is_ingested_with_a_warning_naming_the_closest_key(home, capsys) -> None:
    # Given a wording whose sidecar misspells both dates (the tester's M3: efective_from, effective_too)
    sidecar = {"collection": "sc", "line_of_business": "renters", "efective_from": "2021-01-01",
               "effective_too": "2021-12-31"}
    path = _wording(home, "w.md", sidecar)
    side = "metadata sidecar incoming/w.md.metadata.json"
    expected = [f"{side}: unknown key 'efective_from' ignored (did you mean 'effective_from'?)",
                f"{side}: unknown key 'effective_too' ignored (did you mean 'effective_to'?)"]
    # When it is ingested / Then it is ingested and each unknown key is a warning naming the known key
    code, out, err = _cli(capsys, "ingest", str(path), "--json")
    assert (code, json.loads(out)["change"], json.loads(out)["warnings"]) == (0, "ingested", expected)
    assert err.splitlines() == [f"longdoc: {path}: WARNING: {w}" for w in expected]
    # And the same bytes and sidecar again still warn (the record keeps them)
    code, out, _ = _cli(capsys, "ingest", str(path), "--json")
    assert (json.loads(out)["change"], json.loads(out)["warnings"]) == ("unchanged", expected)
    # When the keys are fixed / Then the metadata is updated and the warnings are gone
    (home / "w.md.metadata.json").write_text(json.dumps(_home("2021", "2021-01-01", "2021-12-31", "renters")))
    code, out, err = _cli(capsys, "ingest", str(path), "--json")
    assert (code, json.loads(out)["change"], json.loads(out)["warnings"], err) == (0, "metadata updated", [], "")


def test_watch_prints_a_misspelt_sidecar_key_warning_as_ingest_does(home, capsys) -> None:
    # Given a drop folder holding a wording whose sidecar misspells line_of_business
    drop = home / "drop"
    drop.mkdir()
    sidecar = {"collection": "sc", "line_of_busines": "home", "effective_from": "2021-01-01"}
    path = _wording(drop, "w.md", sidecar)
    # When the folder is watched once / Then it is ingested and stderr names the key and the closest one
    code, out, err = _cli(capsys, "watch", str(drop), "--once")
    assert code == 0 and len(out.splitlines()) == 1
    assert (f"longdoc: {path.resolve()}: WARNING: metadata sidecar incoming/w.md.metadata.json: unknown key "
            "'line_of_busines' ignored (did you mean 'line_of_business'?)") in err.splitlines()


def test_watch_keeps_a_ready_document_in_place_when_its_sidecar_edit_is_bad(home, capsys) -> None:
    # Given a drop folder whose wording was ingested READY by watch --once
    drop = home / "drop"
    drop.mkdir()
    path = _wording(drop, "w.md", _home("2025", "2025-01-01", "2025-12-31"))
    assert _cli(capsys, "watch", str(drop), "--once")[0] == 0
    # When its sidecar is edited to dates that end before they start, and the folder is watched again
    (drop / "w.md.metadata.json").write_text(json.dumps(_home("2025", "2025-01-01", "2024-12-31")))
    code, out, err = _cli(capsys, "watch", str(drop), "--once")
    # Then the document is not moved to failed/: it stays, READY with its earlier metadata, and stderr says why
    assert code == 1 and path.is_file() and not (drop / "failed").exists()
    assert "effective_to 2024-12-31 is before effective_from 2025-01-01" in err
    assert "the document stays here, READY with its earlier metadata: fix the sidecar (will retry)" in err
    record = wiring.state_store().get_document("w")
    assert record.status == "READY" and record.metadata.effective_to == "2025-12-31"
    # When the sidecar is fixed, Then the next run applies it
    (drop / "w.md.metadata.json").write_text(json.dumps(_home("2025", "2025-01-01", "2025-06-30")))
    code, out, err = _cli(capsys, "watch", str(drop), "--once")
    assert code == 0 and "metadata updated" in out
    assert wiring.state_store().get_document("w").metadata.effective_to == "2025-06-30"


def test_ingest_json_prints_a_failed_row_for_each_bad_file_and_rows_for_the_rest(home, capsys) -> None:
    # Given a good wording, one whose sidecar is not JSON, and a path that is not there
    good = _wording(home, "good.md", _home("2024", "2024-01-01", "2024-12-31"))
    bad = _wording(home, "bad.md", "{bad")
    missing = home / "missing.md"
    # When they are ingested with --json
    code, out, err = _cli(capsys, "ingest", str(good), str(bad), str(missing), "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    # Then stdout has one JSON row per file, in order: the bad ones as "failed" with the stderr reason
    assert code == 1 and [r.get("change") for r in rows] == ["ingested", "failed", "failed"]
    assert rows[1]["source"] == str(bad) and rows[1]["error"].startswith(
        f"{bad}: metadata sidecar incoming/bad.md.metadata.json is not valid JSON")
    assert rows[2] == {"source": str(missing), "change": "failed", "error": f"{missing}: no such file"}
    assert [f"longdoc: {rows[1]['error']}", f"longdoc: {rows[2]['error']}"] == [
        line for line in err.splitlines() if "WARNING" not in line]


def test_watch_json_retry_of_a_bad_sidecar_edit_shows_the_ready_version_counts(home, capsys) -> None:
    # Given a wording watched READY, then its sidecar edited to dates that end before they start
    drop = home / "drop"
    drop.mkdir()
    _wording(drop, "w.md", _home("2025", "2025-01-01", "2025-12-31"))
    code, out, _ = _cli(capsys, "watch", str(drop), "--once", "--json")
    ready = json.loads(out)
    (drop / "w.md.metadata.json").write_text(json.dumps(_home("2025", "2025-01-01", "2024-12-31")))
    # When it is watched again with --json
    code, out, _ = _cli(capsys, "watch", str(drop), "--once", "--json")
    retry = json.loads(out)
    # Then the RETRY row carries the READY version's pages and chunks (before: "chunks": 0)
    assert code == 1 and retry["status"] == "RETRY" and ready["chunks"] > 0
    assert (retry["doc_version"], retry["pages"], retry["chunks"]) == (ready["doc_version"], ready["pages"],
                                                                       ready["chunks"])


def test_an_endorsement_of_a_wording_not_in_its_collection_is_ingested_with_a_warning(home, capsys) -> None:
    # Given a 2024 wording w2024 in collection 'set'
    assert _cli(capsys, "ingest", str(_wording(home, "w2024.md", _home("2024", "2024-01-01", "2024-12-31"))))[0] == 0
    # When an endorsement naming a misspelt wording (w2042) is ingested
    sidecar = {**_home("2024", "2024-03-01", "2024-12-31"), "endorses": "w2042"}
    orphan = _wording(home, "e.md", sidecar, "\nEndorsement.\n")
    code, out, err = _cli(capsys, "ingest", str(orphan), "--json")
    # Then it is ingested, and one warning names the missing wording and the collection
    assert code == 0 and json.loads(out)["change"] == "ingested"
    assert err.splitlines() == [f"longdoc: {orphan}: WARNING: endorses 'w2042', which is not a wording of collection "
                                "'set' (not ingested yet, misspelt, or in another collection): triage leaves this "
                                "endorsement out until that wording is ingested into the collection"]
    # And an endorsement of the wording that is there gets no warning
    good = _wording(home, "e2.md", {**sidecar, "endorses": "w2024"}, "\nAnother endorsement.\n")
    code, out, err = _cli(capsys, "ingest", str(good), "--json")
    assert (code, json.loads(out)["warnings"], err) == (0, [], "")


def test_a_wording_and_its_endorsement_in_one_command_are_ingested_wording_first_without_a_warning(home,
                                                                                                   capsys) -> None:
    # Given an endorsement whose name sorts before its wording's (a-endorsement.md < w2024.md)
    endorsement = _wording(home, "a-endorsement.md", {**_home("2024", "2024-03-01", "2024-12-31"),
                                                      "endorses": "w2024"}, "\nEndorsement.\n")
    wording = _wording(home, "w2024.md", _home("2024", "2024-01-01", "2024-12-31"))
    # When both are ingested in that order by one command
    code, out, err = _cli(capsys, "ingest", str(endorsement), str(wording), "--json")
    # Then the wording is taken first, and the endorsement finds it: no missing-wording warning
    rows = [json.loads(line) for line in out.splitlines()]
    assert (code, err) == (0, "") and [r["doc_id"] for r in rows] == ["w2024", "a-endorsement"]
    assert all(r["warnings"] == [] for r in rows)


def test_watch_takes_wordings_before_endorsements(home, capsys) -> None:
    # Given a drop folder holding an endorsement that sorts before its wording
    drop = home / "drop"
    drop.mkdir()
    _wording(drop, "a-endorsement.md", {**_home("2024", "2024-03-01", "2024-12-31"), "endorses": "w2024"},
             "\nEndorsement.\n")
    _wording(drop, "w2024.md", _home("2024", "2024-01-01", "2024-12-31"))
    # When it is watched once
    code, out, err = _cli(capsys, "watch", str(drop), "--once", "--json")
    # Then the wording is ingested first and no warning is printed
    assert (code, err) == (0, "") and [json.loads(line)["doc_id"] for line in out.splitlines()] == [
        "w2024", "a-endorsement"]
