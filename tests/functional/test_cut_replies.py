"""A reply cut by ``max_tokens`` or the context window: its last block is never trusted, and every
``max_tokens`` stop ends the session (checkpoint, ``CONTINUE``, a fresh session).

The real ``anthropic`` SDK against the loopback Messages fake (:class:`tests.fakes.anthropic_server.FakeAnthropic`)
and the Batches fake; the cut block in each test is a call whose input reads complete and validates
against its tool's schema, so only the stop reason can tell it was cut
(https://platform.claude.com/docs/en/build-with-claude/handling-stop-reasons).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from longdoc import wiring
from longdoc.adapters.baseline import OfflineBaselineModel
from longdoc.adapters.batches import AnthropicBatches
from longdoc.adapters.bulk_store import SqliteBulkStore
from longdoc.bulk.driver import run_rounds
from longdoc.bulk.plan import BulkLimits, custom_id
from longdoc.bulk.requests import model_request
from longdoc.bulk.steps import BulkDeps, create_bulk
from longdoc.extract.catalogue import load_catalogue
from longdoc.extract.prompt import EXTRACT_TOOL, prompt_text
from longdoc.extract.runs import run_result, start_run
from longdoc.extract.session import Deps, run_session
from tests.fakes.anthropic_server import FakeAnthropic, Reply, message_reply, usage_json
from tests.fakes.batches_server import FakeBatches
from tests.functional.test_claude_loop import NO_EVIDENCE_RULE, TWELVE, Scripted, new_run, run_machine

# the fixtures `fake` (the loopback Messages API) and `claude` (wiring.model() as Claude on it, strict
# tools, no evidence rule) come from tests/functional/conftest.py

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

THINK = {"type": "thinking", "thinking": "", "signature": "sig-1"}
FOUR = ["Governing Law", "Insurance", "Audit Rights", "Anti-Assignment"]


def _extract_calls(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for b in blocks if b["name"] == EXTRACT_TOOL]


@pytest.mark.parametrize("stop", ["max_tokens", "model_context_window_exceeded"])
def test_a_schema_valid_call_that_ends_a_cut_reply_is_never_stored_and_the_session_ends(
        claude, fake: FakeAnthropic, ingested_contract, stop: str) -> None:
    # Given a reply that stops on `stop` after two extract_clause calls whose inputs both read complete
    sent: list[dict[str, Any]] = []

    def plan(session: int, call: int, blocks: list[dict[str, Any]]) -> Reply:
        found = _extract_calls(blocks)
        assert len(found) >= 2, "the scripted contract must give two found clause types"
        sent.extend([THINK, found[0], found[1]])
        return message_reply(sent, stop)

    fake.responder = Scripted(plan)
    run = new_run(ingested_contract, TWELVE)
    # When one session runs
    outcome = run_session(wiring.deps(), run.run_id, NO_EVIDENCE_RULE)
    # Then the complete call before the last is stored; the last one, schema-valid, is not
    stored = wiring.state_store().list_extractions(run.run_id)
    assert [e.clause_type for e in stored] == [sent[1]["input"]["clause_type"]]
    assert sent[2]["input"]["clause_type"] not in {e.clause_type for e in stored}
    # And nothing was answered: the session ended on that reply (one request), checkpointed, CONTINUE
    assert len(fake.requests) == 1
    assert (outcome.status, outcome.stop_reason, outcome.checkpoint_version) == ("CONTINUE", stop, 1)
    # And the cut is counted on the outcome, the checkpoint, the call's record and the run's result
    checkpoint = wiring.state_store().load_checkpoint(run.run_id)
    assert outcome.cut_blocks == 1 and checkpoint.cut_blocks == 1
    assert [c.cut for c in checkpoint.calls] == ["tool_use extract_clause"]
    assert run_result(wiring.state_store(), run.run_id)["cut_blocks"] == 1
    # And only max_tokens raises the output cap for the next session (a full context window does not)
    assert outcome.max_tokens == (2048 if stop == "max_tokens" else 1024)


def _stable_facts(body: dict[str, Any]) -> bytes:
    """The pinned CASE_FACTS block of a session's first request, as the bytes sent."""
    text = prompt_text(body["messages"][0]["content"])
    match = re.match(r"<CASE_FACTS-([0-9a-f]{12})>\n.*?\n</CASE_FACTS-\1>", text, re.S)
    assert match, text[:200]
    return match.group(0).encode("utf-8")


