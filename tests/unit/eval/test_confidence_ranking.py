"""Confidence measured against gold: AUROC (wrong against right, ties counted half) and ECE by clause type,
in the extraction report's text, JSON and HTML."""

from __future__ import annotations

from longdoc.eval.calibration import auroc, calibration
from longdoc.eval.extraction import _calibration, calibration_by_clause_type, render_extraction
from longdoc.eval.html import eval_html


def test_auroc_ranks_right_above_wrong_and_counts_ties_half() -> None:
    assert auroc([(0.9, True), (0.2, False)]) == 1.0
    assert auroc([(0.2, True), (0.9, False)]) == 0.0
    # every answer at one score: chance, however well calibrated
    assert auroc([(0.9, True)] * 9 + [(0.9, False)]) == 0.5
    # right {0.5, 0.5} against wrong {0.3, 0.5}: 2 wins + 2 ties (x 0.5) over 4 pairs
    assert auroc([(0.5, True), (0.5, True), (0.3, False), (0.5, False)]) == 0.75
    assert auroc([(0.5, True)]) is None and auroc([]) is None
    assert calibration([(0.9, True), (0.2, False)], 0.8)["auroc"] == 1.0


def _rows() -> list[dict]:
    law = [{"clause_type": "Governing Law", "confidence": c, "correct": ok}
           for c, ok in [(0.95, True), (0.9, True), (0.6, False), (0.92, False)]]
    cap = [{"clause_type": "Cap On Liability", "confidence": c, "correct": ok} for c, ok in [(0.5, True), (0.7, True)]]
    return law + cap + [{"clause_type": "Cap On Liability", "confidence": None, "correct": False}]


def test_calibration_by_clause_type_gives_auroc_and_ece_worst_first() -> None:
    table = calibration_by_clause_type(_rows())
    assert [c["clause_type"] for c in table] == ["Governing Law", "Cap On Liability"]
    law, cap = table
    # right {0.95, 0.9} vs wrong {0.6, 0.92}: 3 of 4 pairs won
    assert (law["cases"], law["wrong"], law["auroc"]) == (4, 2, 0.75)
    # bins 0.6-0.7 (0.6, wrong) and 0.9-1.0 (0.95 right, 0.9 right, 0.92 wrong): (0.6 + 3 * |0.667 - 0.923|) / 4
    assert law["ece"] == round((0.6 + 3 * abs(2 / 3 - (0.95 + 0.9 + 0.92) / 3)) / 4, 4)
    # all right: no AUROC; the unscored case is left out
    assert (cap["cases"], cap["wrong"], cap["auroc"]) == (2, 0, None)


def test_the_report_prints_and_pages_auroc_and_ece() -> None:
    rows = _rows()
    stratum = {"clause_type": "Governing Law", "cases": 4, "accuracy": 0.5, "silent_source_rate": None,
               "found_accuracy": 0.5, "flagged": True, "doc_type": "x", "position": "front"}
    report = {"cases": 7, "found_cases": 4, "not_found_cases": 3, "model": "m", "threshold": None, "seconds": 1.0,
              "accuracy": 0.5, "found_accuracy": 0.5, "found_status_rate": 0.5, "silent_source_rate": 0.5,
              "exact_value_rate": None, "usage": {"input_tokens": 1, "output_tokens": 1, "cost_usd": None,
                                                  "input_tokens_per_case": 1, "output_tokens_per_case": 1},
              "strata": [stratum], "by": {"clause_type": [stratum], "doc_type": [stratum], "position": [stratum]},
              "calibration": _calibration(rows), "calibration_by_clause_type": calibration_by_clause_type(rows)}
    cal = report["calibration"]
    # 6 scored: right {0.95, 0.9, 0.5, 0.7} vs wrong {0.6, 0.92}: 3 + 1 of 8 pairs won
    assert (cal["cases"], cal["wrong"], cal["auroc"], cal["wrong_above_09"]) == (6, 2, 0.5, 1)
    text = render_extraction(report)
    assert "AUROC (wrong vs right, ties count half) 0.500" in text and "1 wrong at >= 0.9" in text
    assert "Governing Law                            n=4   wrong 2   AUROC 0.750" in text
    html = eval_html(report, "extraction")
    assert "Confidence: calibration and ranking" in html and "data-confidence-by-clause-type" in html
    assert html.count("<svg") >= 2 and "<td class='num'>0.750</td>" in html
