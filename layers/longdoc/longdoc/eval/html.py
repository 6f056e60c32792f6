"""Self-contained HTML pages: eval reports (stratified tables with a heat map) and run audits.

No scripts, no external assets: one file that opens anywhere. Every value is escaped with
:func:`html.escape`.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape

from longdoc.core.models import Chunk

_STYLE = """body{font-family:system-ui,sans-serif;margin:2em;max-width:72em}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left}
th{background:#f3f3f3}.num{text-align:right;font-variant-numeric:tabular-nums}
mark{background:#ffe58a}pre{white-space:pre-wrap;background:#fafafa;border:1px solid #eee;padding:.5em}
.flag{color:#b00;font-weight:bold}"""


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


def run_html(result: dict, chunks: Mapping[str, object]) -> str:
    """Audit page of one run: every extraction with its quote highlighted in its page's text.

    ``result`` is :func:`longdoc.extract.session.run_result`; ``chunks`` maps chunk ids to
    :class:`~longdoc.core.models.Chunk` (the page text shown is the part of the cited chunk on
    the quote's page). Also lists the run's sessions, checkpoints, usage, cost and calls.
    """
    body = [f"<p>document {escape(result['doc_id'])} version {escape(result['doc_version'])}; status "
            f"{escape(result['status'])}; model {escape(str(result['model']))}; sessions {result['sessions']}; "
            f"checkpoints {result['checkpoints']}; cost (USD) {escape(str(result['cost_usd']))}</p>",
            "<h2>Usage</h2><table>" + "".join(f"<tr><th>{escape(k)}</th><td class='num'>{escape(str(v))}</td></tr>"
                                              for k, v in result["usage"].items()) + "</table>",
            "<h2>Extractions</h2>"]
    for e in result["extractions"]:
        body.append(f"<h3>{escape(e['clause_type'])}: {escape(e['status'])}</h3>")
        for c in e.get("citations", []):
            text = _page_text(chunks.get(c["chunk_id"]), c.get("page"))
            body.append(f"<p>page {escape(str(c.get('page')))} (label {escape(str(c.get('page_label')))}), "
                        f"section {escape(str(c.get('section_id')))}, chunk {escape(c['chunk_id'])}</p>"
                        f"<pre>{_highlight(text, c['quote'])}</pre>")
    body.append("<h2>Model calls</h2><table><tr><th>session</th><th>model</th><th>stop reason</th><th>usage</th></tr>")
    for call in result.get("calls", []):
        body.append(f"<tr><td>{call.get('session')}</td><td>{escape(str(call.get('model')))}</td>"
                    f"<td>{escape(str(call.get('stop_reason')))}</td><td>{escape(str(call.get('usage')))}</td></tr>")
    body.append("</table>")
    return _page(f"longdoc run {result['run_id']}", body)
