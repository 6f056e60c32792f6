"""Asking for a tool answer with one bounded re-ask (:mod:`longdoc.core.tool_answer`), and the job and
tool choice each summary and triage request names."""

from __future__ import annotations


import pytest

from longdoc.core.errors import ModelAnswerMissing
from longdoc.core.messages import Message, ModelRequest, ModelResponse, TextBlock, ThinkingBlock, ToolUseBlock, Usage
from longdoc.core.tool_answer import ask_for_tool
from longdoc.summarize.prompt import final_request, map_request, reduce_request
from longdoc.summarize.units import Piece
from longdoc.triage.service import TriageDeps, TriageRequest, run_triage
from tests.unit.triage_set import load_policy_set

THINK = ThinkingBlock(thinking="", signature="sig-1")


class Replies:
    """A model port answering with scripted responses, recording every request."""

    name = "scripted"

    def __init__(self, *content: tuple[list, str]):
        self.replies = list(content)
        self.requests: list[ModelRequest] = []

    def create(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        blocks, stop = self.replies.pop(0)
        return ModelResponse(id="m", model="scripted", content=blocks, stop_reason=stop, usage=Usage(output_tokens=7))


def _request() -> ModelRequest:
    return ModelRequest(system=[], tools=[{"name": "t", "input_schema": {"type": "object"}}], max_tokens=300,
                        messages=[Message(role="user", content="task")])


def test_a_max_tokens_stop_of_thinking_only_is_re_asked_with_twice_the_room() -> None:
    # Given a reply that spent its cap thinking, then one with the call
    model = Replies(([THINK], "max_tokens"), ([ToolUseBlock(id="u1", name="t", input={})], "tool_use"))
    # When the tool answer is asked for
    answer = ask_for_tool(model, _request(), "t", "test")
    # Then the re-ask is the original conversation (the cut turn is not sent back) with twice the cap
    assert [r.max_tokens for r in model.requests] == [300, 600]
    assert model.requests[1].messages == model.requests[0].messages
    assert answer.reasked and answer.usage.output_tokens == 14 and answer.request is model.requests[1]


def test_a_text_answer_with_a_stray_call_is_re_asked_with_every_call_answered_first() -> None:
    # Given a reply holding thinking, text and a call of another tool, then two replies without the tool
    model = Replies(([THINK, TextBlock(text="x"), ToolUseBlock(id="u9", name="other", input={})], "end_turn"),
                    ([TextBlock(text="still no")], "end_turn"))
    # When the tool answer is asked for, Then the second miss is ModelAnswerMissing naming the stops
    with pytest.raises(ModelAnswerMissing, match="stop_reason end_turn.*re-ask"):
        ask_for_tool(model, _request(), "t", "test")
    # And the re-ask answered the stray call first (tool_result), after the turn as received
    reask = model.requests[1].messages
    assert reask[1].content == [THINK.model_dump(), {"type": "text", "text": "x"},
                                {"type": "tool_use", "id": "u9", "name": "other", "input": {}}]
    assert reask[2].content[0]["tool_use_id"] == "u9" and "unknown tool 'other'" in reask[2].content[0]["content"]


def test_a_refusal_is_not_re_asked() -> None:
    model = Replies(([TextBlock(text="no")], "refusal"))
    answer = ask_for_tool(model, _request(), "t", "test")
    assert not answer.reasked and len(model.requests) == 1


def test_each_summary_request_names_its_job_and_forces_no_tool() -> None:
    # Given the reduce and final requests, Then each names its job and none forces the tool
    piece = Piece("1", "c1", 0, "The insurer pays $10.", 1, 1, None, ("Cover",))
    mapped, whole = map_request([piece], "p.pdf", "short", None), map_request([piece], "p.pdf", "short", None, final=True)
    reduce, final = reduce_request([[]], "short", None), final_request([[]], "short", None)
    assert [r.job for r in (mapped, reduce, final, whole)] == [
        "summarize_map", "summarize_reduce", "summarize_final", "summarize_final"]
    assert all(r.tool_choice == {"type": "auto"} for r in (mapped, reduce, final, whole))


def test_the_triage_request_names_its_job_and_forces_no_tool(tmp_path) -> None:
    # Given the dev policy set and a model that answers refer through the tool
    blobs, state = load_policy_set(tmp_path)
    model = Replies(([ToolUseBlock(id="u1", name="record_triage",
                                   input={"decision": "refer", "reasons": ["r"], "citations": []})], "tool_use"))
    claim = {"claim_id": "h1", "loss_date": "2024-06-28", "line_of_business": "home",
             "policy_number": "HO-2024-20777", "adjuster_note": "Dishwasher leak."}
    # When a claim is triaged
    run_triage(TriageRequest(collection="dev-policy-set", claim=claim), TriageDeps(state, blobs, model=model))
    # Then the request named the triage job with tool_choice auto
    assert (model.requests[0].job, model.requests[0].tool_choice) == ("triage", {"type": "auto"})


def _schema_request() -> ModelRequest:
    schema = {"type": "object", "required": ["decision"], "properties": {"decision": {"type": "string"}}}
    return ModelRequest(system=[], tools=[{"name": "t", "input_schema": schema}], max_tokens=160,
                        messages=[Message(role="user", content="task")])


def test_a_call_cut_by_max_tokens_is_not_the_answer_and_the_cap_keeps_growing() -> None:
    # Given thinking only at 160 tokens, a call cut at 320 (its input misses a required field),
    # then the complete call at 640
    model = Replies(([THINK], "max_tokens"),
                    ([THINK, ToolUseBlock(id="u1", name="t", input={})], "max_tokens"),
                    ([THINK, ToolUseBlock(id="u2", name="t", input={"decision": "pay"})], "tool_use"))
    # When the tool answer is asked for
    answer = ask_for_tool(model, _schema_request(), "t", "triage")
    # Then the cut call was never taken as the answer: the same conversation went out again with
    # twice the cap each time, and the complete call is the answer
    assert [r.max_tokens for r in model.requests] == [160, 320, 640]
    assert all(r.messages == model.requests[0].messages for r in model.requests)
    assert answer.response.content[1].input == {"decision": "pay"} and len(answer.responses) == 3


def test_the_cap_grows_a_bounded_number_of_times_then_fails_by_name() -> None:
    # Given a model that spends every cap on thinking
    model = Replies(*[([THINK], "max_tokens") for _ in range(4)])
    # When the tool answer is asked for, Then after three doublings it fails by name, never empty
    with pytest.raises(ModelAnswerMissing, match="4 replies.*grown 3 time"):
        ask_for_tool(model, _schema_request(), "t", "triage")
    assert [r.max_tokens for r in model.requests] == [160, 320, 640, 1280]
