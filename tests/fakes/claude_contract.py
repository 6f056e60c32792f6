"""The documented request rules of the Claude Messages API, as a pure checker for the strict fakes.

:func:`check_request` runs every rule below on one request body and returns the first
:class:`ApiError` the real API documents for it (or ``None``). The per-model facts come from
the product's own capability table (:func:`longdoc.core.models_catalogue.spec_for`), as
issue 25 asks: the fakes hold the product to the same rows it builds requests from. Each rule
is a small function whose comment names its source page (keys of ``longdoc/data/models.json``
"pages"; the issue's fact sheet has the URLs). Where a page gives the rule but not the exact
error text, the message is ours and says so in the rule's comment.

Error bodies follow the errors page (ERRORS https://platform.claude.com/docs/en/api/errors):
``{"type": "error", "error": {"type": "invalid_request_error", "message": ...}, "request_id": "req_..."}``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from longdoc.core.models_catalogue import ModelSpec, spec_for
from tests.fakes.claude_wire import THINKING_TYPES, SignatureBook, blocks_of, prompt_blocks

Surface = Literal["messages", "batch", "bedrock", "count_tokens"]
API_2026_10_21 = "2026-10-21"
"""The API version the ``anthropic`` 2.x SDK sends (VERS, MIG1021)."""

_request_ids = itertools.count(1)


@dataclass(frozen=True)
class ApiError:
    """One documented refusal: HTTP ``status``, ``error.type`` and ``message`` (ERRORS page)."""

    status: int
    type: str
    message: str

    def body(self) -> dict[str, Any]:
        """The error body in the errors page's shape, with a fresh ``request_id``."""
        return {"type": "error", "error": {"type": self.type, "message": self.message},
                "request_id": f"req_fake{next(_request_ids):012d}"}


def invalid(message: str) -> ApiError:
    """A 400 ``invalid_request_error`` (ERRORS page)."""
    return ApiError(400, "invalid_request_error", message)


@dataclass(frozen=True)
class Ctx:
    """What every rule sees: the body, its row, the surface, the API version and the signature book."""

    body: dict[str, Any]
    row: ModelSpec
    surface: Surface
    api_version: str
    book: SignatureBook | None

    @property
    def v2026(self) -> bool:
        """Whether the request runs under API version 2026-10-21 or later (VERS)."""
        date = self.api_version[-10:]
        return len(date) == 10 and date[4] == "-" and date >= API_2026_10_21

    @property
    def messages(self) -> list[dict[str, Any]]:
        return [m for m in self.body.get("messages") or [] if isinstance(m, dict)]

    @property
    def thinking(self) -> dict[str, Any]:
        value = self.body.get("thinking")
        return value if isinstance(value, dict) else {}

    @property
    def model_key(self) -> str:
        """What a thinking signature binds to: provider and model family (S55-NEW, PRES)."""
        return model_key(self.row)


def model_key(row: ModelSpec) -> str:
    """The signature binding of a row: ``provider:family``."""
    return f"{row.provider}:{row.family}"


def thinking_mode(body: dict[str, Any], row: ModelSpec) -> str | None:
    """The thinking a request runs with: its ``thinking.type`` when on, the row's default when
    absent (S55-MIG: a request without ``thinking`` runs adaptive thinking), ``None`` when off."""
    kind = (body.get("thinking") or {}).get("type") if isinstance(body.get("thinking"), dict) else None
    if kind is None:
        return "adaptive" if row.spec.thinking_default == "adaptive" else None
    return kind if kind in ("adaptive", "enabled", "between_tools") else None


Rule = Callable[[Ctx], ApiError | None]


# --- model and limits -------------------------------------------------------------------


def max_tokens_within_limit(ctx: Ctx) -> ApiError | None:
    # MODELS / S55-OV "max output": max_tokens above the model's output limit is refused.
    # Wording ours (exact text not on a stored page). count_tokens carries no max_tokens.
    limit = ctx.row.spec.max_output_tokens
    value = ctx.body.get("max_tokens")
    if ctx.surface == "count_tokens" and value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        return invalid(f"max_tokens: Field required (an integer of at least 1), got {value!r}")
    if value > limit:
        return invalid(f"max_tokens: {value} > {limit}, which is the maximum allowed number of output tokens "
                       f"for {ctx.body.get('model')}")
    return None


def sampling_removed(ctx: Ctx) -> ApiError | None:
    # VERS / MIG1021: under 2026-10-21 temperature, top_p and top_k are removed; sending any of
    # them (even at the default value) is a 400. S55-MIG / S5-MIG list the same per model. Wording ours.
    if not ctx.v2026:
        return None
    for name in ("temperature", "top_p", "top_k"):
        if name in ctx.body:
            return invalid(f"{name}: Extra inputs are not permitted (removed in API version {API_2026_10_21})")
    return None


