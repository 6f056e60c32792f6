"""``longdoc eval extraction --json`` with the offline baseline on one small CUAD contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longdoc import cli, wiring

# Each test ingests the contract and runs the eval through the CLI with the local embedder.
pytestmark = pytest.mark.slow


def test_eval_extraction_json_reports_rates_strata_model_and_usage(contract_gold, corpus_dir: Path, tmp_path,
                                                                   monkeypatch, capsys):
    # Given the contract's gold cases (3 found, 36 not_found) and no Anthropic key
    gold, lines = contract_gold
    monkeypatch.setenv("LONGDOC_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("LONGDOC_MODEL", "baseline")
    wiring.reset()

    # When the extraction eval runs with --json
    assert cli.main(["eval", "extraction", "--gold", str(gold), "--corpus", str(corpus_dir), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)

    # Then it reports the documented fields for every case
    for key in ("cases", "accuracy", "found_accuracy", "silent_source_rate", "exact_value_rate", "strata",
                "model", "usage"):
        assert key in report
    assert report["cases"] == len(lines) and report["found_cases"] == 3
    assert report["model"] == "offline-extractive-baseline-v1"
    for key in ("accuracy", "found_accuracy", "silent_source_rate"):
        assert 0.0 <= report[key] <= 1.0
    assert report["exact_value_rate"] is None  # CUAD cases carry no exact values
    assert report["usage"]["input_tokens"] > 0
    assert report["usage"]["cost_usd"] is None or float(report["usage"]["cost_usd"]) == 0.0  # local model is free
    # the baseline answers most absent clauses not_found
    assert report["silent_source_rate"] >= 0.9
    rows = {r["case_id"]: r for r in report["case_results"]}
    assert all(r["correct"] == (r["answered"] == "not_found") for r in rows.values() if r["expected"] == "not_found")
    assert {s["position"] for s in report["strata"]} <= {"front", "middle", "back", "absent"}


def test_compare_search_runs_both_variants_on_the_same_chunks_and_lists_the_changes(
        contract_gold, corpus_dir: Path, tmp_path, monkeypatch, capsys):
    # Given the contract's gold cases and the offline baseline
    gold, lines = contract_gold
    monkeypatch.setenv("LONGDOC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LONGDOC_MODEL", "baseline")
    wiring.reset()
    # When the eval runs with --compare-search
    assert cli.main(["eval", "extraction", "--gold", str(gold), "--corpus", str(corpus_dir), "--compare-search",
                     "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    # Then the main report is the one with the search step (the settings' budget), beside the rates without it
    assert report["search_calls"] == 4 and report["cases"] == len(lines)
    off = report["without_search"]
    assert off["cases"] == len(lines) and 0.0 <= off["silent_source_rate"] <= 1.0
    assert sum(s["cases"] for s in off["by_clause_type"]) == len(lines)
    # And every change is a case whose correctness differs between the two, counted per clause type
    changes = report["search_changes"]
    for c in changes["now_correct"] + changes["regressed"]:
        assert c["case_id"] in {r["case_id"] for r in report["case_results"]}
    assert sum(c["now_correct"] for c in changes["by_clause_type"]) == len(changes["now_correct"])
    assert sum(c["regressed"] for c in changes["by_clause_type"]) == len(changes["regressed"])
    # And the changes are exactly the rate differences: correct counts move by now_correct - regressed
    correct_after = sum(r["correct"] for r in report["case_results"])
    assert round(off["accuracy"] * len(lines)) + len(changes["now_correct"]) - len(changes["regressed"]) == correct_after


def test_search_calls_zero_runs_without_the_search_step(contract_gold, corpus_dir: Path, tmp_path, monkeypatch,
                                                        capsys):
    # Given the contract's gold cases, the offline baseline, and the harness's search counted
    import longdoc.extract.tools as tools

    gold, lines = contract_gold
    monkeypatch.setenv("LONGDOC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LONGDOC_MODEL", "baseline")
    wiring.reset()
    searched: list[str] = []
    real = tools.run_search

    def counted(deps, s, block, options):
        searched.append(block.input["query"])
        return real(deps, s, block, options)
    monkeypatch.setattr(tools, "run_search", counted)
    # When the eval runs with a search budget of 0
    assert cli.main(["eval", "extraction", "--gold", str(gold), "--corpus", str(corpus_dir), "--search-calls", "0",
                     "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    # Then no search_chunks call was made, and the report says the budget was 0
    assert report["search_calls"] == 0 and "without_search" not in report and searched == []
    # And with the default budget the same cases do search (the baseline's weak clause types)
    assert cli.main(["eval", "extraction", "--gold", str(gold), "--corpus", str(corpus_dir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["search_calls"] == 4 and searched
