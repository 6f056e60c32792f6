"""Calibration of confidence scores against labels: expected calibration error and precision above a threshold.

The same code takes any ``(confidence, correct)`` pairs: the gold dev set's (``longdoc eval extraction``,
each case's answer scored against gold) or reviewed labels (``longdoc eval accuracy`` on a review export).

Expected calibration error (Naeini, Cooper & Hauskrecht, AAAI 2015; Guo et al., ICML 2017):
``ECE = sum_b (n_b / n) * |accuracy_b - mean confidence_b|`` over :data:`BINS` equal-width bins of [0, 1].

AUROC, wrong against right (:func:`auroc`): the probability that a right answer scores higher than a
wrong one, the Mann-Whitney U statistic over (right, wrong) pairs divided by their number (Hanley &
McNeil, Radiology 1982). Ties count one half: a score that puts every answer at 0.9 has AUROC 0.5,
whatever its calibration. Calibration says how far scores match accuracy on average; AUROC says whether
they rank the errors below the right answers, which is what a review queue sorted by confidence needs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

BINS = 10


def auroc(pairs: Sequence[tuple[float, bool]]) -> float | None:
    """Area under the ROC curve of ``(confidence, correct)`` pairs, right answers as positives (module
    docstring): 1.0 when every right answer outscores every wrong one, 0.5 for chance or all ties, None
    when there is no right answer or no wrong one. Ties between a right and a wrong answer count 0.5.
    Computed from average ranks (Mann-Whitney U), O(n log n)."""
    ordered = sorted(pairs, key=lambda p: p[0])
    right = sum(1 for _, ok in ordered if ok)
    wrong = len(ordered) - right
    if not right or not wrong:
        return None
    rank_sum, i = 0.0, 0
    while i < len(ordered):
        j = i
        while j < len(ordered) and ordered[j][0] == ordered[i][0]:
            j += 1
        average = (i + 1 + j) / 2  # 1-based ranks i+1 .. j share their mean
        rank_sum += average * sum(1 for _, ok in ordered[i:j] if ok)
        i = j
    return round((rank_sum - right * (right + 1) / 2) / (right * wrong), 4)


def calibration(pairs: Sequence[tuple[float, bool]], threshold: float, bins: int = BINS) -> dict:
    """ECE, AUROC, reliability bins and precision above ``threshold`` of ``(confidence in [0, 1], correct)`` pairs.

    Returns ``{"cases", "ece", "auroc" (:func:`auroc`; None without both right and wrong answers), "wrong",
    "threshold", "above" (cases with confidence >= threshold),
    "precision_above" (their share correct; None when none), "coverage_above" (above / cases),
    "bins": [{"low", "high", "cases", "confidence", "accuracy"}]}``; ``ece`` is None without pairs.
    """
    n = len(pairs)
    rows, ece = [], 0.0
    for b in range(bins):
        low, high = b / bins, (b + 1) / bins
        inside = [(c, ok) for c, ok in pairs if low <= c < high or (b == bins - 1 and c == 1.0)]
        if not inside:
            continue
        conf = sum(c for c, _ in inside) / len(inside)
        acc = sum(ok for _, ok in inside) / len(inside)
        ece += len(inside) / n * abs(acc - conf)
        rows.append({"low": low, "high": high, "cases": len(inside), "confidence": round(conf, 4),
                     "accuracy": round(acc, 4)})
    above = [ok for c, ok in pairs if c >= threshold]
    return {"cases": n, "ece": round(ece, 4) if n else None, "auroc": auroc(pairs),
            "wrong": sum(not ok for _, ok in pairs), "threshold": threshold, "above": len(above),
            "precision_above": round(sum(above) / len(above), 4) if above else None,
            "coverage_above": round(len(above) / n, 4) if n else None, "bins": rows}


def confidence_pairs(rows: list[dict]) -> list[tuple[float, bool]]:
    """``(confidence, correct)`` of every scored row (a row without a confidence is left out)."""
    return [(float(r["confidence"]), bool(r["correct"])) for r in rows if r.get("confidence") is not None]


def calibration_by_clause_type(rows: list[dict]) -> list[dict]:
    """Per clause type: ``{"clause_type", "cases" (scored), "wrong", "auroc" (None when all right or all
    wrong), "ece"}``, lowest AUROC first (None last), then by name."""
    by: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by[r["clause_type"]].append(r)
    out = []
    for name, items in by.items():
        pairs = confidence_pairs(items)
        out.append({"clause_type": name, "cases": len(pairs), "wrong": sum(not ok for _, ok in pairs),
                    "auroc": auroc(pairs), "ece": calibration(pairs, 1.0)["ece"]})
    out.sort(key=lambda c: (c["auroc"] is None, c["auroc"] or 0.0, c["clause_type"]))
    return out
