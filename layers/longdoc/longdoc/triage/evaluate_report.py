"""Text and HTML views of a ``longdoc eval triage`` report (:mod:`longdoc.triage.evaluate`)."""

from __future__ import annotations

import html
from typing import Any

from longdoc.triage.ranking import RERANK_TOP

METRICS = ("recall@1", "recall@3", "legacy_recall@1", "legacy_recall@3", "naive_recall@1", "naive_recall@3",
           "top_over_band", "wrong_term_top3", "naive_wrong_term_top3", "band_recall", "legacy_band_recall",
           "band_clauses", "legacy_band_clauses", f"recall@{RERANK_TOP}")
"""The averaged figures of a stratum (shares 0-1; ``band_clauses``: mean clauses in the band; ``recall@60``:
recall within the depth the reranker reads, :data:`longdoc.triage.ranking.RERANK_TOP`, the most a
reranker could bring into the first three)."""
WRITER_METRICS = ("writer_recall@1", "writer_recall@3")
"""Added when the run had ``--query-writer`` (today's ranking with the model-written queries)."""


def _metrics(rows: list[dict[str, Any]]) -> tuple[str, ...]:
    return METRICS + WRITER_METRICS if rows and WRITER_METRICS[0] in rows[0] else METRICS


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"claims": n, metric: mean rounded to 3 places}`` over the claim rows (None when empty); the
    writer's figures too when the rows have them."""
    n = len(rows)
    return {"claims": n, **{m: round(sum(float(r[m]) for r in rows) / n, 3) if n else None for m in _metrics(rows)}}


def render(report: dict[str, Any]) -> str:
    """The report as a text table: one row overall, one per stratum (kind, wording, split, line, term);
    ``BAND R`` is recall within the clause band (``IN BAND``: mean clauses in it), today's and legacy; ``R@60``
    recall within the reranker's depth (today's ranking); with
    ``query_writer`` in the report, the ``WRITER R@1`` / ``WRITER R@3`` columns last."""
    writer = "query_writer" in report
    head = ("STRATUM", "CLAIMS", "R@1", "R@3", "LEGACY R@1", "LEGACY R@3", "NAIVE R@1", "NAIVE R@3", "TOP>BAND",
            "WRONG TERM@3", "NAIVE WRONG@3", "BAND R", "LEGACY BAND R", "IN BAND", "LEGACY IN BAND", f"R@{RERANK_TOP}", *(("WRITER R@1", "WRITER R@3") if writer else ()))
    metrics = METRICS + WRITER_METRICS if writer else METRICS
    rows = [("overall", report["overall"]), *report["strata"].items()]
    width = max(13, *(len(name) + 1 for name, _ in rows))
    lines = [f"triage recall on {report['collection']} ({report['ranking']}; legacy: {report['legacy']}; "
             f"naive: {report['naive']}" + (f"; writer: {report['query_writer']}" if writer else "") + ")",
             f"{head[0]:<{width}}" + "  ".join(f"{h:<12}" for h in head[1:])]
    for name, s in rows:
        cells = [str(s["claims"]), *(f"{s[m]:.1f}" if m.endswith("band_clauses") else f"{s[m]:.3f}" for m in metrics)]
        lines.append(f"{name:<{width}}" + "  ".join(f"{c:<12}" for c in cells))
    return "\n".join(lines)


def render_html(report: dict[str, Any]) -> str:
    """The report as a self-contained HTML page (the same table, and each claim's top three per ranking)."""
    table = "".join(f"<tr><td>{html.escape(line)}</td></tr>" for line in render(report).splitlines())
    claims = "".join(f"<tr><td>{html.escape(str(r['id']))}</td><td>{html.escape(r['kind'])}</td>"
                     f"<td>{html.escape(' | '.join(r['gold']))}</td><td>{html.escape(', '.join(r['top3']))}</td>"
                     f"<td>{html.escape(', '.join(r['legacy_top3']))}</td>"
                     f"<td>{html.escape(', '.join(r['naive_top3']))}</td></tr>" for r in report["claims"])
    return (f"<!doctype html><meta charset='utf-8'><title>triage eval</title><pre><table>{table}</table></pre>"
            "<table border=1><tr><th>claim</th><th>kind</th><th>gold</th><th>top 3</th><th>legacy top 3</th>"
            f"<th>naive top 3</th></tr>{claims}</table>")
