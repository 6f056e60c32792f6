"""Ask for an answer through one tool, with one bounded re-ask: the summary and triage calls share it.

Current models reject a forced ``tool_choice`` (``any`` / ``tool``: "Forced tool use returns an
error", https://platform.claude.com/docs/en/models/sonnet-5-5/whats-new-sonnet-5-5), so those
calls send ``tool_choice: auto`` and instructions that say to answer by calling the tool; the
model may still answer without it. :func:`ask_for_tool` then re-asks once and, when the second
answer has no call either, raises :class:`~longdoc.core.errors.ModelAnswerMissing`: never a
silent empty result.

The re-ask keeps the conversation rules (:mod:`longdoc.core.conversation`):

* after a reply with blocks (``end_turn``, ``stop_sequence``, ``pause_turn``): the assistant turn
  exactly as received (thinking, redacted_thinking and unknown blocks included, in order: they go
  back unchanged, https://platform.claude.com/docs/en/build-with-claude/thinking), then a user turn
  that first answers every ``tool_use`` of it with an ``is_error`` ``tool_result`` and then says to
  call the tool now;
* after a ``max_tokens`` stop (the cap went on thinking, or ended inside a call) or an empty
  reply: the original request again, with twice the output cap (up to :data:`MAX_REASK_TOKENS`),
  since a cut turn cannot be sent back (its last call was never complete). ``max_tokens`` caps
  thinking and the answer together (https://platform.claude.com/docs/en/build-with-claude/thinking),
  so such a stop is a budget outcome, not a missing answer: the cap grows up to
  :data:`MAX_GROWTHS` times, as the extraction loop escalates it, and a text answer is re-asked once.

A call of the tool counts only when it is complete. On a ``max_tokens`` or
``model_context_window_exceeded`` stop the limit ended the turn inside its last block
(:func:`longdoc.core.messages.cut_block`), so that block was cut (a string field may stop mid-word:
"...but the", and still validate; the API gives no sign that it closed) and is never taken as the
answer, nor sent back in a later turn, whatever its input looks like; an earlier call of that turn
closed before the next block began and counts when its input validates against the tool's
``input_schema`` in the request (every required field present and well typed,
:func:`longdoc.core.schema.schema_problems`). After ``max_tokens`` the re-ask gives more room;
after ``model_context_window_exceeded`` without a complete call there is nothing to re-ask (the
same request fills the window again, a longer one sooner): :class:`~longdoc.core.errors.ModelAnswerMissing`.
Every cut block is counted (:attr:`ToolAnswer.cut_blocks`) for the caller to report.

A refusal is not re-asked: the reply is returned for the caller to handle.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from longdoc.core.conversation import check_conversation
from longdoc.core.errors import ModelAnswerMissing
from longdoc.core.messages import (Message, ModelRequest, ModelResponse, ToolUseBlock, Usage, complete_blocks,
                                   cut_block)
from longdoc.core.ports import Model
from longdoc.core.schema import schema_problems

MAX_GROWTHS = 3
"""Most output-cap doublings after ``max_tokens`` stops in one ask (e.g. 160 -> 320 -> 640 -> 1,280)."""
MAX_REASK_TOKENS = 64_000
"""Highest output cap (tokens) a re-ask after a ``max_tokens`` stop asks for: the extraction
loop's escalation ceiling (:data:`longdoc.extract.session_types.MAX_TOKENS_CEILING`)."""


@dataclass
class ToolAnswer:
    """The outcome of :func:`ask_for_tool`: ``response`` (the last reply), ``request`` (the request
    that got it: the original, or the re-ask, to extend for a correction), every reply in order
    (``responses``, for usage and call counts) and whether a re-ask was sent."""

    request: ModelRequest
    response: ModelResponse
    responses: list[ModelResponse] = field(default_factory=list)
    reasked: bool = False

    @property
    def cut_blocks(self) -> int:
        """How many of the replies had their last block cut by a ``max_tokens`` or context-window
        stop (:func:`longdoc.core.messages.cut_block`): never read as the answer, never sent back."""
        return sum(cut_block(r) is not None for r in self.responses)

    @property
    def usage(self) -> Usage:
        """The tokens of every reply, summed."""
        total = Usage()
        for response in self.responses:
            total = total.add(response.usage)
        return total


def tool_uses(response: ModelResponse, tool: str) -> list[ToolUseBlock]:
    """The reply's calls of ``tool``, in order (blocks selected by type, never by position)."""
    return [b for b in response.content if isinstance(b, ToolUseBlock) and b.name == tool]


