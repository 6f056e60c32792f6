"""``longdoc extract`` as a new user runs it against Claude: the real SDK, pointed through
``ANTHROPIC_BASE_URL`` at the loopback fake, in local mode (the real ASL on the local engine).

Issue 12, failure 6: the one-line error on stderr carried a stack trace, because the
execution's cause nests Lambda error payloads twice and only the outer level was unwrapped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from longdoc import wiring
from longdoc.cli import failure_line, main
from tests.fakes.anthropic_server import FakeAnthropic, Reply, error_reply, message_reply, text_block

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

DOC = """# Services Agreement

1. Term. This Agreement starts on January 1, 2024 and runs for two years.

2. Governing Law. This Agreement shall be governed by the laws of the State of Texas.
"""


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def claude_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: FakeAnthropic, capsys) -> str:
    """A local LONGDOC_HOME with one small document ingested; the CLI's model is Claude at the fake."""
    for name in [k for k in os.environ if k.startswith("LONGDOC_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("LONGDOC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LONGDOC_MODEL", "claude")
    monkeypatch.setenv("LONGDOC_CLAUDE_MODEL", "claude-sonnet-5-5")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-real")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    wiring.reset()
    path = tmp_path / "services.md"
    path.write_text(DOC, encoding="utf-8")
    assert main(["ingest", str(path), "--json"]) == 0
    doc_id = json.loads(capsys.readouterr().out.splitlines()[0])["doc_id"]
    yield doc_id
    wiring.reset()


def _refusal(body: dict) -> Reply:
    return message_reply([text_block("I can't help with that.")], "refusal")


def _bad_request(body: dict) -> Reply:
    return error_reply(400, "tools.0.strict: not supported for this model")


def _silent(body: dict) -> Reply:
    return message_reply([text_block("I have nothing to add.")], "end_turn")


@pytest.mark.parametrize("responder, expected", [
    (_refusal, "ModelRefused: model refused in session 1 of run "),
    (_bad_request, "ModelRequestError: Claude API rejected the request (HTTP 400 invalid_request_error: "
                   "tools.0.strict: not supported for this model)"),
    (_silent, "NoProgress: run "),
], ids=["refusal", "http-400", "no-progress"])
def test_a_failed_run_is_one_clean_line_on_stderr(claude_home, fake, capsys, responder, expected) -> None:
    # Given the API refusing, rejecting the request, or never calling a tool
    fake.responder = responder
    # When the user extracts one clause type
    code = main(["extract", claude_home, "--clause-types", "Governing Law"])
    _, err = capsys.readouterr()
    # Then the exit status is 1 and stderr is one line naming the innermost error, no stack trace
    assert code == 1
    assert err.count("\n") == 1 and err.startswith("longdoc: run run-")
    assert f" failed: {expected}" in err, err
    for noise in ("stackTrace", "errorType", "File \"", "ExtractionFailed"):
        assert noise not in err
    # And it ends with the next step: the command that resumes the run
    run_id = err.split()[2]
    assert err.rstrip().endswith(f"; next: longdoc runs resume {run_id}")


def test_the_json_result_of_a_failed_run_has_a_one_line_cause_and_the_next_step(claude_home, fake, capsys) -> None:
    # Given the API rejecting every request
    fake.responder = _bad_request
    # When the user extracts with --json
    code = main(["extract", claude_home, "--clause-types", "Governing Law", "--json"])
    out, err = capsys.readouterr()
    result = json.loads(out)
    execution = result["execution"]
    # Then the execution's cause is the innermost error on one line: no nested payload, stack trace or file path
    assert code == 1 and result["status"] == "FAILED"
    assert execution["cause"].startswith("ModelRequestError: Claude API rejected the request (HTTP 400")
    for noise in ("stackTrace", "errorType", "Traceback", "File \"", "/", "\n"):
        assert noise not in execution["cause"], noise
    assert execution["next"] == f"longdoc runs resume {result['run_id']}"
    # And the run record keeps the error (the full cause stays in history.json)
    assert result["error"] and "ModelRequestError" in (result["cause"] or "")
    assert "stackTrace" in Path(execution["history"]).read_text(encoding="utf-8")
    assert err.count("\n") == 1 and err.rstrip().endswith(f"next: longdoc runs resume {result['run_id']}")


def test_failure_line_unwraps_any_depth_and_cut_off_payloads() -> None:
    # Given a throttling error wrapped three times (the failure state re-raises what it caught)
    inner = json.dumps({"errorMessage": "Claude API throttled (HTTP 529 overloaded_error: Overloaded)",
                        "errorType": "ModelThrottled", "stackTrace": ['  File "claude.py", line 1']})
    cause = inner
    for _ in range(3):
        cause = json.dumps({"errorMessage": "ModelThrottled: " + cause, "errorType": "ExtractionFailed",
                            "stackTrace": ['  File "app.py", line 2']})
    expected = "ModelThrottled: Claude API throttled (HTTP 529 overloaded_error: Overloaded)"
    # Then the line is the innermost error, whole or behind a "Name: " prefix
    assert failure_line("ExtractionFailed", cause) == expected
    assert failure_line("ExtractionFailed", "ExtractionFailed: " + cause) == expected
    # And a cause cut short keeps what it has, still without a stack trace
    cut = failure_line("ExtractionFailed", cause[: cause.index("Overloaded)")])
    assert cut.startswith("ModelThrottled: Claude API throttled") and "stackTrace" not in cut
    assert failure_line("States.Timeout", "") == "States.Timeout"