def _extract_outputs(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [json.loads(e["stateExitedEventDetails"]["output"]) for e in history
            if e["type"] == "TaskStateExited" and e["stateExitedEventDetails"]["name"] == "Extract"]


def test_three_max_tokens_stops_are_three_checkpoints_four_fresh_sessions_and_four_iterations(
        claude, fake: FakeAnthropic, ingested_contract) -> None:
    # Given four clause types and a model whose first three sessions each answer one call completely
    # and stop on max_tokens inside the next (a call that reads complete), then answer the last in the fourth
    def plan(session: int, call: int, blocks: list[dict[str, Any]]) -> Reply:
        if session <= 3:
            return message_reply(blocks[:2], "max_tokens", usage_json(900, 400))
        return message_reply(blocks, "tool_use")

    fake.responder = Scripted(plan)
    run = new_run(ingested_contract, FOUR)
    # When the real state machine runs the extraction (local engine, the real ASL file)
    result = run_machine(run)
    # Then it succeeds after four sessions: three max_tokens stops, each one ending its session
    assert result.status == "SUCCEEDED", result.cause
    final = run_result(wiring.state_store(), run.run_id)
    assert (final["sessions"], final["checkpoints"], final["cut_blocks"]) == (4, 4, 3)
    # And the history shows one Extract iteration per session, each with its checkpoint
    outputs = _extract_outputs(result.history)
    assert [(o["sessions"], o["checkpoint_version"], o["iteration"]) for o in outputs] == [
        (1, 1, 1), (2, 2, 2), (3, 3, 3), (4, 4, 4)]
    assert [o["stop_reason"] for o in outputs] == ["max_tokens"] * 3 + ["tool_use"]
    assert [o["status"] for o in outputs] == ["CONTINUE"] * 3 + ["DONE"]
    assert [o["cut_blocks"] for o in outputs] == [1, 1, 1, 0]
    entered = [e["stateEnteredEventDetails"]["name"] for e in result.history if e["type"] == "TaskStateEntered"]
    assert entered.count("Extract") == 4
    # And each session began fresh (one user message) and made one request: nothing cut was answered
    firsts = [r.body for r in fake.requests if len(r.body["messages"]) == 1]
    assert len(firsts) == 4 and len(fake.requests) == 4
    # And the pinned CASE_FACTS block is byte-identical in every session's request, exact values included
    facts = {_stable_facts(body) for body in firsts}
    assert len(facts) == 1 and b'"claim_amount": "$247.83"' in next(iter(facts))
    # And each call cut in session k was stored only when sent complete in session k + 1
    by_type = {e.clause_type: e.session for e in wiring.state_store().list_extractions(run.run_id)}
    assert sorted(by_type) == sorted(FOUR) and sorted(by_type.values()) == [1, 2, 3, 4]
    # And the output cap doubled after each cut call (the escalation is unchanged)
    assert [b["max_tokens"] for b in firsts] == [1024, 2048, 4096, 8192]


# --------------------------------------------------------------------------- bulk: a batch round

def test_a_call_cut_in_a_batch_round_is_never_stored_and_the_next_round_starts_fresh(
        aws_stack, ingested_contract, tmp_path: Path) -> None:
    # Given a batch whose first answer stops on max_tokens after two extract_clause calls that read complete
    first: dict[str, Any] = {}

    def answer(params: dict[str, Any]) -> dict[str, Any]:
        response = OfflineBaselineModel(threshold=6.0, search=False).create(model_request({**params, "max_tokens": 64000}))
        body = {"type": "message", "role": "assistant", "stop_sequence": None,
                **response.model_dump(exclude={"stop_details"})}
        if not first:
            found = [b for b in body["content"] if b["type"] == "tool_use" and b["name"] == EXTRACT_TOOL]
            assert len(found) >= 2
            first.update(kept=found[0], cut=found[1])
            body.update(content=found[:2], stop_reason="max_tokens")
        return body

    with FakeBatches(answer) as server:
        extract = wiring.deps()
        extract = Deps(state=extract.state, blobs=extract.blobs, embedder=extract.embedder, index=extract.index,
                       model=OfflineBaselineModel(), catalogue=extract.catalogue)
        deps = BulkDeps(extract=extract, batches=AnthropicBatches("test-key-not-real", base_url=server.url,
                                                                  max_retries=0),
                        store=SqliteBulkStore(tmp_path / "bulk.sqlite"), limits=BulkLimits(poll_first=0),
                        options=NO_EVIDENCE_RULE)  # the scripted model never searches
        run = start_run(extract.state, load_catalogue(), doc_id=ingested_contract.doc_id, clause_types=TWELVE,
                        model_name="offline-extractive-baseline-v1", max_tokens=4096, top_k=4, run_id="run-bulk-cut")
        create_bulk(deps, "bulkcut", [(run.run_id, run.doc_id)], TWELVE)
        # When the bulk job runs its rounds
        out = run_rounds(deps, "bulkcut", sleep=lambda s: None)
        requests = {r["custom_id"]: r for b in server.batches.values() for r in b["requests"]}
    assert out["done"] == 1
    # Then after round 0 only the complete call was stored: the cut one waited for round 1
    stored = {e.clause_type: e for e in extract.state.list_extractions(run.run_id)}
    assert stored[first["kept"]["input"]["clause_type"]].session == 1
    assert stored[first["cut"]["input"]["clause_type"]].session == 2
    # And round 1 started a fresh session (one user message, the output cap doubled), nothing answered
    second = requests[custom_id(run.run_id, 1)]["params"]
    assert len(second["messages"]) == 1 and second["max_tokens"] == 8192
    # And the cut is counted on the run
    assert extract.state.load_checkpoint(run.run_id).cut_blocks == 1


# --------------------------------------------------------------------------- summaries

def _summary_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from tests.functional.summary_support import claude_home

    return claude_home(tmp_path, monkeypatch, claude_model="claude-sonnet-5-5", summary_map_concurrency="1")


def _summarize(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tamper: Any) -> tuple[
        dict[str, Any], list[dict[str, Any]]]:
    from longdoc.cli import main
    from tests.fakes.anthropic_server import enable_streaming
    from tests.fakes.strict_claude import StrictClaude
    from tests.functional.summary_support import ClaudeShaped

    with enable_streaming(StrictClaude(ClaudeShaped(tamper))) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        wiring.reset()
        code = main(["summarize", "policy", "--json"])
        out, err = capsys.readouterr()
        bodies = [r.body for r in fake.calls("POST", "/v1/messages")]
        assert fake.rejected == [] and code == 0, err
    return json.loads(out), bodies


WRONG = {"text": "The deductible is $999.99 per claim.", "sections": ["1"]}


def test_a_map_reply_cut_after_a_complete_call_keeps_it_and_never_replays_the_cut_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.functional.summary_support import add_policy

    # Given a first map reply that stops on max_tokens after a complete record_summary call (one of its
    # statements failing the checks) and inside a second one whose input reads complete
    seen = {"done": False}

    def tamper(kind: str, body: dict[str, Any], content: list[dict[str, Any]]) -> Any:
        if kind != "map" or seen["done"]:
            return content
        seen["done"] = True
        call = next(b for b in content if b["type"] == "tool_use")
        call["input"]["statements"].append(dict(WRONG))
        cut = {**call, "id": "toolu_cut_second", "input": {"statements": [{"text": "Cut but whole-looking.",
                                                                           "sections": ["1"]}]}}
        return message_reply([call, cut], "max_tokens", usage_json(100, body["max_tokens"]))

    home = _summary_home(tmp_path, monkeypatch)
    add_policy(home, sections=8)
    result, bodies = _summarize(monkeypatch, capsys, tamper)
    wiring.reset()
    # Then the complete call was read (its failing statement sent for correction), not asked again
    correction = next(b for b in bodies if len(b["messages"]) == 3)
    assistant, answer = correction["messages"][1], correction["messages"][2]
    # And the correction turn replays the complete call only: the cut one is neither sent back nor answered
    assert [b.get("id") for b in assistant["content"] if b["type"] == "tool_use"] != []
    assert "toolu_cut_second" not in json.dumps(correction)
    assert all(r["tool_use_id"] != "toolu_cut_second" for r in answer["content"] if r["type"] == "tool_result")
    # And its statement is nowhere in the summary; the cut is counted in the result
    assert all("Cut but whole-looking" not in s["text"] for s in result["statements"])
    assert result["cut_blocks"] >= 1


def test_a_final_cut_by_max_tokens_drops_its_last_line_and_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.functional.summary_support import add_policy

    # Given a final synthesis that stops on max_tokens; its last line reads as a complete, well-cited statement
    last: dict[str, str] = {}

    def tamper(kind: str, body: dict[str, Any], content: list[dict[str, Any]]) -> Any:
        if kind != "final":
            return content
        lines = [line for line in content[0]["text"].splitlines() if line.strip()]
        assert len(lines) >= 2
        last["line"] = lines[-1]
        return message_reply(content, "max_tokens", usage_json(100, body["max_tokens"]))

    home = _summary_home(tmp_path, monkeypatch)
    add_policy(home, sections=8)
    result, _ = _summarize(monkeypatch, capsys, tamper)
    wiring.reset()
    # Then that line is never checked nor stored: it is dropped with the stop reason, and counted
    cut_text = last["line"].lstrip("-*• ").rsplit(" [", 1)[0].strip()
    assert all(s["text"] != cut_text for s in result["statements"]) and result["statements"]
    dropped = [d for d in result["dropped"] if d["text"] == cut_text]
    assert dropped and dropped[0]["reason"].startswith("cut by max_tokens") and dropped[0]["stage"] == "final"
    assert result["cut_blocks"] == 1
