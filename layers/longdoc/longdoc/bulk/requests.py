"""Between a session's :class:`~longdoc.core.messages.ModelRequest` and a Message Batches request body."""

from __future__ import annotations

import copy
from typing import Any

from longdoc.core.messages import Message, ModelRequest

CACHE_TTL = "1h"
"""Cache TTL of the static prefix in batches: Anthropic's batch docs suggest the 1-hour cache for
prompts shared across a batch, whose requests may run over more than the default 5 minutes."""


def _one_hour(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``blocks`` with every ``cache_control`` mark given the 1-hour TTL."""
    out = copy.deepcopy(blocks)
    for block in out:
        if isinstance(block.get("cache_control"), dict):
            block["cache_control"]["ttl"] = CACHE_TTL
    return out


MAX_CARRIED = 10
"""Rejections carried into the next round's message (the first ones of the turn)."""
MAX_CARRIED_CHARS = 800
"""Characters kept of each carried rejection (the harness's own texts are shorter)."""


def rejections(turn: list[Message]) -> list[str]:
    """The harness's answers that did not accept a call, from one applied turn (``[assistant, user]``
    as :func:`longdoc.extract.session.apply_response` leaves them; empty when the turn ended there):
    ``"<tool> (<clause type or query>): <answer>"``, at most :data:`MAX_CARRIED`, each cut to
    :data:`MAX_CARRIED_CHARS` characters."""
    if len(turn) < 2 or not isinstance(turn[0].content, list) or not isinstance(turn[1].content, list):
        return []
    calls = {b["id"]: b for b in turn[0].content if isinstance(b, dict) and b.get("type") == "tool_use"}
    out = []
    for result in turn[1].content:
        call = calls.get(result.get("tool_use_id", ""))
        if call is None or not result.get("is_error"):
            continue
        about = call["input"].get("clause_type") or call["input"].get("query") or ""
        out.append(f"{call['name']} ({about}): {str(result.get('content', ''))[:MAX_CARRIED_CHARS]}")
    return out[:MAX_CARRIED]


def _add_text(messages: list[dict[str, Any]], text: str) -> None:
    """Append a text block to the first (user) message."""
    first = messages[0]
    content = first["content"] if isinstance(first["content"], list) else [{"type": "text", "text": first["content"]}]
    first["content"] = [*content, {"type": "text", "text": text}]


def batch_params(model: str, request: ModelRequest, note: str | None = None,
                 carried: list[str] | None = None) -> dict[str, Any]:
    """The Messages API body (``params``) of one batch request: model, max_tokens (tokens), system,
    tools, tool_choice, messages; cache marks get the 1-hour TTL. ``note`` (why the previous round's
    request failed) and ``carried`` (the harness's rejections of the previous round's calls, see
    :func:`rejections`) are added as text blocks to the first user message."""
    messages = [m.model_dump() for m in request.messages]
    if note:
        _add_text(messages, f"Note: the previous request failed ({note}).")
    if carried:
        _add_text(messages, "The harness did not accept these calls of your previous turn; act on its answers:\n"
                  + "\n".join(f"- {line}" for line in carried))
    params: dict[str, Any] = {"model": model, "max_tokens": request.max_tokens, "messages": messages}
    if request.system:
        params["system"] = _one_hour(request.system)
    if request.tools:
        params["tools"] = _one_hour(request.tools)
        params["tool_choice"] = request.tool_choice
    return params


def model_request(params: dict[str, Any]) -> ModelRequest:
    """The :class:`ModelRequest` of a batch request's ``params`` (local adapters answer with a Model)."""
    return ModelRequest(system=params.get("system", []), tools=params.get("tools", []),
                        messages=[Message(**m) for m in params["messages"]], max_tokens=params["max_tokens"],
                        tool_choice=params.get("tool_choice", {"type": "auto"}))
