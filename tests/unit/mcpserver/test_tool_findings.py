# ruff: noqa: F811 - the `home` fixture is imported from test_server and requested by name
"""What an outside tester found in the MCP tools, each checked in process (the SDK's client on the server object):
strict arguments, ids by pattern, one not-READY wording per case, MCP wording of CLI messages, ingest paths and
``LONGDOC_MCP_ROOT``, run progress from the checkpoint, resuming a STALE run, restarting a dead summary."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from longdoc import wiring
from longdoc.config import function_settings
from longdoc.core.records import CaseFacts, Checkpoint, ResolvedClause, RunRecord
from longdoc.local.server import pid_file
from longdoc.mcpserver.wording import mcp_wording
from tests.unit.mcpserver.test_server import VERSION, call, home  # noqa: F401 - the fixture is used by name

CLAUSES = ["Governing Law", "Agreement Date", "Non-Compete"]


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped (a pid nobody runs now)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def owner_of(pid: int) -> str:
    return f"{socket.gethostname()}:{pid}:0badf00d"


class RecordingStarter:
    """An extraction / summary starter that records what it was asked to start or resume (nothing runs)."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.resumed: list[str] = []

    owner = owner_of(os.getpid())

    def start_execution(self, name: str, execution_input: dict[str, Any]) -> str:
        """Record ``name``; for a run, take its lease for this live process, as the worker starter does."""
        self.started.append(name)
        if "run_id" in execution_input:
            assert wiring.state_store().acquire_run_lease(execution_input["run_id"], self.owner, 300)
        return f"arn:aws:states:us-east-1:123456789012:execution:longdoc-local-x:{name}"

    def resume(self, run_id: str) -> None:
        self.resumed.append(run_id)


@pytest.fixture
def starter(home: Path) -> Iterator[RecordingStarter]:
    recording = RecordingStarter()
    with wiring.overrides(starters={"extract": recording, "summarize": recording}):
        yield recording


@pytest.mark.parametrize(("arguments", "words"), [
    ({"doc_id": "lease", "query": "rent", "colour": "red"}, "unknown argument 'colour' for search_chunks"),
    ({"doc_id": "lease", "query": "rent", "top_k": "3"}, "top_k: Input should be a valid integer"),
    ({"doc_id": "lease", "query": "rent", "top_k": True}, "top_k: Input should be a valid integer"),
    ({"doc_id": "lease", "query": "   \t "}, "query: the query is blank"),
])
def test_loose_arguments_are_refused_naming_the_argument(home: Path, arguments: dict[str, Any], words: str) -> None:
    # When search_chunks is called with an unknown argument, a string or a boolean for top_k, or a blank query
    error, text, _ = call("search_chunks", arguments)
    # Then it is a one-line tool error naming the argument (the SDK alone dropped, coerced or answered them)
    assert error and words in text and "\n" not in text, text


def test_an_id_not_of_its_form_is_an_unknown_id_without_storage_words(home: Path) -> None:
    # When get_summary / get_run / get_triage are given a path-like id
    for tool, field, kind in (("get_summary", "summary_id", "summary"), ("get_run", "run_id", "run"),
                              ("get_triage", "triage_id", "triage")):
        error, text, _ = call(tool, {field: "../x"})
        # Then the answer is the one for any unknown id, and no blob key or storage term leaks
        assert error and text.startswith(f"{kind} ../x does not exist"), text
        assert "blob" not in text and "segment" not in text


