"""``longdoc mcp`` over stdio, driven by the MCP SDK's own client (``python -m longdoc.cli mcp`` as a subprocess).

Given a fresh home and the offline defaults, one scripted session (tests/functional/mcp_support.py) lists the
tools, ingests a 5-page CUAD contract, searches it, resolves every returned chunk id, reads a page, starts an
extraction and polls it until done, and tries bad inputs. The tests below check what each step answered, and
that the extraction equals ``longdoc extract``'s for the same inputs on the same home.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.functional import mcp_support as support

pytestmark = pytest.mark.slow

EXPECTED_TOOLS = {"list_documents", "ingest", "search_chunks", "get_chunk", "get_page_text", "list_clause_types",
                  "extract", "get_run", "resume_run", "summarize", "get_summary", "triage", "get_triage"}


@pytest.fixture(scope="module")
def stdio_session(tmp_path_factory, corpus_dir: Path) -> Iterator[dict[str, Any]]:
    """The scripted session's answers over stdio, plus the home it ran on."""
    home = tmp_path_factory.mktemp("mcp-stdio-home")
    params = StdioServerParameters(command=sys.executable, args=["-m", "longdoc.cli", "mcp"],
                                   env=support.offline_env(home), cwd=str(Path(__file__).resolve().parents[2]))
    answers = support.run_session(Client(params), corpus_dir / support.DOC)
    yield answers | {"home": home}


def test_the_tools_are_listed_with_schemas_from_the_request_models(stdio_session) -> None:
    # Given the session's tool list
    tools = stdio_session["tools"]
    # Then every tool is there, and extract's input schema is the API's ExtractionRequest, bounds included
    assert set(tools) == EXPECTED_TOOLS
    schema = tools["extract"].input_schema
    assert schema["required"] == ["doc_id", "clause_types"]
    assert schema["properties"]["clause_types"]["maxItems"] == 64
    assert schema["properties"]["facts"]["maxProperties"] == 32
    assert tools["search_chunks"].input_schema["properties"]["top_k"]["maximum"] == 10


def test_ingest_answers_the_record_and_list_documents_shows_it_ready(stdio_session) -> None:
    ingest, documents = stdio_session["ingest"], stdio_session["documents"]
    # Then the ingest answered the READY record of the 5-page contract
    assert not ingest["error"], ingest["text"]
    assert (ingest["data"]["doc_id"], ingest["data"]["status"], ingest["data"]["pages"]) == (support.DOC_ID, "READY", 5)
    assert ingest["data"]["chunks"] > 5
    # And list_documents lists it with the same version
    rows = documents["data"]["documents"]
    assert [(r["doc_id"], r["doc_version"], r["status"]) for r in rows] == [
        (support.DOC_ID, ingest["data"]["doc_version"], "READY")]


def test_search_chunks_returns_located_chunks_whose_ids_resolve(stdio_session) -> None:
    chunks = stdio_session["search"]["data"]["chunks"]
    # Then three chunks came back, the governing-law one first, each with its locators
    assert len(chunks) == 3
    assert "laws of the State of New York" in " ".join(chunks[0]["text"].split())
    assert all(c["page_start"] >= 1 and isinstance(c["heading_path"], list) and "section_ids" in c for c in chunks)
    # And every id resolves with get_chunk to the same chunk, text and page included
    for c in chunks:
        got = stdio_session["chunks"][c["chunk_id"]]
        assert not got["error"]
        assert (got["data"]["chunk_id"], got["data"]["text"], got["data"]["page_start"]) == (
            c["chunk_id"], c["text"], c["page_start"])
    # And the chunk resource reads the same chunk
    assert stdio_session["chunk_resource"]["chunk_id"] == chunks[0]["chunk_id"]


def test_get_page_text_gives_the_first_page(stdio_session) -> None:
    page = stdio_session["page"]
    assert not page["error"], page["text"]
    assert page["data"]["page"] == 1 and "RESELLER AGREEMENT" in page["data"]["text"].upper()


def test_extract_answers_at_once_and_get_run_ends_with_the_cli_extractions(stdio_session, monkeypatch) -> None:
    # Given the run the session started and polled
    start, polls = stdio_session["extract"], stdio_session["polls"]
    assert not start["error"], start["text"]
    assert start["data"]["status"] in ("PENDING", "RUNNING") and stdio_session["extract_seconds"] < 20
    final = polls[-1]["data"]
    assert final["done"] and final["status"] == "SUCCEEDED", polls[-1]["text"][:500]
    assert final["pending"] == []
    # When `longdoc extract` runs the same request on the same home
    cli = support.cli_extraction(stdio_session["home"], support.DOC_ID, support.CLAUSE_TYPES, monkeypatch)
    # Then both runs extracted the same clauses with the same citations
    assert support.comparable(final["extractions"]) == support.comparable(cli["extractions"])
    found = {e["clause_type"]: e for e in final["extractions"] if e["status"] == "found"}
    assert "New York" in found["Governing Law"]["citations"][0]["quote"]


