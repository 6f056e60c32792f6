"""Thinking blocks and max_tokens outcomes in the extraction loop: the real ``anthropic`` SDK against the
loopback fake, asserting on the request bodies the fake received.

Adaptive thinking is on by default on the current models; their replies open with thinking blocks
(empty ``thinking`` under the default ``display: "omitted"``, a ``signature``), which must go back
unchanged, first in the assistant turn, in the tool loop and on ``pause_turn``
(https://platform.claude.com/docs/en/build-with-claude/thinking). ``max_tokens`` caps thinking and
answer together, so a turn can end on it holding only thinking.
"""

from __future__ import annotations

from typing import Any

import pytest

from longdoc import wiring
from longdoc.core.conversation import conversation_problems
from longdoc.extract.session import run_session
from tests.fakes.anthropic_server import Reply, message_reply, text_block, usage_json

from tests.fakes.anthropic_server import FakeAnthropic
from tests.functional.test_claude_loop import NO_EVIDENCE_RULE, Scripted, new_run

# The `fake` and `claude` fixtures (the loopback fake, and wiring.model() as Claude on it: strict tools,
# no evidence rule) are tests/functional/conftest.py's, as for test_claude_loop.

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

THINK = {"type": "thinking", "thinking": "", "signature": "sig-1"}
THINK_2 = {"type": "thinking", "thinking": "", "signature": "sig-2"}
REDACTED = {"type": "redacted_thinking", "data": "opaque-bytes-1"}


def _messages(fake: FakeAnthropic, i: int) -> list[dict[str, Any]]:
    return fake.requests[i].body["messages"]


def test_thinking_blocks_go_back_unchanged_and_first_in_the_tool_loop(claude, fake, ingested_contract) -> None:
    # Given a reply that thinks, calls a tool, thinks again (redacted) and calls another, then a done turn
    replies: list[list[dict[str, Any]]] = []

    def plan(session: int, call: int, blocks: list[dict[str, Any]]) -> Reply:
        if call == 0:
            replies.append([THINK, blocks[0], REDACTED, blocks[1]])
            return message_reply(replies[0], "tool_use")
        return message_reply([THINK_2, text_block("done")], "end_turn")

    fake.responder = Scripted(plan)
    run = new_run(ingested_contract, ["Governing Law", "Insurance", "Audit Rights"])
    # When one session runs
    run_session(wiring.deps(), run.run_id, NO_EVIDENCE_RULE)
    # Then the second request's assistant turn is the reply's blocks exactly as received, in order,
    # the thinking block first and byte-identical (signature included)
    assert len(fake.requests) == 2
    sent = _messages(fake, 1)
    assert sent[1]["role"] == "assistant" and sent[1]["content"] == replies[0]
    assert sent[1]["content"][0] == THINK and sent[1]["content"][2] == REDACTED
    # And both calls are answered first in the next user turn; the conversation keeps every rule
    assert [r["tool_use_id"] for r in sent[2]["content"]] == [replies[0][1]["id"], replies[0][3]["id"]]
    assert conversation_problems(sent) == []
    # And a fresh session starts without them: the first request of a session is one user message
    assert len(_messages(fake, 0)) == 1


def test_a_paused_turn_with_thinking_is_sent_back_as_is(claude, fake, ingested_contract) -> None:
    # Given a reply that pauses after thinking, then calls a tool, then ends
    def plan(session: int, call: int, blocks: list[dict[str, Any]]) -> Reply:
        if call == 0:
            return message_reply([THINK, text_block("Working.")], "pause_turn")
        if call == 1:
            return message_reply([THINK_2, blocks[0]], "tool_use")
        return message_reply([text_block("done")], "end_turn")

    fake.responder = Scripted(plan)
    run = new_run(ingested_contract, ["Governing Law", "Insurance"])
    # When one session runs
    run_session(wiring.deps(), run.run_id, NO_EVIDENCE_RULE)
    # Then the paused turn went back as is, thinking first, as the last message
    assert len(fake.requests) == 3
    paused = _messages(fake, 1)
    assert [m["role"] for m in paused] == ["user", "assistant"]
    assert paused[1]["content"] == [THINK, {"type": "text", "text": "Working."}]
    # And the reply that went on joined that turn (roles alternate), its thinking kept in order
    after = _messages(fake, 2)
    assert [m["role"] for m in after] == ["user", "assistant", "user"]
    assert [b["type"] for b in after[1]["content"]] == ["thinking", "text", "thinking", "tool_use"]
    assert after[1]["content"][2] == THINK_2 and conversation_problems(after) == []


def test_a_max_tokens_stop_holding_only_thinking_escalates_and_is_never_no_progress(
        claude, fake, ingested_contract) -> None:
    # Given a model whose every turn spends the whole output cap thinking
    fake.responder = lambda body: message_reply([THINK], "max_tokens", usage_json(900, body["max_tokens"]))
    run = new_run(ingested_contract, ["Governing Law"])
    # When three sessions run (the no-progress limit)
    outcomes = [run_session(wiring.deps(), run.run_id, NO_EVIDENCE_RULE) for _ in range(3)]
    # Then each doubled the output cap, counted as progress (no NoProgress), the stop reason recorded as sent
    assert [o.max_tokens for o in outcomes] == [2048, 4096, 8192]
    assert [o.stop_reason for o in outcomes] == ["max_tokens"] * 3 and all(o.status == "CONTINUE" for o in outcomes)
    assert [r.body["max_tokens"] for r in fake.requests] == [1024, 2048, 4096]
    checkpoint = wiring.state_store().load_checkpoint(run.run_id)
    assert checkpoint.stalled_sessions == 0 and [c.stop_reason for c in checkpoint.calls] == ["max_tokens"] * 3


def test_a_call_that_ends_a_max_tokens_reply_is_cut_however_complete_it_reads_and_the_session_ends(
        claude, fake, ingested_contract) -> None:
    # Given a reply that stops on max_tokens right after a tool call whose input reads complete
    sent: list[dict[str, Any]] = []

    def plan(session: int, call: int, blocks: list[dict[str, Any]]) -> Reply:
        if call == 0:
            sent.extend([THINK, blocks[0]])
            return message_reply(sent, "max_tokens")
        return message_reply([text_block("done")], "end_turn")

    fake.responder = Scripted(plan)
    run = new_run(ingested_contract, ["Governing Law", "Insurance"])
    # When one session runs
    outcome = run_session(wiring.deps(), run.run_id, NO_EVIDENCE_RULE)
    # Then the call was never run nor stored (only the stop reason can tell it was cut), nor answered:
    # the session ended on that reply, checkpointed, and the next one starts fresh
    assert wiring.state_store().list_extractions(run.run_id) == []
    assert len(fake.requests) == 1 and (outcome.status, outcome.checkpoint_version) == ("CONTINUE", 1)
    # And the output cap doubled for the cut call, which the checkpoint records, as the stop reason sent
    assert outcome.max_tokens == 2048 and outcome.cut_blocks == 1
    checkpoint = wiring.state_store().load_checkpoint(run.run_id)
    assert [(c.stop_reason, c.cut) for c in checkpoint.calls] == [("max_tokens", f"tool_use {sent[1]['name']}")]
