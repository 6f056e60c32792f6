"""The conversation rules every model enforces (:mod:`longdoc.core.conversation`) and the tool-input
schema check (:mod:`longdoc.core.schema`)."""

from __future__ import annotations

import pytest

from longdoc.core.conversation import append_turn, check_conversation, conversation_problems, join_turns
from longdoc.core.errors import ConversationMalformed
from longdoc.core.messages import Message
from longdoc.core.schema import schema_problems
from longdoc.extract.tools import TOOLS

THINK = {"type": "thinking", "thinking": "", "signature": "sig-1"}


def _use(i: str) -> dict:
    return {"type": "tool_use", "id": i, "name": "record_triage", "input": {}}


def _result(i: str) -> dict:
    return {"type": "tool_result", "tool_use_id": i, "content": "ok"}


def test_a_tool_loop_with_thinking_answered_in_full_has_no_problem() -> None:
    # Given a user turn, an assistant turn with thinking and two calls, and both results first
    messages = [{"role": "user", "content": "chunks"},
                {"role": "assistant", "content": [THINK, _use("a"), _use("b")]},
                {"role": "user", "content": [_result("a"), _result("b"), {"type": "text", "text": "go on"}]}]
    # Then the conversation may be sent
    assert conversation_problems(messages) == []
    assert conversation_problems([Message.model_validate(m) for m in messages]) == []


@pytest.mark.parametrize(("messages", "words"), [
    ([], "at least one message"),
    ([{"role": "assistant", "content": "hi"}, {"role": "user", "content": "x"}], "first message must be a user turn"),
    ([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], "two user turns in a row"),
    ([{"role": "user", "content": "a"}, {"role": "assistant", "content": [_use("a"), _use("b")]},
      {"role": "user", "content": [_result("a")]}], "without a tool_result at the start of this message: b"),
    ([{"role": "user", "content": "a"}, {"role": "assistant", "content": [_use("a")]},
      {"role": "user", "content": [{"type": "text", "text": "fix it"}, _result("a")]}],
     "tool_result blocks must come first"),
    ([{"role": "user", "content": "a"}, {"role": "assistant", "content": [THINK]},
      {"role": "user", "content": [_result("zz")]}], "tool_result without a tool_use in the previous assistant turn: zz"),
    ([{"role": "user", "content": "a"}, {"role": "assistant", "content": "prefill"}], "the last message must be a user"),
    ([{"role": "user", "content": []}], "empty content"),
], ids=["empty", "assistant-first", "not-alternating", "unanswered-call", "text-before-result", "orphan-result",
        "prefill", "empty-content"])
def test_each_broken_rule_is_named_with_its_message_index(messages: list[dict], words: str) -> None:
    # Given a conversation breaking one rule, Then that rule is named
    problems = conversation_problems(messages)
    assert any(words in p for p in problems), problems
    # And the guard raises the harness-bug error naming where it was about to be sent
    with pytest.raises(ConversationMalformed, match=f"triage correction: .*{words.split(':')[0]}"):
        check_conversation(messages, "triage correction")


def test_a_paused_turn_may_end_the_conversation_but_never_with_a_call() -> None:
    # Given a conversation ending with an assistant turn that stopped on pause_turn
    paused = [{"role": "user", "content": "a"}, {"role": "assistant", "content": [THINK, {"type": "text", "text": "…"}]}]
    # Then it may be sent back as is only as a pause continuation, and never with a call left unanswered
    assert conversation_problems(paused, paused=True) == []
    assert conversation_problems(paused) != []
    with_call = [paused[0], {"role": "assistant", "content": [THINK, _use("a")]}]
    assert conversation_problems(with_call, paused=True) != []


def test_the_reply_after_a_pause_joins_the_paused_turn_so_roles_still_alternate() -> None:
    # Given a conversation whose last turn is the paused assistant turn
    messages = [Message(role="user", content="a"), Message(role="assistant", content=[THINK])]
    # When the next reply's turn and its results are appended
    append_turn(messages, Message(role="assistant", content=[{"type": "thinking", "thinking": "", "signature": "s2"},
                                                              _use("a")]))
    append_turn(messages, Message(role="user", content=[_result("a")]))
    # Then the two assistant turns are one, blocks in order, and the conversation is valid
    assert [m.role for m in messages] == ["user", "assistant", "user"]
    assert [b.get("signature", b["type"]) for b in messages[1].content] == ["sig-1", "s2", "tool_use"]
    assert conversation_problems(messages) == []
    # And the JSON form (bulk turns) joins the same way
    joined = join_turns([{"role": "user", "content": "a"}, {"role": "assistant", "content": [THINK]}],
                        [{"role": "assistant", "content": [_use("a")]}, {"role": "user", "content": [_result("a")]}])
    assert [m["role"] for m in joined] == ["user", "assistant", "user"] and joined[1]["content"] == [THINK, _use("a")]


def test_a_complete_tool_input_validates_and_a_cut_one_does_not() -> None:
    # Given the extract_clause schema
    schema = TOOLS["extract_clause"].definition()["input_schema"]
    complete = {"clause_type": "Governing Law", "clause_text": "Delaware law.",
                "citations": [{"chunk_id": "c1", "page": 3, "quote": "Delaware"}]}
    # Then a complete input validates, and inputs cut short or mistyped name what is wrong
    assert schema_problems(complete, schema) == []
    assert schema_problems({"clause_type": "Governing Law"}, schema) == [
        "input: missing required field 'clause_text'", "input: missing required field 'citations'"]
    assert schema_problems({**complete, "citations": [{"chunk_id": "c1", "page": "3", "quote": "x"}]}, schema) == [
        "input.citations[0].page: expected integer or null, got str"]
    assert schema_problems({**complete, "citations": []}, schema) == ["input.citations: fewer than 1 items"]
    assert schema_problems({**complete, "more_instances": 1}, schema) == [
        "input.more_instances: expected boolean, got int"]
    assert schema_problems({**complete, "extra": 1}, schema) == ["input: unexpected field 'extra'"]
    assert schema_problems(True, {"type": "integer"}) == ["input: expected integer, got bool"]