def test_bad_inputs_are_tool_errors_of_one_line(stdio_session) -> None:
    bad = stdio_session["bad"]
    # Then each is an MCP tool error whose text is one line naming the problem, without a traceback
    expected = {"unknown document": "document no-such-contract is not ingested",
                "unknown clause type": "Governing Lawz", "unknown chunk": "does not exist",
                "page past the end": "it has 5 pages", "bad arguments": "invalid arguments: query",
                "missing file": "no such file"}
    for case, words in expected.items():
        answer = bad[case]
        assert answer["error"], case
        assert words in answer["text"], (case, answer["text"])
        assert "\n" not in answer["text"] and "Traceback" not in answer["text"], (case, answer["text"])
    assert "closest: Governing Law" in bad["unknown clause type"]["text"]  # the close name, as the CLI says it


def _stdio_client(home: Path) -> Client:
    return Client(StdioServerParameters(command=sys.executable, args=["-m", "longdoc.cli", "mcp"],
                                        env=support.offline_env(home), cwd=str(Path(__file__).resolve().parents[2])))


async def _poll(call: Any, tool: str, arguments: dict[str, Any], seconds: float = support.RUN_SECONDS) -> list[Any]:
    """Call ``tool`` every second until its answer is done (or an error); every answer, in order."""
    import asyncio
    import time

    answers, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        answers.append(support._answer(await call(tool, arguments)))
        if answers[-1]["error"] or answers[-1]["data"]["done"]:
            break
        await asyncio.sleep(1.0)
    return answers


def test_work_started_over_stdio_outlives_the_session_and_a_killed_run_resumes(stdio_session) -> None:
    import asyncio
    import os
    import signal

    home = stdio_session["home"]
    run_request = {"doc_id": support.DOC_ID, "clause_types": ["Agreement Date"]}
    summary_request = {"doc_id": support.DOC_ID, "length": "short"}

    async def scenario() -> dict[str, Any]:
        # Given a session that starts a run and a summary, then closes its server at once
        async with _stdio_client(home) as first:
            run = support._answer(await first.call_tool("extract", run_request))
            summary = support._answer(await first.call_tool("summarize", summary_request))
        # When a later session polls them
        async with _stdio_client(home) as later:
            runs = await _poll(later.call_tool, "get_run", {"run_id": run["data"]["run_id"]})
            summaries = await _poll(later.call_tool, "get_summary", {"summary_id": summary["data"]["summary_id"]})
            # And a run whose worker is killed is STALE, and the same extract request resumes it
            killed = support._answer(await later.call_tool("extract", {"doc_id": support.DOC_ID,
                                                                       "clause_types": ["Non-Compete"]}))
            from longdoc.ingest.lease import claim_holder_pid

            lease = _lease_owner(home, killed["data"]["run_id"])
            os.kill(claim_holder_pid(lease) or 0, signal.SIGKILL)
            await asyncio.sleep(0.5)
            stale = support._answer(await later.call_tool("get_run", {"run_id": killed["data"]["run_id"]}))
            again = support._answer(await later.call_tool("extract", {"doc_id": support.DOC_ID,
                                                                      "clause_types": ["Non-Compete"]}))
            resumed = await _poll(later.call_tool, "get_run", {"run_id": killed["data"]["run_id"]})
        return {"runs": runs, "summaries": summaries, "stale": stale, "again": again, "resumed": resumed}

    got = asyncio.run(scenario())
    # Then the run and the summary finished after their session was gone, never shown STALE meanwhile
    assert [a["data"]["status"] for a in got["runs"]][-1] == "SUCCEEDED", got["runs"][-1]["text"][:300]
    assert "STALE" not in {a["data"]["status"] for a in got["runs"] + got["summaries"]}
    assert got["summaries"][-1]["data"]["status"] == "SUCCEEDED", got["summaries"][-1]["text"][:300]
    # And the killed run was STALE, resumed by the same request, and finished
    assert got["stale"]["data"]["status"] == "STALE" and "resume_run" in got["stale"]["data"]["next"]
    assert got["again"]["data"]["resumed"] and got["again"]["data"]["run_id"] == got["stale"]["data"]["run_id"]
    assert got["resumed"][-1]["data"]["status"] == "SUCCEEDED", got["resumed"][-1]["text"][:300]


def _lease_owner(home: Path, run_id: str) -> str:
    """The owner of ``run_id``'s lease in ``home``'s state store (it names the worker's pid)."""
    import sqlite3

    with sqlite3.connect(home / "state.sqlite3") as db:
        row = db.execute("SELECT owner FROM run_leases WHERE run_id = ?", (run_id,)).fetchone()
    return str(row[0])
