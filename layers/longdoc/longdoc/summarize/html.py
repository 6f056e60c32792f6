"""The summary's HTML page: statements with citations, each citation opening the cited text on its page.

One self-contained file (no scripts, no external assets). Every citation links to a source
block (shown with CSS ``:target``) holding the cited chunk's text on the cited page, the
cited section's text marked. Exact values, dropped statements, usage and cost follow.
Every value is escaped with :func:`html.escape`.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from longdoc.core.models import Chunk
from longdoc.summarize.units import pieces_of

_STYLE = """body{font-family:system-ui,sans-serif;margin:2em;max-width:72em;line-height:1.45}
ol li{margin:.4em 0}a.cite{font-size:.85em;margin-left:.3em;text-decoration:none;background:#eef;padding:0 .3em;
border-radius:3px}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.25em .5em;
text-align:left}th{background:#f3f3f3}.src{display:none;border:1px solid #bbd;background:#fbfbff;padding:.5em 1em;
margin:1em 0}.src:target{display:block}pre{white-space:pre-wrap;font-family:inherit}mark{background:#ffe58a}
.baseline{background:#fff3cd;border:1px solid #e0c060;padding:.5em}.dropped{color:#777}"""


def _anchor(section_id: str, chunk_id: str | None, page: Any) -> str:
    raw = f"src-{chunk_id}-{page}-{section_id}"
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in raw)


def _page_text(chunk: Chunk, page: int | None) -> tuple[int, str]:
    """The chunk's text on ``page`` (all of it for a format without pages) and its offset in the chunk."""
    for span in chunk.page_spans:
        if span.page == page:
            a = max(0, span.char_start - chunk.char_start)
            b = min(len(chunk.text), span.char_end - chunk.char_start)
            if a < b:
                return a, chunk.text[a:b]
    return 0, chunk.text


def _source_block(anchor: str, cite: Mapping[str, Any], chunk: Chunk) -> str:
    start, text = _page_text(chunk, cite.get("page"))
    marks = sorted((p.offset - start, p.offset - start + len(p.text)) for p in pieces_of(chunk)
                   if p.section_id == cite["section_id"])
    out, at = [], 0
    for a, b in marks:
        a, b = max(a, at), min(b, len(text))
        if a >= b:
            continue
        out += [escape(text[at:a]), f"<mark>{escape(text[a:b])}</mark>"]
        at = b
    out.append(escape(text[at:]))
    label = f" (printed {escape(str(cite['page_label']))})" if cite.get("page_label") else ""
    return (f"<div class='src' id='{anchor}'><h3>Section {escape(cite['section_id'])}, page "
            f"{escape(str(cite.get('page')))}{label}</h3><p>{escape(' > '.join(cite.get('heading_path') or []))} "
            f"· chunk {escape(chunk.chunk_id)}</p><pre>{''.join(out)}</pre></div>")


def summary_html(result: Mapping[str, Any], chunks: Mapping[str, Chunk]) -> str:
    """The page for a summary result (the shape of :mod:`longdoc.summarize.result`); ``chunks`` by chunk id."""
    title = f"Summary of {result.get('source') or result['doc_id']}"
    body = [f"<p>{escape(result['doc_id'])} version {escape(result['doc_version'])} · model "
            f"<b>{escape(result['model'])}</b> · {escape(result['length'])}"
            + (f" · focus: <i>{escape(result['focus'])}</i>" if result.get("focus") else "") + "</p>"]
    if result.get("baseline"):
        body.append(f"<p class='baseline'>{escape(result['label'])}</p>")
    sources: dict[str, str] = {}
    body.append("<ol>")
    for statement in result["statements"]:
        links = []
        for cite in statement["citations"]:
            anchor = _anchor(cite["section_id"], cite.get("chunk_id"), cite.get("page"))
            chunk = chunks.get(cite.get("chunk_id") or "")
            if chunk is not None and anchor not in sources:
                sources[anchor] = _source_block(anchor, cite, chunk)
            pages = ", ".join(str(p) for p in cite.get("pages") or [cite.get("page")])
            links.append(f"<a class='cite' href='#{anchor}'>§ {escape(cite['section_id'])}, p. "
                         f"{escape(pages)}</a>")
        body.append(f"<li>{escape(statement['text'])}{''.join(links)}</li>")
    body.append("</ol>")
    body += list(sources.values())
    if result.get("exact_values"):
        body.append("<h2>Exact values (verbatim)</h2><table><tr><th>value</th><th>kind</th><th>section</th>"
                    "<th>page</th></tr>")
        body += [f"<tr><td>{escape(v['value'])}</td><td>{escape(v['kind'])}</td><td>{escape(v['section_id'])}</td>"
                 f"<td>{escape(str(v.get('page')))}</td></tr>" for v in result["exact_values"]]
        body.append("</table>")
    if result.get("dropped"):
        body.append("<h2>Dropped (failed the checks, not verified)</h2><ul class='dropped'>")
        body += [f"<li>{escape(d['text'])}: {escape(d['reason'])}</li>" for d in result["dropped"]]
        body.append("</ul>")
    usage = result.get("usage", {})
    body.append(f"<h2>Usage</h2><p>{result.get('groups')} groups · {result.get('map_calls')} map calls · "
                f"{result.get('reduce_calls')} reduce calls · reduce depth {result.get('reduce_depth')} · "
                f"{result.get('model_calls')} model calls · {usage.get('input_tokens')} input / "
                f"{usage.get('output_tokens')} output tokens · cost "
                f"{escape(str(result.get('cost_usd') or 'n/a'))} USD</p>")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title><style>{_STYLE}</style>"
            f"</head><body><h1>{escape(title)}</h1>{''.join(body)}</body></html>\n")
