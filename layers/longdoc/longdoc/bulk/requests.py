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


def _marked_for_rounds(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with one ``cache_control`` mark left: the 1-hour one on the first block of the
    first user message, when the session marked it (the stable part of an extraction prompt,
    :func:`longdoc.extract.prompt.build_request`: stable CASE_FACTS and the run's stable chunk
    set, byte-identical in every request of the run); every other mark is removed.

    Why that block and no other: a document's next round goes out after this round's batch has
    ended, so its request (the conversation carried on, or a fresh session of the same run) reads
    that block from what this round's request wrote, in the Message Batches cache (issue 25: batch
    and Messages caches are separate, items of one batch do not read each other's writes). The
    1-hour TTL (written at 2 x the input price, read at 0.1 x, CACHE pricing
    https://platform.claude.com/docs/en/build-with-claude/prompt-caching#pricing) outlives a
    round that ends within the hour; the 5-minute one would not. What still holds of the earlier
    rule (no mark on the document at all, commit ab6a702): a write that is never read costs 1 x
    the block's input price more, so a run answered in one round, or a round that takes longer
    than an hour, pays for nothing; from a run's third request on the mark is cheaper than none
    (2 + 0.1 + 0.1 against 3). Later marks (session chunks, progress counters, tool results)
    change from request to request, so they stay off: nothing would read them.

    Breakpoints: tools, system and this block make 3 (at most 4, CACHE page), all 1-hour (the
    1-hour-before-5-minute order holds trivially)."""
    for n, message in enumerate(messages):
        if isinstance(message["content"], list):
            blocks = []
            for i, block in enumerate(message["content"]):
                mark = block.get("cache_control")
                block = {k: v for k, v in block.items() if k != "cache_control"}
                if n == 0 and i == 0 and message["role"] == "user" and isinstance(mark, dict):
                    block["cache_control"] = {**mark, "ttl": CACHE_TTL}
                blocks.append(block)
            message["content"] = blocks
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
    cache marks of tools, system and the first user block (the run's stable context) get the 1-hour
    TTL, no other block of the messages carries one (:func:`_marked_for_rounds`).
    ``note`` (why the previous round's request failed) is added as a text block to the first user
    message. No sampling parameter is sent.

    Each request of a batch obeys the rules of a Messages request (BATCH page; MIG1021 for API
    version 2026-10-21), so a request the model's row rejects (forced ``tool_choice``, assistant
    prefill) raises :class:`~longdoc.core.errors.ModelRejectsRequest` here, before the batch is
    sent (:mod:`longdoc.core.request_rules`).
    """
    messages = _marked_for_rounds([m.model_dump() for m in request.messages])
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