def test_not_ready_is_worded_once_per_case_across_tools(home: Path, starter: RecordingStarter) -> None:
    # Given lease READY, draft FAILED, and wip INGESTING under a claim this (live) process holds
    state = wiring.state_store()
    from longdoc.core.models import DocumentRecord

    state.put_document(DocumentRecord(doc_id="wip", doc_version="aa" * 8, source="wip.pdf", status="INGESTING"))
    assert state.claim_version("wip", "aa" * 8, owner_of(os.getpid()), 120)
    calls = {"search_chunks": {"query": "rent"}, "get_page_text": {"page": 1},
             "extract": {"clause_types": ["Governing Law"]}, "summarize": {}}
    for doc_id, expected in (
            ("draft", "document draft is not READY (FAILED: draft.pdf: the PDF is encrypted)"),
            ("nope", "document nope is not ingested (list_documents lists those that are)"),
            ("wip", "document wip is being ingested; poll list_documents until its status is READY")):
        # When each tool reading a document is asked for it
        texts = {tool: call(tool, {"doc_id": doc_id, **extra})[1] for tool, extra in calls.items()}
        # Then every tool says the same one line
        assert texts == dict.fromkeys(calls, expected), texts
    # And once the ingest's process is gone, the next step is to ingest again, not to wait
    state.put_document(DocumentRecord(doc_id="gone", doc_version="bb" * 8, source="gone.pdf", status="INGESTING"))
    assert state.claim_version("gone", "bb" * 8, owner_of(dead_pid()), 120)
    assert "its ingest was interrupted; call ingest with the file again" in call(
        "search_chunks", {"doc_id": "gone", "query": "rent"})[1]
    assert starter.started == []


def test_cli_wording_becomes_the_tools_arguments_and_tools() -> None:
    # Given the services' messages written for the CLI
    fields = ["collection", "claim", "loss_date", "line_of_business", "focus"]
    # Then the MCP wording names arguments and tools instead of flags and commands
    assert mcp_wording("no line of business: pass --line-of-business (collection has: home, motor)", fields) == \
        "no line of business: give the line_of_business argument (collection has: home, motor)"
    assert mcp_wording("no loss date: pass --loss-date YYYY-MM-DD or put loss_date in the claim", fields) == \
        "no loss date: give the loss_date argument or put loss_date in the claim"
    assert mcp_wording("claim file in the request is empty", fields) == "claim is empty"
    assert mcp_wording("--focus is 400 characters; the limit is 300", fields) == "focus is 400 characters; the limit is 300"
    assert mcp_wording("unknown clause type 'Zq'; list the known ones with `longdoc clause-types`", []) == \
        "unknown clause type 'Zq'; list the known ones with the list_clause_types tool"
    assert mcp_wording("continue it with `longdoc runs resume run-0a1b`.", []) == \
        "continue it with the resume_run tool (run_id run-0a1b)."
    # And a flag the tool does not take stays as it is
    assert mcp_wording("pass --budget-tokens", fields) == "pass --budget-tokens"


