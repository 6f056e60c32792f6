"""Reciprocal rank fusion of ranked id lists (Cormack, Clarke & Büttcher, SIGIR 2009).

``score = sum w / (k + rank)`` with ``k = 60``; each caller sets its own
weights (extraction and triage each keep their own tuned dense weight).
"""

from __future__ import annotations

from collections.abc import Sequence

RRF_K = 60
"""Reciprocal rank fusion constant (Cormack et al. 2009 found 60 robust)."""


def rrf(rankings: Sequence[Sequence[str]], k: int = RRF_K,
        weights: Sequence[float] | None = None) -> list[tuple[str, float]]:
    """Fuse ranked id lists by reciprocal rank fusion: ``score(d) = sum_r w_r / (k + rank_r(d))``.

    Ranks are 1-based; ``weights`` default to 1 per ranking; an id missing from a ranking
    gets nothing from it. Returns every id once, best first; ties keep the order of first
    appearance (first ranking first). Raises ``ValueError`` when ``k`` < 1 or the weights
    do not match the rankings.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    weights = list(weights) if weights is not None else [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda p: (-p[1], order[p[0]]))