def complete_uses(response: ModelResponse, request: ModelRequest, tool: str) -> list[ToolUseBlock]:
    """The reply's calls of ``tool`` that are complete: all of them, except on a cut stop
    (:data:`~longdoc.core.messages.CUT_STOPS`), where the reply's last block was cut and is left out
    whatever its input (:func:`longdoc.core.messages.cut_block`), and an earlier call whose input
    fails the tool's ``input_schema`` (from ``request.tools``) is left out too (module docstring)."""
    calls = [b for b in complete_blocks(response) if isinstance(b, ToolUseBlock) and b.name == tool]
    if cut_block(response) is None:
        return calls
    schema = next((t.get("input_schema") for t in request.tools if t.get("name") == tool), None)
    return [c for c in calls if isinstance(schema, dict) and not schema_problems(c.input, schema)]


def answered_turn(response: ModelResponse, note: str, tool: str) -> list[Message]:
    """The assistant turn of ``response`` as received (minus a cut last block,
    :func:`longdoc.core.messages.complete_blocks`) and the user turn answering it: an
    ``is_error`` ``tool_result`` for each of its ``tool_use`` blocks first (``note`` on each, with
    the name of a call that is not ``tool``), then ``note`` as text when no call was answered."""
    blocks = complete_blocks(response)
    assistant = Message(role="assistant", content=[b.model_dump() for b in blocks])
    results: list[dict] = []
    for block in blocks:
        if isinstance(block, ToolUseBlock):
            text = note if block.name == tool else f"unknown tool {block.name!r}. {note}"
            results.append({"type": "tool_result", "tool_use_id": block.id, "is_error": True, "content": text})
    return [assistant, Message(role="user", content=results or note)]


def reask_request(request: ModelRequest, response: ModelResponse, tool: str) -> ModelRequest:
    """The one re-ask after ``response`` (to ``request``) held no call of ``tool`` (see the module docstring)."""
    if response.stop_reason == "max_tokens" or not response.content:
        grown = min(request.max_tokens * 2, MAX_REASK_TOKENS) if response.stop_reason == "max_tokens" else None
        return request.model_copy(update={"max_tokens": max(grown or request.max_tokens, request.max_tokens)})
    note = f"No {tool} call came back. Answer now by calling the {tool} tool: only its input is read."
    return request.model_copy(update={"messages": [*request.messages, *answered_turn(response, note, tool)]})


def ask_for_tool(model: Model, request: ModelRequest, tool: str, where: str) -> ToolAnswer:
    """One call of ``model`` for an answer through ``tool``, re-asked once when it holds no call.

    ``where`` names the call in errors (``"summary map 3"``). Returns the :class:`ToolAnswer`
    whose ``response`` holds a complete call of ``tool`` or is a refusal. Raises
    :class:`~longdoc.core.errors.ModelAnswerMissing` when the re-ask brings no call either or a
    reply without one filled the context window,
    :class:`~longdoc.core.errors.ConversationMalformed` when the re-ask would break the
    conversation rules (a harness bug), and the model port's errors.
    """
    responses: list[ModelResponse] = []
    current, growths, text_reasks = request, 0, 0
    while True:
        response = model.create(current)
        responses.append(response)
        answer = ToolAnswer(request=current, response=response, responses=list(responses),
                            reasked=len(responses) > 1)
        if complete_uses(response, current, tool) or response.stop_reason == "refusal":
            return answer
        if response.stop_reason == "model_context_window_exceeded":
            raise ModelAnswerMissing(f"{where}: the reply filled the model's context window before a complete "
                                     f"{tool} call ({len(responses)} replies, its last block cut); a re-ask "
                                     "would not fit either")
        budget = response.stop_reason == "max_tokens" or not response.content
        if budget and growths < MAX_GROWTHS and current.max_tokens < MAX_REASK_TOKENS:
            growths += 1
        elif not budget and text_reasks < 1:
            text_reasks += 1
        else:
            stops = ", ".join(str(r.stop_reason) for r in responses)
            raise ModelAnswerMissing(f"{where}: the model answered without a complete {tool} call in "
                                     f"{len(responses)} replies (stop_reason {stops}; re-asked once, output "
                                     f"cap grown {growths} time(s) to {current.max_tokens} tokens)")
        current = reask_request(current, response, tool)
        check_conversation(current.messages, f"{where}: re-ask for {tool}")
