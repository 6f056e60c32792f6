"""The MCP server over streamable HTTP at ``/mcp`` on ``longdoc serve``, driven by the MCP SDK's own client.

Given ``longdoc serve --port 0`` on a fresh home (its own process, loopback), the same scripted session as
over stdio (tests/functional/mcp_support.py) runs against ``http://127.0.0.1:<port>/mcp``, once with the
SDK's default negotiation (the current protocol) and once forcing the initialize handshake older clients use.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.functional import mcp_support as support

pytestmark = pytest.mark.slow

SERVE = [sys.executable, "-m", "longdoc.cli", "serve", "--port", "0"]


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[dict[str, Any]]:
    """``longdoc serve`` on a fresh home: ``{"url", "home"}``; stopped (SIGTERM) after the module."""
    home = tmp_path_factory.mktemp("mcp-http-home")
    log = (home / "serve.log").open("w")  # a file, not a pipe: the access log must never fill a pipe and block
    proc = subprocess.Popen(SERVE, env=support.offline_env(home), stdout=subprocess.PIPE, stderr=log,
                            text=True, cwd=str(Path(__file__).resolve().parents[2]))
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.startswith("longdoc serve: http://127.0.0.1:"), line + (home / "serve.log").read_text()
        assert "MCP /mcp" in line
        yield {"url": line.split()[2], "home": home}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


@pytest.fixture(scope="module")
def http_session(served, corpus_dir: Path) -> dict[str, Any]:
    """The scripted session's answers over HTTP."""
    return support.run_session(Client(served["url"] + "/mcp"), corpus_dir / support.DOC)


def test_tools_ingest_search_and_chunks_over_http(http_session) -> None:
    # Then the tools are listed, the contract is ingested READY and listed
    assert {"extract", "get_run", "search_chunks", "get_chunk"} <= set(http_session["tools"])
    assert http_session["ingest"]["data"]["status"] == "READY", http_session["ingest"]["text"]
    assert [r["doc_id"] for r in http_session["documents"]["data"]["documents"]] == [support.DOC_ID]
    # And every chunk id search_chunks returned resolves with get_chunk
    ids = [c["chunk_id"] for c in http_session["search"]["data"]["chunks"]]
    assert len(ids) == 3 and all(not http_session["chunks"][i]["error"] for i in ids)
    assert [http_session["chunks"][i]["data"]["chunk_id"] for i in ids] == ids


def test_extract_then_get_run_over_http_gives_the_cli_extractions(http_session, served, monkeypatch) -> None:
    # Given the run started over HTTP, polled until done
    final = http_session["polls"][-1]["data"]
    assert final["status"] == "SUCCEEDED" and http_session["extract_seconds"] < 20
    # When `longdoc extract` runs the same request on the same home
    cli = support.cli_extraction(served["home"], support.DOC_ID, support.CLAUSE_TYPES, monkeypatch)
    # Then the extractions are the same
    assert support.comparable(final["extractions"]) == support.comparable(cli["extractions"])


def test_bad_inputs_over_http_are_one_line_tool_errors(http_session) -> None:
    for case, answer in http_session["bad"].items():
        assert answer["error"] and answer["text"] and "\n" not in answer["text"], (case, answer)
    assert "is not ingested" in http_session["bad"]["unknown document"]["text"]


def test_a_client_using_the_initialize_handshake_is_served_too(served) -> None:
    # Given a client that negotiates the older way (initialize handshake), as some Claude apps do
    async def listed() -> tuple[str, list[str], bool]:
        async with Client(served["url"] + "/mcp", mode="legacy") as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            answer = await client.call_tool("get_run", {"run_id": "run-0000"})
            return client.protocol_version, tools, bool(answer.is_error)

    version, tools, error = asyncio.run(listed())
    # Then it lists the same tools and gets tool errors the same way
    assert version < "2026" and "extract" in tools and error