def test_tool_errors_use_the_mcp_wording(home: Path) -> None:
    # When extract gets a clause type with no close name, and triage an empty claim
    _, unknown, _ = call("extract", {"doc_id": "lease", "clause_types": ["Qqqqqqqqqqqqqqqqqqqq"]})
    _, empty, _ = call("triage", {"collection": "none", "claim": ""})
    # Then the messages name the tool and the argument, not the CLI
    assert "list_clause_types tool" in unknown and "longdoc clause-types" not in unknown, unknown
    assert "claim file" not in empty and "--" not in empty, empty


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Path]]:
    """A root folder with a file, a symlink inside it to a file outside it, and LONGDOC_MCP_ROOT unset."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "a.txt").write_text("Rent is due monthly.\n")
    (outside / "b.txt").write_text("Secret.\n")
    (root / "link.txt").symlink_to(outside / "b.txt")
    monkeypatch.delenv("LONGDOC_MCP_ROOT", raising=False)
    function_settings.cache_clear()
    yield {"root": root, "outside": outside}
    function_settings.cache_clear()


def test_ingest_paths_are_checked_and_the_root_confines_them(files: dict[str, Path], monkeypatch) -> None:
    from longdoc.core.errors import IngestPathRefused
    from longdoc.mcpserver.paths import ingest_path

    # A device is not a regular file, a folder is a folder, a missing file says where it looked
    with pytest.raises(IngestPathRefused, match="/dev/zero: not a regular file"):
        ingest_path("/dev/zero")
    with pytest.raises(IngestPathRefused, match="is a directory"):
        ingest_path(str(files["root"]))
    monkeypatch.chdir(files["root"])
    assert ingest_path("a.txt") == files["root"] / "a.txt"  # relative: the server's working directory
    with pytest.raises(IngestPathRefused, match="no such file.*server working directory"):
        ingest_path("missing.txt")
    # Given LONGDOC_MCP_ROOT
    monkeypatch.setenv("LONGDOC_MCP_ROOT", str(files["root"]))
    monkeypatch.chdir(files["outside"])
    function_settings.cache_clear()
    # Then a relative path resolves against it, and paths outside it are refused, through a symlink too
    assert ingest_path("a.txt") == files["root"] / "a.txt"
    with pytest.raises(IngestPathRefused, match="outside LONGDOC_MCP_ROOT"):
        ingest_path(str(files["outside"] / "b.txt"))
    with pytest.raises(IngestPathRefused, match=r"link.txt \(.*b.txt\): outside LONGDOC_MCP_ROOT"):
        ingest_path(str(files["root"] / "link.txt"))
    with pytest.raises(IngestPathRefused, match="outside LONGDOC_MCP_ROOT"):
        ingest_path("../outside/b.txt")


def test_ingest_of_a_device_is_a_tool_error_saying_so(home: Path) -> None:
    error, text, _ = call("ingest", {"path": "/dev/zero"})
    assert error and text == "/dev/zero: not a regular file (a device, FIFO or socket); ingest reads documents"


def _stored_run(status: str = "RUNNING", owner_pid: int | None = None) -> RunRecord:
    """A run of lease over CLAUSES with a checkpoint: Governing Law found, Agreement Date not found."""
    state = wiring.state_store()
    run = RunRecord(run_id="run-00000000000a", doc_id="lease", doc_version=VERSION, clause_types=CLAUSES,
                    status=status, execution_arn="arn:x", executions=["run-00000000000a"])
    state.put_run(run)
    facts = CaseFacts(run_id=run.run_id, doc_id="lease", doc_version=VERSION, clause_types=CLAUSES,
                      resolved={"Governing Law": ResolvedClause(status="found", pages=[1]),
                                "Agreement Date": ResolvedClause(status="not_found")})
    state.save_checkpoint(Checkpoint(run_id=run.run_id, version=1, case_facts=facts, sessions=2))
    if owner_pid is not None:
        assert state.acquire_run_lease(run.run_id, owner_of(owner_pid), 300)
    return run


def test_get_run_reports_progress_from_the_latest_checkpoint(home: Path) -> None:
    # Given a running run (its lease held by this live process) two sessions in
    _stored_run(owner_pid=os.getpid())
    error, _, run = call("get_run", {"run_id": "run-00000000000a"})
    # Then pending is what the checkpoint has not resolved, and progress says what was found so far
    assert not error and run["status"] == "RUNNING" and not run["done"]
    assert run["pending"] == ["Non-Compete"]
    assert run["progress"] == {"found": ["Governing Law"], "not_found": ["Agreement Date"],
                               "pending": ["Non-Compete"], "sessions": 2}


def test_a_stale_run_is_resumed_by_extract_again_and_by_resume_run(starter: RecordingStarter) -> None:
    # Given the run of an extract request whose worker died (its lease names a pid that is gone)
    request = {"doc_id": "lease", "clause_types": CLAUSES}
    error, _, first = call("extract", request)
    assert not error and starter.started == [first["run_id"]]
    state = wiring.state_store()
    assert call("get_run", {"run_id": first["run_id"]})[2]["status"] == "RUNNING"
    state.release_run_lease(first["run_id"], starter.owner)
    assert state.acquire_run_lease(first["run_id"], owner_of(dead_pid()), 300)
    assert call("get_run", {"run_id": first["run_id"]})[2]["status"] == "STALE"
    assert "resume_run" in call("get_run", {"run_id": first["run_id"]})[2]["next"]
    # When the same extract request is sent again
    error, _, again = call("extract", request)
    # Then the same run is resumed (not answered RUNNING with nothing driving it), and nothing new starts
    assert not error and (again["run_id"], again["status"], again.get("resumed")) == (first["run_id"], "RUNNING", True)
    assert starter.resumed == [first["run_id"]] and starter.started == [first["run_id"]]
    # And resume_run resumes it too
    error, _, resumed = call("resume_run", {"run_id": first["run_id"]})
    assert not error and resumed["status"] == "RUNNING" and starter.resumed == [first["run_id"]] * 2


def test_resume_run_of_a_live_run_says_why_not(home: Path) -> None:
    # Given the serve/mcp worker starter (real) and a run whose lease this live process holds
    from longdoc.cli.serve import local_starters

    _stored_run(owner_pid=os.getpid())
    starter, machines = local_starters(home)
    with wiring.overrides(starters={"extract": starter, **machines}):
        error, text, _ = call("resume_run", {"run_id": "run-00000000000a"})
        unknown = call("resume_run", {"run_id": "run-0000000000ff"})
    # Then nothing is started and the error says it is live; an unknown run is unknown
    assert error and "is RUNNING; only FAILED or STALE runs resume" in text and starter.workers == []
    assert unknown[0] and unknown[1] == "run run-0000000000ff does not exist"


def test_a_summary_whose_worker_died_is_stale_and_summarize_restarts_it(home: Path, starter) -> None:
    # Given a summary started (PENDING, its execution recorded) whose worker's pid is gone
    error, _, first = call("summarize", {"doc_id": "lease", "length": "short"})
    assert not error and first["status"] == "PENDING" and starter.started == [f"{first['summary_id']}-1"]
    pid_file(home, "summarize", starter.started[0]).parent.mkdir(parents=True, exist_ok=True)
    pid_file(home, "summarize", starter.started[0]).write_text(str(dead_pid()))
    # Then get_summary says it is stale and what to do
    view = call("get_summary", {"summary_id": first["summary_id"]})[2]
    assert view["status"] == "STALE" and not view["done"] and "summarize with the same arguments" in view["next"]
    # When summarize is sent again, a new attempt starts (not the dead id answered as it is)
    error, _, again = call("summarize", {"doc_id": "lease", "length": "short"})
    assert not error and again.get("resumed") and starter.started == [f"{first['summary_id']}-1",
                                                                      f"{first['summary_id']}-2"]
    # And while that attempt's worker lives (its command line names the execution), it is left alone
    name = starter.started[-1]
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", name])
    try:
        pid_file(home, "summarize", name).write_text(str(live.pid))
        assert call("get_summary", {"summary_id": first["summary_id"]})[2]["status"] == "PENDING"
        assert not call("summarize", {"doc_id": "lease", "length": "short"})[2].get("resumed")
        assert len(starter.started) == 2
    finally:
        live.kill()
        live.wait()


def test_summarize_and_triage_arguments_are_described() -> None:
    import asyncio

    from mcp import Client

    from longdoc.mcpserver.server import build_server

    async def listed() -> dict[str, Any]:
        async with Client(build_server()) as client:
            return {t.name: t.input_schema for t in (await client.list_tools()).tools}

    schemas = asyncio.run(listed())
    for tool in ("summarize", "triage"):
        props = schemas[tool]["properties"]
        assert all(p.get("description") for p in props.values()), (tool, props)
    assert "short" in schemas["summarize"]["properties"]["length"]["description"]
    assert "resume_run" in schemas and schemas["get_summary"]["properties"]["summary_id"]["pattern"]
