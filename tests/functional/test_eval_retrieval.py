"""``longdoc eval retrieval --json`` on a tiny gold file: three CUAD cases on one small contract."""

from __future__ import annotations

import json
from pathlib import Path

from longdoc import cli, wiring


def test_eval_retrieval_json_reports_recall_mrr_strata_and_baseline(contract_gold, corpus_dir: Path, tmp_path,
                                                                     monkeypatch, capsys):
    # Given a gold file with the contract's cases (3 found, the rest not_found)
    gold, lines = contract_gold
    monkeypatch.setenv("LONGDOC_HOME", str(tmp_path / "home"))
    wiring.reset()

    # When the retrieval eval runs twice with --json
    assert cli.main(["eval", "retrieval", "--gold", str(gold), "--corpus", str(corpus_dir), "--json"]) == 0
    out, err = capsys.readouterr()
    first = json.loads(out)
    # (stderr, not a terminal here: one line for the documents stage, with the count of documents done)
    assert [line for line in err.splitlines() if "eval retrieval" in line] == [
        next(line for line in err.splitlines() if line.startswith("longdoc: eval retrieval: 1 documents in "))]
    page = tmp_path / "out" / "retrieval.html"
    assert cli.main(["eval", "retrieval", "--gold", str(gold), "--corpus", str(corpus_dir), "--json",
                     "--html", str(page)]) == 0
    report = json.loads(capsys.readouterr().out)
    html = page.read_text()
    assert html.startswith("<!doctype html>") and "Governing Law" in html and "hsl(" in html

    # Then it has the documented keys and plausible values
    for key in ("cases", "recall_at", "recall_at_budget", "budget_tokens", "mrr", "strata", "baseline"):
        assert key in report and key in first
    assert report["cases"] == 3 and report["not_found_cases"] == len(lines) - 3
    assert report["budget_tokens"] == 5000
    assert set(report["recall_at"]) == {"1", "3", "5", "10"}
    for block in (report, report["baseline"], *report["configs"].values()):
        values = [*block["recall_at"].values(), block["recall_at_budget"], block["mrr"]]
        assert all(0.0 <= v <= 1.0 for v in values)
        assert block["recall_at"]["1"] <= block["recall_at"]["5"] <= block["recall_at"]["10"]
    # the clause is in this short contract: everything fits within 5,000 tokens
    assert report["recall_at_budget"] == 1.0
    hybrid, dense = report["configs"]["hybrid+headers"], report["configs"]["dense"]
    assert hybrid["recall_at_budget"] >= dense["recall_at_budget"] and hybrid["mrr"] >= dense["mrr"]
    assert {s["clause_type"] for s in report["strata"]} == {"Agreement Date", "Expiration Date", "Governing Law"}
    assert all(s["position"] in ("front", "middle", "back") for s in report["strata"])
    assert report["delta"]["recall_at_budget"] == round(report["recall_at_budget"]
                                                       - report["baseline"]["recall_at_budget"], 4)
    # and the second run re-used the cached ingestion (same numbers)
    assert first["recall_at"] == report["recall_at"] and first["baseline"]["mrr"] == report["baseline"]["mrr"]
