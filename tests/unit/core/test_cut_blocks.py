"""One rule for a reply cut by ``max_tokens`` or the context window: its last block is never read
(:func:`longdoc.core.messages.cut_block`), in the shared re-ask, triage and the query writer
(https://platform.claude.com/docs/en/build-with-claude/handling-stop-reasons)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from longdoc.core.errors import ModelAnswerMissing
from longdoc.core.messages import (ModelResponse, TextBlock, ThinkingBlock, ToolUseBlock, Usage, complete_blocks,
                                   cut_block)
from longdoc.core.tool_answer import ask_for_tool
from longdoc.triage.answer import run_model
from longdoc.triage.query_writer import TOOL_NAME, cache_key, queries_with_writer
from tests.unit.core.test_tool_answer import Replies, _request
from tests.unit.triage.test_query_writer import GOOD, StubModel, home  # noqa: F401 - the module's fixture

THINK = ThinkingBlock(thinking="", signature="sig-1")
CALL = ToolUseBlock(id="u1", name="t", input={"answer": "whole-looking"})


def _reply(content: list[Any], stop: str) -> ModelResponse:
    return ModelResponse(id="m", model="x", content=content, stop_reason=stop, usage=Usage())


@pytest.mark.parametrize("stop", ["max_tokens", "model_context_window_exceeded"])
def test_the_last_block_of_a_cut_reply_is_cut_whatever_it_holds(stop: str) -> None:
    first = ToolUseBlock(id="u0", name="t", input={})
    reply = _reply([THINK, first, CALL], stop)
    assert cut_block(reply) is CALL and complete_blocks(reply) == [THINK, first]
    # and nothing is cut on any other stop reason
    for other in ("end_turn", "tool_use", "pause_turn", "stop_sequence", "refusal"):
        assert cut_block(_reply([THINK, CALL], other)) is None and complete_blocks(_reply([CALL], other)) == [CALL]
    assert cut_block(_reply([], stop)) is None


def test_a_whole_looking_call_cut_by_the_context_window_is_never_the_answer() -> None:
    # Given a reply that filled the context window inside a call whose input validates
    model = Replies(([THINK, CALL], "model_context_window_exceeded"))
    # When an answer is asked for, Then the cut call is not it, and no longer request is sent
    with pytest.raises(ModelAnswerMissing, match="filled the model's context window"):
        ask_for_tool(model, _request(), "t", "summary map 1")
    assert len(model.requests) == 1


def test_a_complete_call_before_a_cut_block_is_the_answer_and_the_cut_is_counted() -> None:
    answer = ask_for_tool(Replies(([CALL, TextBlock(text="and then")], "max_tokens")), _request(), "t", "x")
    assert answer.response.content[0] is CALL and answer.cut_blocks == 1 and len(answer.responses) == 1


def test_triage_never_reads_a_record_triage_call_cut_by_the_context_window(tmp_path: Path) -> None:
    # Given a record_triage call that reads complete but ends a reply that filled the context window
    call = ToolUseBlock(id="tr", name="record_triage", input={"decision": "refer", "reasons": ["unclear"],
                                                               "citations": []})
    model = Replies(([call], "model_context_window_exceeded"))
    request = _request().model_copy(update={"tools": [{"name": "record_triage", "input_schema": {"type": "object"}}]})
    # When triage asks for its answer, Then it is not read (old rule: only max_tokens cut a call)
    with pytest.raises(ModelAnswerMissing):
        run_model(model, request, [])


def test_triage_counts_a_cut_call_and_keeps_it_out_of_the_correction_turn() -> None:
    # Given a reply cut by max_tokens after a complete record_triage call the harness rejects, then a fix
    bad = ToolUseBlock(id="tr1", name="record_triage", input={"decision": "covered", "reasons": ["x"],
                                                               "citations": []})
    cut = ToolUseBlock(id="tr2", name="record_triage", input={"decision": "refer", "reasons": ["y"], "citations": []})
    fixed = ToolUseBlock(id="tr3", name="record_triage", input={"decision": "refer", "reasons": ["unclear"],
                                                                 "citations": []})
    model = Replies(([bad, cut], "max_tokens"), ([fixed], "tool_use"))
    request = _request().model_copy(update={"tools": [{"name": "record_triage", "input_schema": {"type": "object"}}]})
    answer = run_model(model, request, [])
    # Then the correction turn answers the complete call only; the cut one is neither replayed nor answered
    sent = model.requests[1].messages
    assert [b["id"] for b in sent[-2].content if b["type"] == "tool_use"] == ["tr1"]
    assert [b["tool_use_id"] for b in sent[-1].content] == ["tr1"]
    assert (answer.decision, answer.corrections, answer.cut_blocks) == ("refer", 1, 1)
    assert answer.to_json()["cut_blocks"] == 1


def _called(content: list[Any], stop: str) -> ModelResponse:
    return ModelResponse(id="msg_1", model="claude-sonnet-5-5", content=content, stop_reason=stop,
                         usage=Usage(input_tokens=10, output_tokens=5))


def test_the_query_writer_reads_a_complete_call_before_a_cut_block_and_never_the_cut_one(
        home, tmp_path: Path, caplog) -> None:  # noqa: F811 - the imported fixture
    _, _, claim, clauses = home
    blobs = type(home[0])(tmp_path / "bucket")
    call = ToolUseBlock(id="tu_1", name=TOOL_NAME, input=GOOD)
    # Given a write_queries call cut by the context window (it reads complete): never read, warned
    with caplog.at_level(logging.WARNING, logger="longdoc.triage.query_writer"):
        queries = queries_with_writer(StubModel(_called([call], "model_context_window_exceeded")), blobs, claim,
                                      clauses)
    assert all(not q.name.startswith("model ") for q in queries)
    assert any("is cut and not read" in r.getMessage() for r in caplog.records)
    assert not blobs.exists(cache_key("claude-sonnet-5-5", claim, clauses))
    # And a complete call before a cut text block is read (a max_tokens stop no longer refuses it whole)
    queries = queries_with_writer(StubModel(_called([call, TextBlock(text="Also")], "max_tokens")), blobs, claim,
                                  clauses)
    assert queries[-1].name == "model exclusion"
