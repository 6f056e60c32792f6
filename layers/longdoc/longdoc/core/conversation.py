"""The conversation rules every model enforces, checked before a request is sent (and by tests).

The Messages API answers 400 ``invalid_request_error`` to a conversation that breaks them, on
every model, thinking or not:

* the first message is a ``user`` turn and roles alternate ``user`` / ``assistant``
  (https://platform.claude.com/docs/en/api/messages, ``messages``);
* every ``tool_use`` block of an assistant turn is answered by a ``tool_result`` block with the
  same id in the very next message, a user turn, and the tool results come first in it, before
  any text (https://platform.claude.com/docs/en/agents-and-tools/tool-use/implement-tool-use and
  https://platform.claude.com/docs/en/agents-and-tools/tool-use/handle-tool-calls);
* a ``tool_result`` answers a ``tool_use`` of the assistant turn just before it;
* the last message is a user turn: current models reject an assistant prefill
  (Sonnet 5.5 migration guide, https://platform.claude.com/docs/en/models/sonnet-5-5/migration-guide).

:func:`conversation_problems` lists what is wrong (pure; no exception), :func:`check_conversation`
raises :class:`~longdoc.core.errors.ConversationMalformed` for a harness about to send a
conversation the API would refuse: that is a bug of ours, never the model's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from longdoc.core.errors import ConversationMalformed
from longdoc.core.messages import Message


def _turn(message: Message | dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """``(role, blocks)`` of one message; a string content is one text block."""
    raw = message.model_dump() if isinstance(message, Message) else message
    role, content = str(raw.get("role")), raw.get("content")
    if isinstance(content, str):
        return role, [{"type": "text", "text": content}]
    return role, [b for b in content or [] if isinstance(b, dict)]


def _shape(i: int, role: str, blocks: list[dict[str, Any]], previous: str | None) -> list[str]:
    """The role and block-placement problems of message ``i`` (``previous``: the role before it)."""
    problems: list[str] = []
    if role not in ("user", "assistant"):
        problems.append(f"messages.{i}: unknown role {role!r}")
    if role == previous:
        problems.append(f"messages.{i}: two {role} turns in a row (roles must alternate)")
    if not blocks:
        problems.append(f"messages.{i}: empty content")
    kinds = {b.get("type") for b in blocks}
    if role == "assistant" and "tool_result" in kinds:
        problems.append(f"messages.{i}: a tool_result in an assistant turn")
    if role == "user" and "tool_use" in kinds:
        problems.append(f"messages.{i}: a tool_use in a user turn")
    return problems


def conversation_problems(messages: Sequence[Message | dict[str, Any]], *, paused: bool = False) -> list[str]:
    """Every broken conversation rule of ``messages`` (see the module docstring), one line each,
    naming the message index as the API does (``messages.3: ...``); ``[]`` when the conversation
    may be sent. ``messages`` are :class:`~longdoc.core.messages.Message` objects or their JSON.

    ``paused``: the last message may be an assistant turn without tool calls, sent back as is to
    let a reply that stopped on ``pause_turn`` go on (Messages API stop reasons,
    https://platform.claude.com/docs/en/build-with-claude/handling-stop-reasons); no other
    conversation may end with an assistant turn."""
    turns = [_turn(m) for m in messages]
    if not turns:
        return ["messages: at least one message is required"]
    problems: list[str] = []
    if turns[0][0] != "user":
        problems.append(f"messages.0: the first message must be a user turn, not {turns[0][0]!r}")
    for i, (role, blocks) in enumerate(turns):
        previous = turns[i - 1] if i else None
        problems += _shape(i, role, blocks, previous[0] if previous else None)
        if role == "user":
            asked = [str(b.get("id")) for b in previous[1] if b.get("type") == "tool_use"] \
                if previous and previous[0] == "assistant" else []
            problems += _answers(i, asked, blocks)
    role, blocks = turns[-1]
    if role == "assistant" and (not paused or any(b.get("type") == "tool_use" for b in blocks)):
        problems.append(f"messages.{len(turns) - 1}: the last message must be a user turn (no assistant prefill)")
    return problems


def _answers(i: int, asked: list[str], blocks: list[dict[str, Any]]) -> list[str]:
    """The tool-result rules for user turn ``i`` after an assistant turn that called ``asked``."""
    problems: list[str] = []
    leading = []
    for block in blocks:
        if block.get("type") != "tool_result":
            break
        leading.append(str(block.get("tool_use_id")))
    results = [str(b.get("tool_use_id")) for b in blocks if b.get("type") == "tool_result"]
    missing = [t for t in asked if t not in leading]
    if missing:
        problems.append(f"messages.{i}: tool_use ids without a tool_result at the start of this message: "
                        f"{', '.join(missing)}")
    if len(results) != len(leading):
        problems.append(f"messages.{i}: tool_result blocks must come first, before any other block")
    orphans = [t for t in results if t not in asked]
    if orphans:
        problems.append(f"messages.{i}: tool_result without a tool_use in the previous assistant turn: "
                        f"{', '.join(orphans)}")
    if len(set(results)) != len(results):
        problems.append(f"messages.{i}: more than one tool_result for the same tool_use")
    return problems


def append_turn(messages: list[Message], message: Message) -> None:
    """Append ``message`` to ``messages``, keeping roles alternating: an assistant turn that follows
    an assistant turn (the reply that goes on after a ``pause_turn``, whose paused turn was sent back
    as is) joins it as one turn, its blocks after the paused ones, as the API itself combines
    consecutive turns of one role (https://platform.claude.com/docs/en/api/messages, ``messages``)."""
    if messages and messages[-1].role == message.role == "assistant":
        messages[-1] = Message(role="assistant", content=[*_turn(messages[-1])[1], *_turn(message)[1]])
    else:
        messages.append(message)


def join_turns(messages: list[dict[str, Any]], more: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` followed by ``more`` (both as JSON), joined as :func:`append_turn` joins them."""
    out = [Message.model_validate(m) for m in messages]
    for message in more:
        append_turn(out, Message.model_validate(message))
    return [m.model_dump() for m in out]


def check_conversation(messages: Sequence[Message | dict[str, Any]], where: str, *, paused: bool = False) -> None:
    """Raise :class:`~longdoc.core.errors.ConversationMalformed` naming ``where`` (the harness step
    about to send it) and every problem :func:`conversation_problems` finds (``paused`` as there);
    return quietly when none."""
    problems = conversation_problems(messages, paused=paused)
    if problems:
        raise ConversationMalformed(f"{where}: the conversation breaks the Messages API rules (a harness bug): "
                                    + "; ".join(problems))
