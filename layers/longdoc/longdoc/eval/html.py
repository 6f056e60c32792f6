"""Self-contained HTML pages: eval reports (stratified tables with a heat map) and run audits.

No scripts, no external assets: one file that opens anywhere. Every value is escaped with
:func:`html.escape`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from html import escape

from longdoc.core.models import Chunk
from longdoc.eval.pdfpage import PageView

PageRenderer = Callable[[int, str], PageView | None]
"""``(page, quote) -> PageView | None``: a cited page rendered with the quote boxed (see :mod:`longdoc.eval.pdfpage`)."""

_STYLE = """body{font-family:system-ui,sans-serif;margin:2em;max-width:72em}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left}
th{background:#f3f3f3}.num{text-align:right;font-variant-numeric:tabular-nums}
mark{background:#ffe58a}pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#fafafa;border:1px solid #eee;padding:.5em}
.flag{color:#b00;font-weight:bold}svg.plot{max-width:100%;height:auto;display:block;margin:1em 0}
.cite{margin:1em 0;padding:.5em;border-top:1px solid #ddd}.with-page{display:flex;gap:1.5em;align-items:flex-start}
.page{margin:0;flex:0 0 50%}.sheet{position:relative;border:1px solid #999;line-height:0}
.sheet img{width:100%;height:auto;display:block}.hl{position:absolute;background:rgba(255,213,0,.35);
outline:2px solid rgba(230,120,0,.9)}.facts{flex:1;min-width:0}figcaption{font-size:.9em;color:#a40}"""


def _heat(value: float | None) -> str:
    """Background colour for a share in [0, 1]: red (0) through yellow to green (1)."""
    if value is None:
        return ""
    v = max(0.0, min(1.0, value))
    hue = int(120 * v)
    return f' style="background:hsl({hue},70%,80%)"'


def _page(title: str, body: list[str]) -> str:
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
            f"<style>{_STYLE}</style></head><body><h1>{escape(title)}</h1>" + "".join(body) + "</body></html>\n")


def _cell(v: float | None) -> str:
    return f"<td class='num'{_heat(v)}>{'n/a' if v is None else f'{100 * v:.1f}'}</td>"


def _figures(report: dict, kind: str) -> str:
    """The eval page's pictures (matplotlib, inline SVG): recall at K per configuration (retrieval) and
    the heat map by clause type (rows worst first; retrieval: R@K, R@budget and the naive baseline's R@budget;
    extraction: accuracy, found accuracy and silent-source rate)."""
    from longdoc.eval.plots import heatmap_svg, recall_curve_svg

    by_type = report["by"]["clause_type"]
    names = [str(s["clause_type"]) for s in by_type]
    parts = []
    if kind == "retrieval":
        series = {"baseline (naive)": report["baseline"]["recall_at"], "naive-bm25": report["naive_bm25"]["recall_at"],
                  **{name: s["recall_at"] for name, s in report["configs"].items()}}
        parts.append("<h2>Recall at K, per configuration</h2>" + recall_curve_svg(series))
        baseline = {str(s["clause_type"]): s["recall_at_budget"] for s in report["baseline"].get("by", {}).get("clause_type", [])}
        columns = ["R@1", "R@3", "R@5", "R@10", "R@budget", "baseline R@budget"]
        values = [[s["recall_at"][k] for k in ("1", "3", "5", "10")] + [s["recall_at_budget"], baseline.get(n)]
                  for n, s in zip(names, by_type, strict=True)]
    else:
        parts.append(_calibration_block(report))
        columns = ["accuracy", "found accuracy", "silent source"]
        values = [[s.get("accuracy"), s.get("found_accuracy"), s.get("silent_source_rate")] for s in by_type]
    if names:
        parts.append("<h2>By clause type (heat map, worst first)</h2>"
                     + heatmap_svg(names, columns, values, f"{kind}: share per clause type"))
    return "".join(parts)


def _calibration_block(report: dict) -> str:
    """The extraction page's confidence section: the calibration plot and, beside it, ECE and AUROC (wrong
    against right, ties counted half) overall and per clause type (worst AUROC first)."""
    from longdoc.eval.plots import reliability_svg

    cal = report.get("calibration") or {}
    if not cal.get("cases"):
        return ""
    rows = "".join(f"<tr><td>{escape(str(c['clause_type']))}</td><td class='num'>{c['cases']}</td>"
                   f"<td class='num'>{c['wrong']}</td><td class='num'>{_num(c['auroc'])}</td>"
                   f"<td class='num'>{_num(c['ece'])}</td></tr>" for c in report.get("calibration_by_clause_type", []))
    table = (f"<table data-confidence-by-clause-type><tr><th>clause type</th><th>cases</th><th>wrong</th>"
             f"<th>AUROC</th><th>ECE</th></tr><tr><th>all</th><td class='num'>{cal['cases']}</td>"
             f"<td class='num'>{cal['wrong']}</td><td class='num'>{_num(cal['auroc'])}</td>"
             f"<td class='num'>{_num(cal['ece'])}</td></tr>{rows}</table>")
    return ("<h2>Confidence: calibration and ranking</h2><p>AUROC: chance a right answer scores above a wrong "
            "one (ties count half; n/a without both); ECE over 10 equal bins; "
            f"{cal['above']} case(s) at confidence &gt;= {cal['threshold']} (precision {_num(cal['precision_above'])}), "
            f"{cal.get('wrong_above_09', 0)} wrong at &gt;= 0.9.</p><div style='display:flex;gap:2em;align-items:flex-start'>"
            + reliability_svg(cal["bins"], cal["threshold"]) + table + "</div>")


def _num(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def eval_html(report: dict, kind: str) -> str:
    """HTML for a retrieval (``kind="retrieval"``) or extraction eval report.

    Tables: headline figures (and configurations vs the naive baseline for retrieval),
    then each stratification (clause type, document type, position, and the full
    doc type x clause type x position strata), worst first, cells coloured by value.
    """
    body: list[str] = []
    if kind == "retrieval":
        metric = "recall_at_budget"
        body.append(f"<p>{report['cases']} found cases; {report['not_found_cases']} not_found cases excluded; "
                    f"budget {report['budget_tokens']} tokens; gold {escape(report['gold'])}</p>")
        rows = [("baseline (naive)", report["baseline"]), ("naive-bm25", report["naive_bm25"]),
                *report["configs"].items()]
        body.append("<table><tr><th>config</th><th>R@1</th><th>R@3</th><th>R@5</th><th>R@10</th>"
                    "<th>R@budget</th><th>MRR</th></tr>")
        for name, s in rows:
            body.append(f"<tr><td>{escape(name)}</td>" + "".join(_cell(s["recall_at"][k]) for k in ("1", "3", "5", "10"))
                        + _cell(s["recall_at_budget"]) + f"<td class='num'>{s['mrr']:.3f}</td></tr>")
        body.append("</table>")
    else:
        metric = "accuracy"
        body.append(f"<p>{report['cases']} cases, model {escape(str(report['model']))}</p><table>")
        for key in ("accuracy", "found_accuracy", "silent_source_rate", "exact_value_rate"):
            body.append(f"<tr><th>{key}</th>{_cell(report.get(key))}</tr>")
        body.append("</table>")
    body.append(_figures(report, kind))
    sections: list[tuple[str, list[dict], tuple[str, ...]]] = [
        (f"by {k}", report["by"][k], (k,)) for k in ("clause_type", "doc_type", "position")]
    sections.append(("strata (doc type x clause type x position)", report["strata"],
                     ("doc_type", "clause_type", "position")))
    for title, strata, keys in sections:
        body.append(f"<h2>{escape(title)}, worst first</h2><table><tr>"
                    + "".join(f"<th>{escape(k)}</th>" for k in keys)
                    + f"<th>cases</th><th>{metric}</th><th></th></tr>")
        for s in strata:
            body.append("<tr>" + "".join(f"<td>{escape(str(s.get(k)))}</td>" for k in keys)
                        + f"<td class='num'>{s['cases']}</td>" + _cell(s.get(metric))
                        + f"<td class='flag'>{'under 90%' if s.get('flagged') else ''}</td></tr>")
        body.append("</table>")
    return _page(f"longdoc {kind} evaluation", body)


def _highlight(page_text: str, quote: str) -> str:
    """``page_text`` escaped, with ``quote`` marked where it occurs (whitespace-insensitive)."""
    import re

    words = quote.split()
    if not words:
        return escape(page_text)
    pattern = r"\s+".join(re.escape(w) for w in words)
    match = re.search(pattern, page_text)
    if not match:
        return escape(page_text) + f"<p><em>quote not located on this page:</em> <mark>{escape(quote)}</mark></p>"
    return (escape(page_text[:match.start()]) + "<mark>" + escape(match.group(0)) + "</mark>"
            + escape(page_text[match.end():]))


def _page_text(chunk: object, page: int | None) -> str:
    """The part of ``chunk`` on ``page`` (the whole chunk when it has no span for that page; ``""`` for
    anything that is not a :class:`~longdoc.core.models.Chunk`, e.g. a missing chunk)."""
    if not isinstance(chunk, Chunk):
        return ""
    for span in chunk.page_spans or []:
        if span.page == page:
            return chunk.text[max(span.char_start - chunk.char_start, 0):span.char_end - chunk.char_start]
    return chunk.text


def _cost_text(result: dict) -> str:
    """The cost line: ``"no model cost"`` for a zero-priced (offline) model, ``"not priced"`` when unknown."""
    cost = result.get("cost_usd")
    if cost is None:
        return "cost not priced (model not in the price table)"
    try:
        zero = Decimal(str(cost)) == 0
    except InvalidOperation:
        zero = False
    return "no model cost (offline model)" if zero else f"estimated cost USD {escape(str(cost))}"


def _where(c: dict) -> str:
    """``page 12 (printed p. 10), section 4.2``: only what the citation has, never ``None``."""
    page = c.get("page")
    parts = [f"page {page}" if page is not None else "no page (the document has no pages)"]
    label = c.get("page_label")
    if label and str(label) != str(page):
        parts[0] += f" (printed p. {escape(str(label))})"
    section = str(c.get("section_id") or "")
    if section:  # "Section 1" or "Exhibit A" already say what they are
        named = section.split(" ")[0].lower() in ("section", "article", "exhibit", "schedule", "annex", "part")
        parts.append(escape(section) if named else f"section {escape(section)}")
    return ", ".join(parts)


def _figure(view: PageView) -> str:
    """The page image with the quote's boxes laid over it (positions in % so they scale with the image)."""
    boxes = "".join(f"<div class='hl' data-quote-box style='left:{100 * x:.3f}%;top:{100 * y:.3f}%;"
                    f"width:{100 * w:.3f}%;height:{100 * h:.3f}%'></div>" for x, y, w, h in view.boxes)
    note = {"full": "", "partial": "<figcaption>the quote continues on the next page</figcaption>",
            None: "<figcaption>quote not located in this page's text layer</figcaption>"}[view.located]
    return (f"<figure class='page' data-located='{view.located or 'none'}'><div class='sheet'>"
            f"<img alt='cited page' src='{view.image}' width='{view.width}' height='{view.height}'>{boxes}</div>"
            f"{note}</figure>")


def _citation(c: dict, chunks: Mapping[str, object], pages: PageRenderer | None) -> str:
    """One citation: the page picture (PDFs) beside its place, heading path and the chunk text with the quote."""
    text = _page_text(chunks.get(c["chunk_id"]), c.get("page"))
    path = " > ".join(c.get("heading_path") or []) or "-"
    facts = (f"<p class='where'>{_where(c)}</p><table><tr><th>heading path</th><td>{escape(path)}</td></tr>"
             f"<tr><th>chunk</th><td>{escape(c['chunk_id'])}</td></tr></table>"
             f"<pre>{_highlight(text, c['quote'])}</pre>")
    view = pages(c["page"], c["quote"]) if pages is not None and c.get("page") is not None else None
    if view is None:
        return f"<div class='cite'>{facts}</div>"
    return f"<div class='cite with-page'>{_figure(view)}<div class='facts'>{facts}</div></div>"


def _ids(ids: list[str]) -> str:
    return ", ".join(escape(i) for i in ids) if ids else "none"


def _evidence(e: dict, searches: list[dict]) -> str:
    """What backs a ``not_found`` (issue 20): the model's reason, the queries it searched with the chunk
    ids each search returned, and the chunk ids it examined; says so when there is none."""
    evidence = e.get("evidence") or {}
    queries, examined = evidence.get("queries") or [], evidence.get("chunk_ids") or []
    ran = [s for s in searches if s.get("clause_type") == e["clause_type"] or s.get("query") in queries]
    rows = [f"<tr><th>reason</th><td>{escape(str(evidence.get('reason') or '-'))}</td></tr>",
            f"<tr><th>queries searched</th><td>{'; '.join(escape(q) for q in queries) or 'none'}</td></tr>",
            *(f"<tr><th>search {escape(repr(s.get('query', '')))} (session {s.get('session')})</th>"
              f"<td>returned {_ids(s.get('chunk_ids') or [])}; already shown {_ids(s.get('seen') or [])}</td></tr>"
              for s in ran),
            f"<tr><th>chunk ids examined</th><td>{_ids(examined)}</td></tr>"]
    note = "" if queries or examined or ran else (
        "<p class='flag' data-no-evidence>no search of the model's own and no chunk named for this not_found</p>")
    return f"<div class='evidence'>{note}<table data-evidence>{''.join(rows)}</table></div>"


def _confidence(e: dict) -> str:
    """An extraction's evidence confidence (issue 29): the score, a possible-omission flag, the reasons."""
    conf = e.get("confidence")
    if not conf:
        return "<p data-confidence='none'>confidence: not recorded (stored before issue 29)</p>"
    flag = " <span class='flag'>possible omission</span>" if conf.get("possible_omission") else ""
    reasons = "".join(f"<li>{escape(str(r))}</li>" for r in conf.get("reasons") or [])
    return (f"<div class='confidence' data-confidence='{conf['score']:.3f}'><p>confidence "
            f"<b>{conf['score']:.2f}</b>{flag}</p><ul data-reasons>{reasons}</ul></div>")


def run_html(result: dict, chunks: Mapping[str, object], pages: PageRenderer | None = None) -> str:
    """Audit page of one run: every extraction with its quote highlighted, on the PDF page where there is one.

    ``result`` is :func:`longdoc.extract.runs.run_result`; ``chunks`` maps chunk ids to
    :class:`~longdoc.core.models.Chunk` (the text shown is the part of the cited chunk on the
    quote's page). ``pages(page, quote)`` returns the rendered page with the quote boxed
    (:func:`longdoc.eval.pdfpage.quote_on_page`), or None: then, and for documents without
    pages, the citation keeps the text view. A ``not_found`` shows its evidence (the queries the
    model searched, what each search returned, the chunk ids it examined; :func:`_evidence`). Every
    extraction shows its confidence and reasons (:func:`_confidence`).
    Also lists sessions, checkpoints, usage, cost and calls. One self-contained file: images are
    inlined as data URIs.
    """
    searches = (result.get("case_facts") or {}).get("searches") or []
    body = [f"<p>document {escape(result['doc_id'])} version {escape(result['doc_version'])}; status "
            f"{escape(result['status'])}; model {escape(str(result['model']))}; sessions {result['sessions']}; "
            f"checkpoints {result['checkpoints']}; {_cost_text(result)}</p>",
            "<h2>Usage</h2><table>" + "".join(f"<tr><th>{escape(k)}</th><td class='num'>{escape(str(v))}</td></tr>"
                                              for k, v in result["usage"].items()) + "</table>",
            "<h2>Extractions</h2>"]
    for e in result["extractions"]:
        body.append(f"<h3>{escape(e['clause_type'])}: {escape(e['status'])}</h3>")
        body.append(_confidence(e))
        body.extend(_citation(c, chunks, pages) for c in e.get("citations", []))
        if e["status"] == "not_found":
            body.append(_evidence(e, searches))
    body.append("<h2>Model calls</h2><table><tr><th>session</th><th>model</th><th>stop reason</th><th>usage</th></tr>")
    for call in result.get("calls", []):
        body.append(f"<tr><td>{call.get('session')}</td><td>{escape(str(call.get('model')))}</td>"
                    f"<td>{escape(str(call.get('stop_reason')))}</td><td>{escape(str(call.get('usage')))}</td></tr>")
    body.append("</table>")
    return _page(f"longdoc run {result['run_id']}", body)
