"""``longdoc eval accuracy``: the model's accuracy on reviewed labels, by stratum, and the silent-source rate.

Input: a review export (:meth:`longdoc.review.ReviewService.export_gold`), gold cases that carry the
model's own answer (``model_status``, ``model_quote``). A case is correct when the model answered
``found`` with a quote overlapping a gold snippet (the gold README's 80% rule, either direction) for a
``found`` label, or ``not_found`` for a ``not_found`` label. Strata: document type x clause type x page
section, the section of the label's page (or the model's page): ``front`` (page <= 30), ``middle``,
``back`` (page > 150), ``absent`` for a ``not_found`` label (the reference architecture's sections). Document type: the case's
``doc_type``, else the kind :func:`longdoc.review.doctype.infer_doc_type` infers from its ``doc`` path
(the row says ``doc_type_inferred``), else ``unknown``.
The silent-source rate is the share of ``not_found`` labels the model answered ``not_found`` (it
stayed silent where the source says nothing; higher is better). The run fails (``failed`` true, ``longdoc
eval accuracy`` exits 1) when the accuracy over all labels is under :data:`~longdoc.eval.scoring.FLAG_BELOW`
(90%), or when a stratum with at least ``min_labels`` labels (default 5, ``LONGDOC_REVIEW_MIN_STRATUM_LABELS``)
is under 90% (an *alert*); a smaller stratum under 90% is shown but too small to alert on its own.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from longdoc.core.errors import CliError
from longdoc.eval.calibration import calibration
from longdoc.eval.gold import load_gold
from longdoc.eval.scoring import FLAG_BELOW, overlaps
from longdoc.review.doctype import infer_doc_type

FRONT_LAST_PAGE = 30
BACK_AFTER_PAGE = 150


def page_section(page: int | None, expected: str) -> str:
    """``front`` (<= 30), ``middle``, ``back`` (> 150) for a 1-based page; ``absent``/``unknown`` without one."""
    if page is None:
        return "absent" if expected == "not_found" else "unknown"
    return "front" if page <= FRONT_LAST_PAGE else "back" if page > BACK_AFTER_PAGE else "middle"


def evaluate_accuracy(gold: Path, min_labels: int = 5, threshold: float = 0.8) -> dict:
    """Score a review export (module docstring). Returns ``{"cases", "accuracy", "accuracy_below" (under 90%),
    "failed" (accuracy_below or any alert), "silent_source_rate",
    "absent_labels", "strata": [{"doc_type", "clause_type", "section", "labels", "correct", "accuracy",
    "alert"}], "alerts", "min_labels", "calibration", "rows"}``. Raises :class:`CliError` naming the file and
    the case when a case carries no model answer, or the file when it holds no case, (plain gold: use ``eval extraction``) and ``ValueError``
    (from :func:`~longdoc.eval.gold.load_gold`) for a line that is not a gold case."""
    raw = [line for line in Path(gold).read_text(encoding="utf-8").split("\n") if line.strip()]
    if not raw:
        raise CliError(f"{gold}: no gold cases (the file is empty): nothing to score; export reviewed items with "
                       "`longdoc review export` first")
    cases = load_gold(gold)
    import json

    rows = []
    for case, line in zip(cases, raw, strict=True):
        extra = json.loads(line)
        if extra.get("model_status") not in ("found", "not_found"):
            raise CliError(f"{gold}: case {case.case_id} has no model answer (model_status); eval accuracy scores "
                           "review exports (`longdoc review export`), use `longdoc eval extraction` for plain gold")
        quote = extra.get("model_quote") or ""
        if case.expected == "found":
            ok = extra["model_status"] == "found" and any(overlaps(quote, s) for s in case.snippets)
        else:
            ok = extra["model_status"] == "not_found"
        page = case.page_numbers[0] if case.page_numbers else extra.get("model_page")
        doc_type = case.doc_type or infer_doc_type(case.doc)
        rows.append({"case_id": case.case_id, "doc_type": doc_type or "unknown",
                     "doc_type_inferred": bool(extra.get("doc_type_inferred")) or (doc_type is not None
                                                                                   and not case.doc_type),
                     "clause_type": case.clause_type,
                     "section": page_section(page if case.expected == "found" else None, case.expected),
                     "expected": case.expected, "answered": extra["model_status"], "correct": ok,
                     "confidence": extra.get("confidence")})
    strata: dict[tuple[str, str, str], list[bool]] = {}
    for r in rows:
        strata.setdefault((r["doc_type"], r["clause_type"], r["section"]), []).append(r["correct"])
    table = []
    for (doc_type, clause, section), oks in sorted(strata.items()):
        acc = sum(oks) / len(oks)
        table.append({"doc_type": doc_type, "clause_type": clause, "section": section, "labels": len(oks),
                      "correct": sum(oks), "accuracy": round(acc, 4),
                      "alert": len(oks) >= min_labels and acc < FLAG_BELOW})
    absent = [r for r in rows if r["expected"] == "not_found"]
    pairs = [(float(r["confidence"]), bool(r["correct"])) for r in rows if r["confidence"] is not None]
    accuracy = round(sum(r["correct"] for r in rows) / len(rows), 4) if rows else None
    alerts = [t for t in table if t["alert"]]
    below = accuracy is not None and accuracy < FLAG_BELOW
    return {"gold": str(gold), "cases": len(rows), "accuracy": accuracy, "accuracy_below": below,
            "failed": below or bool(alerts),
            "absent_labels": len(absent),
            "silent_source_rate": round(sum(r["answered"] == "not_found" for r in absent) / len(absent), 4)
            if absent else None,
            "strata": table, "alerts": alerts, "min_labels": min_labels,
            "calibration": calibration(pairs, threshold), "rows": rows}


def render_accuracy(report: dict) -> str:
    """The report as text: totals, then one line per stratum (``!`` marks an alert)."""
    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{100 * x:.1f}%"
    cal = report["calibration"]
    lines = [f"{report['cases']} reviewed labels; accuracy {pct(report['accuracy'])}; silent-source rate "
             f"{pct(report['silent_source_rate'])} on {report['absent_labels']} absent label(s); ECE "
             f"{cal['ece']}; precision at confidence >= {cal['threshold']}: {pct(cal['precision_above'])} "
             f"({cal['above']} case(s))",
             f"{'DOC TYPE':<14} {'CLAUSE TYPE':<32} {'SECTION':<8} {'LABELS':>6} {'ACCURACY':>9}"]
    for s in report["strata"]:
        lines.append(f"{s['doc_type'][:14]:<14} {s['clause_type'][:32]:<32} {s['section']:<8} {s['labels']:>6} "
                     f"{pct(s['accuracy']):>9}{'  ! under 90%' if s['alert'] else ''}")
    if report["alerts"]:
        lines.append(f"{len(report['alerts'])} stratum/strata with >= {report['min_labels']} labels under 90%")
    if report["accuracy_below"]:
        lines.append(f"accuracy over all labels {pct(report['accuracy'])} is under 90%")
    small = [s for s in report["strata"] if s["accuracy"] < FLAG_BELOW and not s["alert"]]
    if small:
        lines.append(f"{len(small)} stratum/strata under 90% with fewer than {report['min_labels']} labels "
                     "(too few to alert alone)")
    lines.append("FAILED (exit 1)" if report["failed"] else "passed (exit 0)")
    return "\n".join(lines)


def _colour(acc: float) -> str:
    return f"hsl({int(120 * max(0.0, min(1.0, acc)))},70%,70%)"


def accuracy_html(report: dict) -> str:
    """A self-contained dashboard: an inline SVG heat map (rows: doc type x clause type; columns: page
    section; each cell coloured red-to-green by accuracy, labelled with accuracy and labels), then the table."""
    sections = ["front", "middle", "back", "absent", "unknown"]
    used = [s for s in sections if any(t["section"] == s for t in report["strata"])]
    keys = sorted({(t["doc_type"], t["clause_type"]) for t in report["strata"]})
    cell = {(t["doc_type"], t["clause_type"], t["section"]): t for t in report["strata"]}
    left, width, height = 320, 110, 28
    svg = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{left + width * len(used) + 10}' "
           f"height='{height * (len(keys) + 1) + 10}' data-heatmap role='img' aria-label='accuracy by stratum'>"]
    svg += [f"<text x='{left + width * i + width / 2}' y='18' text-anchor='middle' font-size='13'>{s}</text>"
            for i, s in enumerate(used)]
    for row, (doc_type, clause) in enumerate(keys):
        y = height * (row + 1)
        svg.append(f"<text x='{left - 6}' y='{y + 18}' text-anchor='end' font-size='12'>"
                   f"{escape(doc_type)} / {escape(clause)}</text>")
        for i, s in enumerate(used):
            t = cell.get((doc_type, clause, s))
            if t is None:
                continue
            x = left + width * i
            stroke = " stroke='#c00' stroke-width='3'" if t["alert"] else " stroke='#fff'"
            svg.append(f"<rect x='{x}' y='{y}' width='{width - 2}' height='{height - 2}' fill='{_colour(t['accuracy'])}'"
                       f"{stroke} data-stratum='{escape(doc_type)}|{escape(clause)}|{s}'/>"
                       f"<text x='{x + width / 2}' y='{y + 18}' text-anchor='middle' font-size='12'>"
                       f"{100 * t['accuracy']:.0f}% ({t['labels']})</text>")
    svg.append("</svg>")
    rows = "".join(f"<tr{' class=flag' if t['alert'] else ''}><td>{escape(t['doc_type'])}</td>"
                   f"<td>{escape(t['clause_type'])}</td><td>{t['section']}</td><td>{t['labels']}</td>"
                   f"<td>{100 * t['accuracy']:.1f}%</td></tr>" for t in report["strata"])
    cal = report["calibration"]
    head = (f"<p>{report['cases']} reviewed labels; accuracy {report['accuracy']}; silent-source rate "
            f"{report['silent_source_rate']} ({report['absent_labels']} absent labels); ECE {cal['ece']}; "
            f"precision at confidence &gt;= {cal['threshold']}: {cal['precision_above']}; "
            f"{len(report['alerts'])} stratum alert(s) (&gt;= {report['min_labels']} labels under 90%)</p>")
    return ("<!doctype html><html><head><meta charset='utf-8'><title>longdoc accuracy by stratum</title>"
            "<style>body{font-family:sans-serif;margin:2em}td,th{border:1px solid #ccc;padding:2px 6px}"
            ".flag{color:#c00}</style></head><body><h1>Accuracy by stratum</h1>" + head + "".join(svg) +
            "<table><tr><th>doc type</th><th>clause type</th><th>section</th><th>labels</th><th>accuracy</th></tr>"
            + rows + "</table></body></html>\n")
