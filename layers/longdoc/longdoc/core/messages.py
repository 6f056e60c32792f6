"""Messages-API-shaped model exchange (our own types; the Claude adapter converts) and token usage."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Usage(BaseModel):
    """Token usage summed over model calls (all values are tokens)."""

    input_tokens: int = 0
    output_tokens: int = Field(0, description="tokens billed as output: thinking included (THINK page)")
    cache_creation_input_tokens: int = Field(0, description="cache writes, both TTLs")
    cache_read_input_tokens: int = 0
    cache_creation_1h_input_tokens: int = Field(
        0, description="the part of cache_creation_input_tokens written with the 1-hour TTL "
        "(usage.cache_creation.ephemeral_1h_input_tokens), priced at the 1-hour write rate")

    def add(self, other: "Usage") -> "Usage":
        """Return the element-wise sum of two usages."""
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens
            + other.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
            cache_creation_1h_input_tokens=self.cache_creation_1h_input_tokens
            + other.cache_creation_1h_input_tokens,
        )

    def prompt_tokens(self) -> int:
        """All input-side tokens: uncached input + cache writes + cache reads."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens



# --- Messages-API-shaped model exchange (our own types; the Claude adapter converts) ---


class TextBlock(BaseModel):
    """A text content block (Messages API shape)."""

    type: Literal["text"] = "text"
    text: str


class ToolUseBlock(BaseModel):
    """A tool call emitted by the model (Messages API shape); ``input`` is the parsed JSON."""

    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any]


class ToolResultBlock(BaseModel):
    """The harness's answer to one tool call (Messages API shape)."""

    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str
    is_error: bool = False


class ThinkingBlock(BaseModel):
    """A thinking block of an assistant turn; ``thinking`` is empty under the default
    ``display: "omitted"``. Sent back unchanged, ``signature`` included (THINK, S55-NEW)."""

    type: Literal["thinking"] = "thinking"
    thinking: str
    signature: str


class RedactedThinkingBlock(BaseModel):
    """An encrypted thinking block (``data`` only); sent back unchanged."""

    type: Literal["redacted_thinking"] = "redacted_thinking"
    data: str


class OpaqueBlock(BaseModel):
    """Any other content block of an assistant turn (server tools, future types): kept with
    every field as received and sent back unchanged; the harness never interprets it."""

    model_config = ConfigDict(extra="allow")
    type: str


AssistantBlock = TextBlock | ToolUseBlock | ThinkingBlock | RedactedThinkingBlock | OpaqueBlock
"""A block of a model reply: the ones the harness reads (text, tool_use) and the ones it keeps as is."""

ContentBlock = TextBlock | ToolUseBlock | ToolResultBlock


def assistant_block(raw: dict[str, Any]) -> AssistantBlock:
    """The typed block for one content block dict of a reply (unknown types -> :class:`OpaqueBlock`)."""
    kind = raw.get("type")
    typed: dict[str, type[BaseModel]] = {"text": TextBlock, "tool_use": ToolUseBlock, "thinking": ThinkingBlock,
                                         "redacted_thinking": RedactedThinkingBlock}
    cls = typed.get(kind) if isinstance(kind, str) else None
    if cls is TextBlock:
        # a text block may carry citations or other fields: keep the whole block when it does
        return TextBlock(text=raw["text"]) if set(raw) <= {"type", "text"} else OpaqueBlock.model_validate(raw)
    return (cls or OpaqueBlock).model_validate(raw)  # type: ignore[return-value]

StopReason = Literal[
    "end_turn",
    "max_tokens",
    "tool_use",
    "pause_turn",
    "refusal",
    "stop_sequence",
    "model_context_window_exceeded",
]


class Message(BaseModel):
    """One conversation turn. ``content`` is a string or a list of blocks."""

    role: Literal["user", "assistant"]
    content: str | list[dict[str, Any]]


class ModelRequest(BaseModel):
    """Everything one model call needs, in Messages API order.

    ``system`` and ``tools`` are the static, cacheable prefix (blocks may carry
    ``cache_control``); ``messages`` carry CASE_FACTS, retrieved chunks and the task.
    ``max_tokens`` caps output tokens for this call, thinking included. ``job`` names what
    the call is for: the Claude adapter takes its ``thinking`` and ``output_config.effort``
    from the capability table (:func:`longdoc.core.models_catalogue.call_settings`).
    ``tool_choice`` is ``auto`` unless a caller sets another; current models reject a forced
    choice (S55-NEW), so the product never forces one.
    """

    system: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    messages: list[Message]
    max_tokens: int = Field(gt=0)
    tool_choice: dict[str, Any] = Field(default_factory=lambda: {"type": "auto"})
    job: str = "extract"
    timeout_seconds: float | None = Field(
        None, gt=0, description="wall-clock budget for this call, retries included (seconds); None: the client's default"
    )


class ModelResponse(BaseModel):
    """A model's reply in Messages API shape, whichever model produced it."""

    id: str
    model: str
    content: list[AssistantBlock]
    stop_reason: StopReason
    usage: Usage
    stop_details: dict[str, Any] | None = Field(
        None, description="the API's stop_details, e.g. {'type': 'refusal', 'category': 'cyber', 'explanation': ...}"
    )



# --- cut replies: one rule for every job that reads a model reply ---

CUT_STOPS: tuple[str, ...] = ("max_tokens", "model_context_window_exceeded")
"""Stop reasons that end a reply wherever the output cap or the context window ran out. The API's
page (Stop reasons and fallback, https://platform.claude.com/docs/en/build-with-claude/handling-stop-reasons):
``max_tokens`` "The response reached your max_tokens limit" (raise ``max_tokens`` or continue),
``model_context_window_exceeded`` "The response filled the model's context window" ("Treat the
response as truncated")."""


def cut_block(response: ModelResponse) -> AssistantBlock | None:
    """The reply's last content block when ``response.stop_reason`` is one of :data:`CUT_STOPS`
    (the limit ended the reply inside it), else None (also None for an empty reply).

    Whatever its schema says: the API closes a cut tool call's JSON and a string cut mid-word
    still validates (a half quote is still a verbatim string), so only the stop reason can tell.
    A cut block is never run, stored, answered or sent back; the blocks before it closed before
    the next one began and are complete (:func:`complete_blocks`).
    """
    if response.stop_reason not in CUT_STOPS or not response.content:
        return None
    return response.content[-1]


def complete_blocks(response: ModelResponse) -> list[AssistantBlock]:
    """The reply's blocks as received and in order, minus its :func:`cut_block` (if any)."""
    cut = cut_block(response)
    return list(response.content) if cut is None else list(response.content[:-1])


def block_label(block: AssistantBlock) -> str:
    """A short name of a block for counts and logs: ``tool_use extract_clause``, ``text``, ``thinking``."""
    return f"tool_use {block.name}" if isinstance(block, ToolUseBlock) else block.type
