"""``longdoc collections`` / ``triage`` / ``eval triage`` as a user types them (local mode, BM25, no API key)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longdoc.cli import main
from tests.unit.triage_set import CLAIMS, GOLD, policy_set_home


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A LONGDOC_HOME holding the dev set's Markdown documents (the layout local wiring reads)."""
    yield from policy_set_home(tmp_path, monkeypatch)


def test_collections_and_show(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["collections"]) == 0
    assert capsys.readouterr().out.startswith("dev-policy-set")
    assert main(["collections", "show", "dev-policy-set"]) == 0
    out = capsys.readouterr().out
    assert "home       term 2024" in out and "endorsement 2024-03-01..2024-12-31  homeowners-sewer-backup" in out


def test_triage_prints_the_band_table_the_explain_bands_and_the_answer(home: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    claim = CLAIMS / "sewer-backup-2024.json"
    assert main(["triage", "--collection", "dev-policy-set", "--claim", str(claim), "--bm25", "--explain",
                 "--cost-line", "0.005,1,4,160"]) == 0
    out = capsys.readouterr().out
    assert "-> homeowners-wording-2024" in out and "RANK CLAUSE" in out
    assert "input budget 4360 tokens from cost line 0.005,1,4,160" in out and "reserved output" in out
    assert "decision: refer (offline baseline: ranked clauses only, no decision)" in out


def test_bad_input_is_one_line_on_stderr(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert main(["triage", "--collection", "dev-policy-set", "--claim", str(empty), "--bm25"]) == 1
    assert capsys.readouterr().err == f"longdoc: claim file {empty} is empty\n"
    assert main(["triage", "--collection", "motor", "--claim", str(CLAIMS / "sewer-backup-2024.json"), "--bm25"]) == 1
    assert capsys.readouterr().err == "longdoc: unknown collection 'motor' (known: dev-policy-set)\n"


def test_eval_triage_reports_recall_next_to_the_naive_baseline(home: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    homes = tmp_path / "home-gold.jsonl"
    homes.write_text("".join(line + "\n" for line in GOLD.read_text().splitlines() if '"id": "h' in line))
    assert main(["eval", "triage", "--gold", str(homes), "--collection", "dev-policy-set", "--bm25", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    overall = report["overall"]
    assert overall["claims"] == 29 and set(report["strata"]) == {
        "line_of_business=home", "term=2023", "term=2024", "kind=-", "split=dev",
        "wording=homeowners-wording-2023", "wording=homeowners-wording-2024"}
    assert overall["wrong_term_top3"] == 0.0 < overall["naive_wrong_term_top3"]
    assert overall["recall@3"] >= overall["naive_recall@3"]


def test_eval_html_to_a_directory_is_refused_before_the_run(home: Path, tmp_path: Path, capsys) -> None:
    # Given --html naming an existing directory
    out = tmp_path / "reports"
    out.mkdir()
    # When eval triage runs, Then it stops at once with one line naming the directory, nothing ranked
    assert main(["eval", "triage", "--gold", str(GOLD), "--collection", "dev-policy-set", "--bm25",
                 "--html", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"{out}: is a directory; --html takes a file name" in err
    assert " r@3 " not in err  # no claim was scored