# --- thinking and effort ----------------------------------------------------------------


def thinking_type_accepted(ctx: Ctx) -> ApiError | None:
    # S55-MIG table / O55-NEW "Thinking can't be disabled" / H55-NEW / TTS: the thinking types
    # each model accepts (row.thinking_types). The Opus 5.5 text is O55-NEW's, quoted; the
    # others' wording is ours (S55-NEW only says the Sonnet 5.5 message points to between_tools).
    kind = ctx.thinking.get("type")
    if kind is None or kind in ctx.row.spec.thinking_types:
        return None
    if ctx.row.family == "opus-5-5":
        return invalid(f'"thinking.type.{kind}" is not supported for this model. Use "thinking.type.adaptive" '
                       'and "output_config.effort" to control thinking behavior.')
    hint = ' Use "thinking.type.between_tools" for the lowest setting.' if "between_tools" in \
        ctx.row.spec.thinking_types else ""
    accepted = ", ".join(f'"{t}"' for t in ctx.row.spec.thinking_types)
    return invalid(f'"thinking.type.{kind}" is not supported for this model (accepted: {accepted}).{hint}')


def budget_tokens_only_with_enabled(ctx: Ctx) -> ApiError | None:
    # TTS / THINK: budget_tokens belongs to thinking.type "enabled" (manual extended thinking),
    # which must carry one (at least 1,024 and below max_tokens, THINK); other types take none. Wording ours.
    kind, budget = ctx.thinking.get("type"), ctx.thinking.get("budget_tokens")
    if kind == "enabled":
        if not isinstance(budget, int) or budget < 1024:
            return invalid("thinking.enabled.budget_tokens: Input should be an integer of at least 1024")
        max_tokens = ctx.body.get("max_tokens")
        if isinstance(max_tokens, int) and budget >= max_tokens:
            return invalid("`max_tokens` must be greater than `thinking.budget_tokens`")
    elif budget is not None:
        return invalid(f"thinking.{kind}.budget_tokens: Extra inputs are not permitted")
    return None


def effort_accepted(ctx: Ctx) -> ApiError | None:
    # S55-NEW (between_tools only at low/medium/high: xhigh/max -> 400), S55-OV / O55-NEW /
    # H55-OV (effort levels per model); rows without levels (Haiku 4.5) take no effort. Wording ours.
    effort = (ctx.body.get("output_config") or {}).get("effort") if isinstance(ctx.body.get("output_config"),
                                                                                dict) else None
    if effort is None:
        return None
    levels = ctx.row.spec.effort_levels
    if not levels:
        return invalid("output_config.effort: effort is not supported for this model")
    if effort not in levels:
        return invalid(f"output_config.effort: Input should be {', '.join(repr(lv) for lv in levels)}")
    if ctx.thinking.get("type") == "between_tools" and effort not in ctx.row.spec.between_tools_efforts:
        return invalid(f'output_config.effort: "{effort}" is not supported with "thinking.type.between_tools"; '
                       f"use one of {', '.join(ctx.row.spec.between_tools_efforts)}")
    return None


def tool_choice_not_forced(ctx: Ctx) -> ApiError | None:
    # S55-NEW / O55-NEW "Forced tool use returns an error" (row.forced_tool_choice false), and
    # THINK: with thinking on, only tool_choice auto or none (any model). Wording ours.
    choice = ctx.body.get("tool_choice")
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind not in ("any", "tool"):
        return None
    if not ctx.row.spec.forced_tool_choice:
        return invalid(f'tool_choice.type: "{kind}" (forced tool use) is not supported for this model; '
                       'use "auto" and ask for the tool in the prompt')
    if thinking_mode(ctx.body, ctx.row) is not None:
        return invalid("Thinking may not be enabled when tool_choice forces tool use.")
    return None


def strict_tools_supported(ctx: Ctx) -> ApiError | None:
    # BEDROCK page (https://platform.claude.com/docs/en/build-with-claude/claude-in-amazon-bedrock):
    # structured outputs (strict tool use) are listed as not supported on Bedrock; the row's
    # strict_tools says so. Wording ours.
    if ctx.row.strict_tools:
        return None
    for i, tool in enumerate(ctx.body.get("tools") or []):
        if isinstance(tool, dict) and "strict" in tool:
            return invalid(f"tools.{i}.strict: Extra inputs are not permitted (strict tool use is not supported "
                           "on this endpoint)")
    return None


# --- the conversation -------------------------------------------------------------------


