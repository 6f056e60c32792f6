"""``longdoc eval extraction --json`` with the offline baseline on one small CUAD contract."""

from __future__ import annotations

import json
from pathlib import Path

from longdoc import cli, wiring


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
