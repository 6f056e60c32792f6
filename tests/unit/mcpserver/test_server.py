"""The MCP server in process (the SDK's client connected to the server object, no subprocess): tool schemas
from the request models, one-line tool errors for unknown documents, versions not READY and unknown clause
types, and the rebuilt page text. Documents are registry entries and chunk lists written by the test."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from longdoc import wiring
from longdoc.core.documents import page_text, save_chunks
from longdoc.core.models import Chunk, DocumentRecord, PageSpan
from longdoc.extract.runs import ExtractionRequest
from longdoc.mcpserver.server import TOOLS, build_server, summary_line
from longdoc.triage.service import TriageRequest

VERSION = "0123456789abcdef"


def chunk(ordinal: int, start: int, text: str, pages: list[tuple[int, int, int, str | None]]) -> Chunk:
    """A chunk of document ``lease`` at absolute offset ``start``; ``pages`` are (page, start, end, label)."""
    return Chunk(chunk_id=f"lease:{VERSION[:8]}:{ordinal:04d}", doc_id="lease", doc_version=VERSION, ordinal=ordinal,
                 source="lease.pdf", page_start=pages[0][0], page_end=pages[-1][0], section_id=str(ordinal + 1),
                 heading_path=[f"{ordinal + 1} Part"], text=text, char_start=start, char_end=start + len(text),
                 token_count=len(text) // 4, content_hash="0" * 64,
                 page_spans=[PageSpan(page=p, char_start=a, char_end=b, label=label) for p, a, b, label in pages],
                 page_labels=[label for *_, label in pages])


# Document text: page 1 is [0, 30), page 2 is [30, 64). Chunk 1 repeats chunk 0's last 6 characters.
CHUNKS = [chunk(0, 0, "1. Rent is due monthly. 2. Th", [(1, 0, 30, "i")]),
          chunk(1, 24, "2. The tenant pays utilities. 3. End", [(1, 0, 30, "i"), (2, 30, 64, "ii")])]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A local home holding ``lease`` (READY, the two chunks above) and ``draft`` (FAILED with a reason)."""
    monkeypatch.setenv("LONGDOC_HOME", str(tmp_path))
    monkeypatch.setenv("LONGDOC_MODEL", "baseline")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    wiring.reset()
    state = wiring.state_store()
    state.put_document(DocumentRecord(doc_id="lease", doc_version=VERSION, source="lease.pdf", status="READY",
                                      pages=2, chunks=2))
    save_chunks(wiring.blob_store(), "lease", VERSION, CHUNKS)
    state.put_document(DocumentRecord(doc_id="draft", doc_version="fedcba9876543210", source="draft.pdf",
                                      status="FAILED", reason="draft.pdf: the PDF is encrypted"))
    yield tmp_path
    wiring.reset()


def call(name: str, arguments: dict[str, Any]) -> tuple[bool, str, Any]:
    """One tool call through the SDK's in-process client: ``(is_error, text, structured content)``."""
    async def run() -> Any:
        async with Client(build_server()) as client:
            return await client.call_tool(name, arguments)

    result = asyncio.run(run())
    return bool(result.is_error), result.content[0].text, result.structured_content


def test_page_text_joins_the_chunks_on_a_page_once_each() -> None:
    # Given two chunks that overlap by six characters, the second running onto page 2
    # Then page 1's text has every character of [0, 30) once, page 2 the rest, a missing page None
    assert page_text(CHUNKS, 1) == "1. Rent is due monthly. 2. The"
    assert page_text(CHUNKS, 2) == " tenant pays utilities. 3. End"
    assert page_text(CHUNKS, 3) is None


def test_tool_schemas_are_the_request_models() -> None:
    # When the tools are listed in process
    async def listed() -> dict[str, Any]:
        async with Client(build_server()) as client:
            return {t.name: t.input_schema for t in (await client.list_tools()).tools}

    schemas = asyncio.run(listed())
    # Then extract's and triage's schemas have exactly the API models' fields and bounds
    assert list(schemas["extract"]["properties"]) == list(ExtractionRequest.model_fields)
    assert schemas["extract"]["properties"]["top_k"]["anyOf"][0] == {"maximum": 50, "minimum": 1, "type": "integer"}
    assert list(schemas["triage"]["properties"]) == list(TriageRequest.model_fields)
    assert [t.name for t in TOOLS] == list(schemas)
    assert all(summary_line(t).endswith(".") and len(summary_line(t)) < 120 for t in TOOLS)


def test_page_and_chunk_tools_read_the_stores(home: Path) -> None:
    error, _, page = call("get_page_text", {"doc_id": "lease", "page": 2})
    assert not error and (page["page_label"], page["text"]) == ("ii", " tenant pays utilities. 3. End")
    error, _, got = call("get_chunk", {"chunk_id": f"lease:{VERSION[:8]}:0001"})
    assert not error and got["section_id"] == "2" and got["page_labels"] == ["i", "ii"]
    error, _, listed = call("list_documents", {})
    assert [(d["doc_id"], d["status"]) for d in listed["documents"]] == [("draft", "FAILED"), ("lease", "READY")]


def test_a_version_not_ready_is_a_one_line_tool_error_with_its_reason(home: Path) -> None:
    # When a FAILED document is searched, or extracted from
    for name, arguments in (("search_chunks", {"doc_id": "draft", "query": "rent"}),
                            ("extract", {"doc_id": "draft", "clause_types": ["Governing Law"]})):
        error, text, _ = call(name, arguments)
        # Then the tool error says it is not READY and why, on one line
        assert error and "draft" in text and "FAILED" in text and "encrypted" in text, text
        assert "\n" not in text


def test_an_unknown_clause_type_names_the_close_ones(home: Path) -> None:
    # When a misspelt clause type is asked for on a READY document
    error, text, _ = call("extract", {"doc_id": "lease", "clause_types": ["Govrning Law"]})
    # Then the tool error names it and the known name closest to it, on one line, without the SDK's prefix
    assert error and "Govrning Law" in text and "Governing Law" in text, text
    assert "\n" not in text and not text.startswith("Error executing tool")


def test_arguments_the_model_rejects_are_named_on_one_line(home: Path) -> None:
    # Given arguments the schema refuses, and ones only the model's own validator refuses (two budgets)
    error, text, _ = call("search_chunks", {"doc_id": "lease", "query": "x" * 301})
    assert error and text.startswith("invalid arguments: query") and "\n" not in text
    error, text, _ = call("triage", {"collection": "c", "claim": "a leak", "budget_tokens": 10, "cost_line": "1,2,3,4"})
    assert error and "give budget_tokens or cost_line, not both" in text and "\n" not in text


def test_the_chunk_resource_and_the_document_resource(home: Path) -> None:
    async def read() -> tuple[dict[str, Any], dict[str, Any]]:
        async with Client(build_server()) as client:
            one = await client.read_resource(f"longdoc://chunk/lease:{VERSION[:8]}:0000")
            doc = await client.read_resource("longdoc://doc/lease")
            return json.loads(one.contents[0].text), json.loads(doc.contents[0].text)

    one, doc = asyncio.run(read())
    assert one["text"] == CHUNKS[0].text
    assert [c["chunk_id"] for c in doc["chunk_list"]] == [c.chunk_id for c in CHUNKS]
    assert "text" not in doc["chunk_list"][0]
