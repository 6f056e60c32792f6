"""Pictures for the evaluation pages, drawn with matplotlib as inline SVG (no pyplot state, no files).

:func:`recall_curve_svg` draws recall at K per retrieval configuration; :func:`reliability_svg` the
calibration plot (accuracy against mean confidence per confidence bin); :func:`heatmap_svg` a
share per clause type (rows) and measure (columns), red (0) through yellow to green (1), each
cell labelled with its percentage. Both return one ``<svg>`` element (text kept as text,
ids deterministic) to place in a self-contained HTML page. matplotlib is imported on first
use (it is a ``local`` extra, and only the eval pages need it).
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from typing import Any

_DASHES = ("-", "--", ":", "-.")
_MARKERS = ("o", "s", "^", "D", "v", "x")
_RC: Any = {  # rcParams names are Literal-typed in matplotlib's stubs
    "svg.fonttype": "none", "svg.hashsalt": "longdoc", "font.size": 9.0}


def _svg(figure: Any) -> str:
    """The figure as one ``<svg>`` element (XML prolog and doctype dropped), marked for the page's CSS."""
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context(_RC):
        figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg"):].replace("<svg", "<svg class='plot' role='img'", 1)


def recall_curve_svg(series: Mapping[str, Mapping[str, float | None]], title: str = "recall at K") -> str:
    """Recall (0..1) against K, one line per configuration; ``series`` maps a name to ``{"1": r, "3": r, ...}``.

    K values are the keys read as integers, sorted; a None recall leaves a gap in that line.
    """
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(_RC):
        figure = Figure(figsize=(6.4, 3.6))
        axes = figure.subplots()
        ks: list[int] = []
        for n, (name, recalls) in enumerate(series.items()):
            ks = sorted({*ks, *(int(k) for k in recalls)})
            points = sorted((int(k), math.nan if v is None else v) for k, v in recalls.items())
            # distinct dashes and markers: configurations with equal recall stay visible on top of each other
            axes.plot([k for k, _ in points], [v for _, v in points], label=name, linestyle=_DASHES[n % len(_DASHES)],
                      marker=_MARKERS[n % len(_MARKERS)], markersize=7 - n % 4, alpha=0.85)
        axes.set_xticks(ks)
        axes.set_xlabel("K (chunks retrieved)")
        axes.set_ylabel("recall")
        axes.set_ylim(0, 1.02)
        axes.grid(alpha=0.3)
        axes.set_title(title)
        axes.legend(loc="lower right", fontsize=8)
        return _svg(figure)


def reliability_svg(bins: Sequence[Mapping[str, float]], threshold: float | None = None,
                    title: str = "calibration (reliability diagram)") -> str:
    """The calibration plot: per bin of :func:`longdoc.eval.calibration.calibration` (``{"low", "high",
    "cases", "confidence", "accuracy"}``) a bar of its accuracy over its confidence range, a dot at its mean
    confidence, the diagonal of perfect calibration, and the accept ``threshold`` as a dashed line."""
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(_RC):
        figure = Figure(figsize=(4.2, 3.8))
        axes = figure.subplots()
        axes.plot([0, 1], [0, 1], linestyle=":", color="grey", label="perfect calibration")
        for b in bins:
            axes.bar(b["low"], b["accuracy"], width=b["high"] - b["low"], align="edge", alpha=0.5,
                     color="tab:blue", edgecolor="white")
            axes.annotate(str(int(b["cases"])), (b["low"] + (b["high"] - b["low"]) / 2, b["accuracy"]),
                          ha="center", va="bottom", fontsize=7)
        axes.plot([b["confidence"] for b in bins], [b["accuracy"] for b in bins], "o", color="tab:orange",
                  label="accuracy at mean confidence")
        if threshold is not None:
            axes.axvline(threshold, linestyle="--", color="tab:red", label=f"accept threshold {threshold}")
        axes.set_xlim(0, 1)
        axes.set_ylim(0, 1.05)
        axes.set_xlabel("confidence (bar: bin, label: cases)")
        axes.set_ylabel("accuracy")
        axes.set_title(title)
        axes.legend(loc="upper left", fontsize=7)
        return _svg(figure)


def heatmap_svg(rows: Sequence[str], columns: Sequence[str], values: Sequence[Sequence[float | None]],
                title: str) -> str:
    """A heat map of shares (0..1; None is grey, labelled ``n/a``): ``values[i][j]`` for ``rows[i]`` x ``columns[j]``."""
    import matplotlib
    import numpy as np
    from matplotlib.colors import LinearSegmentedColormap
    from matplotlib.figure import Figure

    grid = np.array([[math.nan if v is None else float(v) for v in row] for row in values], dtype=float)
    cmap = LinearSegmentedColormap.from_list("share", ["#e8807a", "#f2e27a", "#7fcf86"]).with_extremes(bad="#dddddd")
    with matplotlib.rc_context(_RC):
        figure = Figure(figsize=(1.6 + 1.1 * len(columns), 0.9 + 0.28 * max(len(rows), 1)))
        axes = figure.subplots()
        axes.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
        axes.set_xticks(range(len(columns)), labels=list(columns))
        axes.set_yticks(range(len(rows)), labels=[r if len(r) <= 42 else r[:41] + "…" for r in rows])
        axes.xaxis.tick_top()
        for i, row in enumerate(grid):
            for j, value in enumerate(row):
                axes.text(j, i, "n/a" if math.isnan(value) else f"{100 * value:.0f}%", ha="center", va="center",
                          fontsize=8)
        axes.set_title(title, pad=24)
        return _svg(figure)
