"""The eval pages' pictures: matplotlib figures inlined as SVG, one per figure, text kept as text."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from longdoc.eval.html import eval_html
from longdoc.eval.plots import heatmap_svg, recall_curve_svg

SVG = "{http://www.w3.org/2000/svg}"


def _stratum(name: str, r1: float, budget: float) -> dict:
    return {"clause_type": name, "doc_type": "contract", "position": "front", "cases": 2, "mrr": 0.5,
            "recall_at": {"1": r1, "3": 1.0, "5": 1.0, "10": 1.0}, "recall_at_budget": budget,
            "flagged": budget < 0.9}


def _retrieval_report() -> dict:
    by = [_stratum("Governing Law", 0.0, 0.5), _stratum("Cap <On> Liability", 1.0, 1.0)]
    summary = {"recall_at": {"1": 0.25, "3": 0.5, "5": 0.75, "10": 1.0}, "recall_at_budget": 0.9, "mrr": 0.4,
               "by": {"clause_type": by}}
    return {"cases": 4, "not_found_cases": 1, "budget_tokens": 5000, "gold": "g.jsonl", "baseline": summary,
            "naive_bm25": summary, "configs": {"hybrid": {**summary, "recall_at": {"1": 0.5, "3": 1.0, "5": 1.0,
                                                                                  "10": 1.0}}},
            "by": {"clause_type": by, "doc_type": by, "position": by}, "strata": by}


def test_recall_curve_is_one_svg_with_a_line_per_configuration() -> None:
    svg = recall_curve_svg({"dense": {"1": 0.2, "3": 0.6, "10": 0.9}, "bm25": {"1": 0.4, "3": None, "10": 1.0}})
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg" and svg.startswith("<svg class='plot'")
    text = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert "dense" in text and "bm25" in text and "K (chunks retrieved)" in text
    assert len(root.findall(f".//{SVG}g[@id]")) > 0 and "<?xml" not in svg


def test_heatmap_labels_each_cell_and_greys_missing_values() -> None:
    svg = heatmap_svg(["Governing Law", "Insurance"], ["R@1", "R@5"], [[0.0, 0.5], [1.0, None]], "t")
    text = [t.text for t in ET.fromstring(svg).iter(f"{SVG}text")]
    assert {"0%", "50%", "100%", "n/a", "Governing Law", "Insurance", "R@1", "R@5"} <= set(text)
    # the same input draws the same picture (deterministic ids): pages diff cleanly
    assert svg == heatmap_svg(["Governing Law", "Insurance"], ["R@1", "R@5"], [[0.0, 0.5], [1.0, None]], "t")


def test_eval_pages_carry_the_curve_and_the_heat_map() -> None:
    retrieval = eval_html(_retrieval_report(), "retrieval")
    assert retrieval.count("<svg class='plot'") == 2
    assert "Recall at K, per configuration" in retrieval and "By clause type (heat map" in retrieval
    assert "Cap &lt;On&gt; Liability" in retrieval and "<script" not in retrieval
    stratum = {"clause_type": "Governing Law", "doc_type": "x", "position": "front", "cases": 2, "accuracy": 0.5,
               "found_accuracy": 1.0, "silent_source_rate": None, "flagged": True}
    extraction = eval_html({"cases": 2, "model": "m", "accuracy": 0.5, "found_accuracy": 1.0,
                            "silent_source_rate": None, "exact_value_rate": None, "strata": [stratum],
                            "by": {"clause_type": [stratum], "doc_type": [stratum], "position": [stratum]}},
                           "extraction")
    assert extraction.count("<svg class='plot'") == 1 and "found accuracy" in extraction
