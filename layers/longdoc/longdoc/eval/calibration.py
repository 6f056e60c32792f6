"""Calibration of confidence scores against labels: expected calibration error and precision above a threshold.

The same code takes any ``(confidence, correct)`` pairs: the gold dev set's (``longdoc eval extraction``,
each case's answer scored against gold) or reviewed labels (``longdoc eval accuracy`` on a review export).

Expected calibration error (Naeini, Cooper & Hauskrecht, AAAI 2015; Guo et al., ICML 2017):
``ECE = sum_b (n_b / n) * |accuracy_b - mean confidence_b|`` over :data:`BINS` equal-width bins of [0, 1].
"""

from __future__ import annotations

from collections.abc import Sequence

BINS = 10


def calibration(pairs: Sequence[tuple[float, bool]], threshold: float, bins: int = BINS) -> dict:
    """ECE, reliability bins and precision above ``threshold`` of ``(confidence in [0, 1], correct)`` pairs.

    Returns ``{"cases", "ece", "threshold", "above" (cases with confidence >= threshold),
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
    return {"cases": n, "ece": round(ece, 4) if n else None, "threshold": threshold, "above": len(above),
            "precision_above": round(sum(above) / len(above), 4) if above else None,
            "coverage_above": round(len(above) / n, 4) if n else None, "bins": rows}
