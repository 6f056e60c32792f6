"""A self-contained API docs page generated from an OpenAPI 3 document (no scripts, no CDN assets).

Swagger UI loads its JavaScript and CSS from a CDN, which a machine without network cannot
reach; this page lists every operation with its parameters, request body schema and
responses, with component schemas resolved one level and shown as JSON.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

_STYLE = """body{font-family:system-ui,sans-serif;margin:2em;max-width:72em}
.op{border:1px solid #ddd;border-radius:6px;margin:1em 0;padding:.5em 1em}
.method{display:inline-block;min-width:4em;font-weight:bold;color:#fff;border-radius:4px;padding:.1em .5em;
text-align:center}.get{background:#2a7ab0}.post{background:#3a9a4a}.put,.patch{background:#b07a2a}
.delete{background:#b03a2a}code,pre{font-family:ui-monospace,monospace}pre{background:#f6f6f6;padding:.5em;
overflow:auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}"""


def _resolve(schema: Any, spec: dict[str, Any]) -> Any:
    """``schema`` with a top-level ``$ref`` to ``#/components/schemas/X`` replaced by X (one level)."""
    if isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        name = schema["$ref"].rsplit("/", 1)[-1]
        return spec.get("components", {}).get("schemas", {}).get(name, schema)
    return schema


def _parameters(op: dict[str, Any]) -> str:
    """The operation's parameters as a table (``""`` when it has none)."""
    params = op.get("parameters") or []
    if not params:
        return ""
    rows = "".join(f"<tr><td><code>{escape(str(p.get('name')))}</code></td><td>{escape(str(p.get('in')))}</td>"
                   f"<td>{'yes' if p.get('required') else 'no'}</td>"
                   f"<td>{escape(str((p.get('schema') or {}).get('type', '')))}</td></tr>" for p in params)
    return f"<h4>Parameters</h4><table><tr><th>name</th><th>in</th><th>required</th><th>type</th></tr>{rows}</table>"


def _operation(path: str, method: str, op: dict[str, Any], spec: dict[str, Any]) -> str:
    """One operation's block: method, path, summary, description, parameters, body schema, responses."""
    parts = [f"<div class='op' id='{escape(method)}-{escape(path)}'><span class='method {escape(method)}'>"
             f"{escape(method.upper())}</span> <code>{escape(path)}</code> {escape(op.get('summary') or '')}"]
    if op.get("description"):
        parts.append(f"<p>{escape(op['description'])}</p>")
    parts.append(_parameters(op))
    content = (op.get("requestBody") or {}).get("content") or {}
    for media, body in content.items():
        schema = _resolve(body.get("schema"), spec)
        parts.append(f"<h4>Request body ({escape(media)})</h4><pre>{escape(json.dumps(schema, indent=1))}</pre>")
    responses = op.get("responses") or {}
    if responses:
        parts.append("<h4>Responses</h4><ul>" + "".join(
            f"<li><code>{escape(str(code))}</code> {escape(str(r.get('description', '')))}</li>"
            for code, r in responses.items()) + "</ul>")
    parts.append("</div>")
    return "".join(parts)


def docs_html(spec: dict[str, Any]) -> str:
    """The docs page for OpenAPI document ``spec``: title, version, then every operation by path.

    ``spec`` is the parsed JSON of ``GET /openapi.json``; missing parts are left out.
    """
    info = spec.get("info") or {}
    title = f"{info.get('title', 'API')} {info.get('version', '')}".strip()
    ops = [_operation(path, method, op, spec) for path, item in sorted((spec.get("paths") or {}).items())
           for method, op in item.items() if isinstance(op, dict)]
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
            f"<style>{_STYLE}</style></head><body><h1>{escape(title)}</h1>"
            f"<p>OpenAPI {escape(str(spec.get('openapi', '')))}; the document itself: "
            f"<a href='/openapi.json'>/openapi.json</a></p>{''.join(ops)}</body></html>\n")