def roles_alternate(ctx: Ctx) -> ApiError | None:
    # Messages API reference (messages: "alternating user and assistant turns", first turn
    # user). Wording ours.
    messages = ctx.messages
    if not messages:
        return invalid("messages: at least one message is required")
    if messages[0].get("role") != "user":
        return invalid("messages.0.role: the first message must use the \"user\" role")
    for i in range(1, len(messages)):
        if messages[i].get("role") == messages[i - 1].get("role"):
            return invalid(f"messages.{i}.role: roles must alternate between \"user\" and \"assistant\", "
                           f"but found two consecutive \"{messages[i].get('role')}\" messages")
    return None


def no_prefill(ctx: Ctx) -> ApiError | None:
    # S55-MIG ("assistant prefill" is one of five 400s), H55-NEW / H55-MIG step 6 ("end messages
    # with a user turn"); row.prefill false. Wording ours.
    messages = ctx.messages
    if ctx.row.spec.prefill or not messages or messages[-1].get("role") != "assistant":
        return None
    return invalid("This model does not support assistant message prefill. The conversation must end with a "
                   "user message.")


def tool_uses_answered(ctx: Ctx) -> ApiError | None:
    # Tool-use guide (every tool_use answered by a tool_result at the start of the next user
    # turn). Message: the API's known text (not on a stored page; quoted in issue 25).
    messages = ctx.messages
    for i, message in enumerate(messages[:-1]):
        if message.get("role") != "assistant":
            continue
        uses = [b.get("id") for b in blocks_of(message.get("content")) if b.get("type") == "tool_use"]
        if not uses:
            continue
        following = blocks_of(messages[i + 1].get("content"))
        leading: list[str] = []
        for block in following:
            if block.get("type") != "tool_result":
                break
            leading.append(block.get("tool_use_id"))
        missing = [u for u in uses if u not in leading]
        if missing:
            return invalid(f"messages.{i + 1}: `tool_use` ids were found without `tool_result` blocks immediately "
                           f"after: {', '.join(str(m) for m in missing)}. Each `tool_use` block must have a "
                           "corresponding `tool_result` block in the next message.")
    return None


def tool_results_match(ctx: Ctx) -> ApiError | None:
    # Tool-use guide: a tool_result answers a tool_use of the previous assistant turn. Wording
    # after the API's known message ("unexpected `tool_use_id` found in `tool_result` blocks").
    messages = ctx.messages
    for i, message in enumerate(messages):
        if message.get("role") != "user":
            continue
        results = [(j, b) for j, b in enumerate(blocks_of(message.get("content"))) if b.get("type") == "tool_result"]
        if not results:
            continue
        previous = messages[i - 1] if i > 0 and messages[i - 1].get("role") == "assistant" else {}
        uses = {b.get("id") for b in blocks_of(previous.get("content")) if b.get("type") == "tool_use"}
        for j, block in results:
            if block.get("tool_use_id") not in uses:
                return invalid(f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                               f"{block.get('tool_use_id')}. Each `tool_result` block must have a corresponding "
                               "`tool_use` block in the previous message.")
    return None


_THINKING_FIRST = ("messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{found}`. "
                   "When `thinking` is enabled, a final `assistant` message must start with a thinking block "
                   "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include "
                   "thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please "
                   "consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking")


def final_assistant_starts_with_thinking(ctx: Ctx) -> ApiError | None:
    # TTS / THINK (tool use with thinking): with thinking on, the final assistant turn before the
    # last user turn, when it holds tool_use, starts with a thinking block. Text as quoted in issue 25
    # (the API's own message, "preceeding" included). With between_tools (no up-front thinking,
    # S55-NEW) the rule holds for a turn this fake opened with a thinking block.
    messages, mode = ctx.messages, thinking_mode(ctx.body, ctx.row)
    if mode is None or len(messages) < 2 or messages[-1].get("role") != "user":
        return None
    i = len(messages) - 2
    turn = blocks_of(messages[i].get("content"))
    if messages[i].get("role") != "assistant" or not any(b.get("type") == "tool_use" for b in turn):
        return None
    if turn and turn[0].get("type") in THINKING_TYPES:
        return None
    issued = ctx.book.issued_for(ctx.model_key, ctx.body, i) if ctx.book is not None else None
    if mode == "between_tools" and issued is None:
        return None
    return invalid(_THINKING_FIRST.format(i=i, found=turn[0].get("type") if turn else "nothing"))


