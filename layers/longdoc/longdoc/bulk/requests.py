"""Between a session's :class:`~longdoc.core.messages.ModelRequest` and a Message Batches request body."""

from __future__ import annotations

import copy
from typing import Any

from longdoc.core.messages import Message, ModelRequest
from longdoc.core.request_rules import model_fields

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


def _unmarked(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` without ``cache_control`` on their content blocks.

    The synchronous session marks the end of the retrieved chunks so that its next calls, seconds
    later, read them from the cache. A batch request has no next call within a cache lifetime
    (its conversation goes on, if at all, a whole batch later), so that mark would only write the
    document's context to the cache on every request (1.25 x the input price for 5 minutes, 2 x
    for an hour: https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching#pricing)
    and be read almost never; the shared prefix (tools, system) keeps its marks."""
    for message in messages:
        if isinstance(message["content"], list):
            message["content"] = [{k: v for k, v in block.items() if k != "cache_control"}
                                  for block in message["content"]]
    return messages


def add_retry_note(message: dict[str, Any], note: str) -> None:
    """Append ``Note: the previous request failed (<note>).`` as a text block to ``message`` (a user
    message dict; string content becomes one text block first). ``note`` names the error."""
    content = message["content"] if isinstance(message["content"], list) else [{"type": "text", "text": message["content"]}]
    message["content"] = [*content, {"type": "text", "text": f"Note: the previous request failed ({note})."}]


def batch_params(model: str, request: ModelRequest, note: str | None = None) -> dict[str, Any]:
    """The Messages API body (``params``) of one batch request: model, max_tokens (tokens), system,
    tools, tool_choice, messages, and the ``thinking`` / ``output_config`` the capability table
    gives the request's job on ``model`` (Anthropic API rows: the Batches API exists there only);
    cache marks of tools and system get the 1-hour TTL, messages carry none (:func:`_unmarked`).
    ``note`` (why the previous round's request failed) is added as a text block to the first user
    message. No sampling parameter is sent.

    Each request of a batch obeys the rules of a Messages request (BATCH page; MIG1021 for API
    version 2026-10-21), so a request the model's row rejects (forced ``tool_choice``, assistant
    prefill) raises :class:`~longdoc.core.errors.ModelRejectsRequest` here, before the batch is
    sent (:mod:`longdoc.core.request_rules`).
    """
    messages = _unmarked([m.model_dump() for m in request.messages])
    if note:
        add_retry_note(messages[0], note)
    fields = model_fields(model, "anthropic", request.job, request.tool_choice if request.tools else None, messages)
    params: dict[str, Any] = {"model": model, "max_tokens": request.max_tokens, "messages": messages}
    if request.system:
        params["system"] = _one_hour(request.system)
    if request.tools:
        params["tools"] = _one_hour(request.tools)
        params["tool_choice"] = request.tool_choice
    params.update(fields)
    return params


def model_request(params: dict[str, Any]) -> ModelRequest:
    """The :class:`ModelRequest` of a batch request's ``params`` (local adapters answer with a Model).

    ``thinking`` / ``output_config`` are not carried (a Model takes them from the table again,
    for the job, which batch params do not name: the default job ``extract``, the bulk path's)."""
    return ModelRequest(system=params.get("system", []), tools=params.get("tools", []),
                        messages=[Message(**m) for m in params["messages"]], max_tokens=params["max_tokens"],
                        tool_choice=params.get("tool_choice", {"type": "auto"}))
