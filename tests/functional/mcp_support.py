"""The scripted MCP session both transport tests run (stdio: ``python -m longdoc.cli mcp``; HTTP: ``/mcp`` on
``longdoc serve``), driven by the SDK's own :class:`mcp.Client`, and what it collects for the assertions."""

from __future__ import annotations

import asyncio
import io
import json
import os
import time
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

from mcp import Client

from longdoc import wiring
from longdoc.cli import main

DOC = "cuad/healthcareintegratedtechnologiesinc-reseller-agreement.pdf"
"""A 5-page CUAD contract (corpus MANIFEST): a text-layer PDF with numbered sections, ingested in seconds."""
DOC_ID = "healthcareintegratedtechnologiesinc-reseller-agreement"
CLAUSE_TYPES = ["Governing Law", "Agreement Date", "Non-Compete"]
RUN_SECONDS = 240.0
"""How long the session polls ``get_run`` before giving up (the local engine on a shared 2-core machine)."""


def offline_env(home: Path) -> dict[str, str]:
    """The environment of a server over ``home`` with the offline defaults (baseline model, no key, no network)."""
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    return env | {"LONGDOC_HOME": str(home), "LONGDOC_MODEL": "baseline", "HF_HUB_OFFLINE": "1",
                  "TOKENIZERS_PARALLELISM": "false"}


def _answer(result: Any) -> dict[str, Any]:
    """A tool result as ``{"error": bool, "text": str, "data": structured content}``."""
    return {"error": bool(result.is_error), "text": result.content[0].text if result.content else "",
            "data": result.structured_content}


async def _session(client: Client, doc_path: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with client as c:
        call = c.call_tool
        out["tools"] = {t.name: t for t in (await c.list_tools()).tools}
        out["ingest"] = _answer(await call("ingest", {"path": str(doc_path)}))
        out["documents"] = _answer(await call("list_documents", {}))
        search = _answer(await call("search_chunks", {"doc_id": DOC_ID, "query": "laws of the State of New York",
                                                       "top_k": 3}))
        out["search"] = search
        ids = [chunk["chunk_id"] for chunk in (search["data"] or {}).get("chunks", [])]
        out["chunks"] = {cid: _answer(await call("get_chunk", {"chunk_id": cid})) for cid in ids}
        out["chunk_resource"] = json.loads((await c.read_resource(f"longdoc://chunk/{ids[0]}")).contents[0].text) \
            if ids else None
        out["page"] = _answer(await call("get_page_text", {"doc_id": DOC_ID, "page": 1}))
        started = time.monotonic()
        out["extract"] = _answer(await call("extract", {"doc_id": DOC_ID, "clause_types": CLAUSE_TYPES}))
        out["extract_seconds"] = time.monotonic() - started
        run_id = (out["extract"]["data"] or {}).get("run_id")
        polls: list[dict[str, Any]] = []
        while run_id and time.monotonic() - started < RUN_SECONDS:
            polls.append(_answer(await call("get_run", {"run_id": run_id})))
            if polls[-1]["error"] or polls[-1]["data"]["done"]:
                break
            await asyncio.sleep(1.0)
        out["polls"] = polls
        out["bad"] = {
            "unknown document": _answer(await call("extract", {"doc_id": "no-such-contract",
                                                               "clause_types": ["Governing Law"]})),
            "unknown clause type": _answer(await call("extract", {"doc_id": DOC_ID,
                                                                  "clause_types": ["Governing Lawz"]})),
            "unknown chunk": _answer(await call("get_chunk", {"chunk_id": f"{DOC_ID}:00000000:0001"})),
            "page past the end": _answer(await call("get_page_text", {"doc_id": DOC_ID, "page": 99})),
            "bad arguments": _answer(await call("search_chunks", {"doc_id": DOC_ID, "query": "", "top_k": 99})),
            "missing file": _answer(await call("ingest", {"path": str(doc_path.parent / "no-such-file.pdf")})),
        }
    return out


def run_session(client: Client, doc_path: Path) -> dict[str, Any]:
    """Run the scripted session on ``client`` (not yet entered); returns what each step answered."""
    return asyncio.run(_session(client, doc_path))


def cli_extraction(home: Path, doc_id: str, clause_types: list[str], monkeypatch: Any) -> dict[str, Any]:
    """``longdoc extract DOC --clause-types ... --json`` in this process on ``home`` (offline env): its JSON."""
    for key, value in offline_env(home).items():
        if key.startswith(("LONGDOC_", "HF_")):
            monkeypatch.setenv(key, value)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    wiring.reset()
    buffer = io.StringIO()
    try:
        with redirect_stdout(buffer):
            status = main(["extract", doc_id, "--clause-types", ",".join(clause_types), "--json"])
    finally:
        wiring.reset()
    assert status == 0, buffer.getvalue()[-2000:]
    result: dict[str, Any] = json.loads(buffer.getvalue())
    return result


def comparable(extractions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Extractions without what names the run they came from, in a stable order."""
    return sorted(({k: v for k, v in e.items() if k not in ("run_id", "created_at", "updated_at")}
                   for e in extractions), key=lambda e: (e["clause_type"], e.get("instance", 0)))
