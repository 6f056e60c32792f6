"""An SDK ``Message`` as longdoc's :class:`~longdoc.core.messages.ModelResponse`, every block kept.

Shared by the Messages client (:mod:`longdoc.adapters.claude`) and the Message Batches client
(:mod:`longdoc.adapters.batches`), whose succeeded results are the same ``Message``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, get_args

from longdoc.core.messages import AssistantBlock, ModelResponse, StopReason, Usage, assistant_block

if TYPE_CHECKING:  # pragma: no cover - typing only
    from anthropic.types import Message as SdkMessage

log = logging.getLogger(__name__)

_STOP_REASONS: frozenset[str] = frozenset(get_args(StopReason))


def to_response(message: SdkMessage) -> ModelResponse:
    """Convert an SDK ``Message`` into our :class:`ModelResponse`.

    Keeps every content block in order: ``text`` and ``tool_use`` typed for the harness,
    ``thinking`` / ``redacted_thinking`` and any other type kept whole
    (:func:`longdoc.core.messages.assistant_block`), so the assistant turn can be sent back
    unchanged (thinking blocks must be, signature included: THINK page). An unknown or
    missing ``stop_reason`` becomes ``"end_turn"`` with a warning; ``None`` cache token counts
    become 0; the 1-hour share of cache writes comes from ``usage.cache_creation``;
    ``stop_details`` (a refusal's ``category`` and ``explanation``) is kept as a dict.
    """
    content: list[AssistantBlock] = [assistant_block(block.model_dump(mode="json", exclude_none=True))
                                     for block in message.content]
    stop_reason = message.stop_reason
    if stop_reason not in _STOP_REASONS:
        log.warning("unknown stop_reason %r from Claude; treating it as end_turn", stop_reason)
        stop_reason = "end_turn"
    usage = message.usage
    split = getattr(usage, "cache_creation", None)
    details = getattr(message, "stop_details", None)
    return ModelResponse(
        id=message.id,
        stop_details=details.model_dump() if details is not None else None,
        model=message.model,
        content=content,
        stop_reason=stop_reason,
        usage=Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
            cache_read_input_tokens=usage.cache_read_input_tokens or 0,
            cache_creation_1h_input_tokens=(getattr(split, "ephemeral_1h_input_tokens", 0) or 0) if split else 0,
        ),
    )