def thinking_signatures_valid(ctx: Ctx) -> ApiError | None:
    # S55-NEW / O55-NEW (thinking blocks tied to the model and the conversation, sent back
    # unchanged), PRES (the prefix before a block is checked; a changed prefix is a 400 for
    # accounts from 31 Aug 2026). This fake issues every thinking block it accepts back; it never
    # issues redacted_thinking. Wording after the API's known "Invalid `signature` in `thinking` block".
    if ctx.book is None:
        return None
    for i, message in enumerate(ctx.messages):
        if message.get("role") != "assistant":
            continue
        for j, block in enumerate(blocks_of(message.get("content"))):
            if block.get("type") in THINKING_TYPES and not ctx.book.verifies(ctx.model_key, ctx.body, i, block):
                return invalid(f"messages.{i}.content.{j}: Invalid `signature` in `{block.get('type')}` block")
    return None


def _blocks_by_role(ctx: Ctx, role: str) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """``(message index, block index, block)`` of every content block of the ``role`` messages."""
    for i, message in enumerate(ctx.messages):
        if message.get("role") == role:
            for j, block in enumerate(blocks_of(message.get("content"))):
                yield i, j, block


def no_documents_from_assistant(ctx: Ctx) -> ApiError | None:
    # VERS / MIG1021 (2026-10-21): a document block directly in an assistant message is a 400. Wording ours.
    if not ctx.v2026:
        return None
    for i, j, block in _blocks_by_role(ctx, "assistant"):
        if block.get("type") == "document":
            return invalid(f"messages.{i}.content.{j}: `document` blocks are not accepted in `assistant` "
                           f"messages in API version {API_2026_10_21}")
    return None


def no_citations_in_user_text(ctx: Ctx) -> ApiError | None:
    # VERS (2026-10-21): a user text block with non-empty citations, directly or inside a
    # search_result, is a 400. Wording ours.
    if not ctx.v2026:
        return None
    for i, j, block in _blocks_by_role(ctx, "user"):
        inner = blocks_of(block.get("content")) if block.get("type") in ("search_result", "tool_result") else []
        if any(text.get("type") == "text" and text.get("citations") for text in [block, *inner]):
            return invalid(f"messages.{i}.content.{j}: `citations` on `text` blocks of `user` messages are "
                           f"not accepted in API version {API_2026_10_21}")
    return None


def cache_breakpoints_valid(ctx: Ctx) -> ApiError | None:
    # CACHE: at most 4 cache_control breakpoints per request, and a 1-hour breakpoint may not
    # follow a 5-minute one (longer TTLs first). Wording after the API's known message.
    marks = [b["cache_control"] for b in prompt_blocks(ctx.body) if isinstance(b.get("cache_control"), dict)]
    if isinstance(ctx.body.get("cache_control"), dict):
        marks.append(ctx.body["cache_control"])
    if len(marks) > 4:
        return invalid(f"A maximum of 4 blocks with cache_control may be provided. Found {len(marks)}.")
    ttls = [m.get("ttl", "5m") for m in marks]
    if "5m" in ttls and "1h" in ttls[ttls.index("5m"):]:
        return invalid("a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block")
    return None


RULES: tuple[Rule, ...] = (
    max_tokens_within_limit, sampling_removed, thinking_type_accepted, budget_tokens_only_with_enabled,
    effort_accepted, tool_choice_not_forced, strict_tools_supported, roles_alternate, no_prefill, tool_uses_answered,
    tool_results_match, final_assistant_starts_with_thinking, thinking_signatures_valid,
    no_documents_from_assistant, no_citations_in_user_text, cache_breakpoints_valid,
)
"""Every rule, in the order they are checked (the first refusal is answered)."""


def row_for(model: Any, surface: Surface) -> ModelSpec | None:
    """The capability-table row of ``model`` on the surface's provider (Bedrock ids on ``bedrock``,
    either provider's for ``count_tokens``)."""
    if not isinstance(model, str):
        return None
    if surface == "count_tokens":  # counted on either provider's endpoint
        return spec_for(model)
    return spec_for(model, "bedrock" if surface == "bedrock" else "anthropic")


def check_request(body: dict[str, Any], *, surface: Surface, api_version: str,
                  signatures: SignatureBook | None = None) -> ApiError | None:
    """The first documented refusal of ``body`` on ``surface`` under ``api_version``, or None.

    ``body`` is a Messages API request (a batch item's ``params``; for Bedrock InvokeModel the
    caller puts the path's model id into ``model``). ``signatures`` is the fake's
    :class:`~tests.fakes.claude_wire.SignatureBook`; without it thinking echoes are not checked.
    An unknown model is a 404 ``not_found_error`` (ERRORS; "model: <id>" is the API's wording).
    Never raises.
    """
    if not isinstance(body, dict):
        return invalid("request body: expected a JSON object")
    row = row_for(body.get("model"), surface)
    if row is None:
        return ApiError(404, "not_found_error", f"model: {body.get('model')}")
    ctx = Ctx(body, row, surface, api_version, signatures)
    for rule in RULES:
        error = rule(ctx)
        if error is not None:
            return error
    return None
