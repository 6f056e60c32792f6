"""Messages-API-shaped model exchange (our own types; the Claude adapter converts) and token usage."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class Usage(BaseModel):
    """Token usage summed over model calls (all values are tokens)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def add(self, other: "Usage") -> "Usage":
        """Return the element-wise sum of two usages."""
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens
            + other.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
        )



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


ContentBlock = TextBlock | ToolUseBlock | ToolResultBlock

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
    ``max_tokens`` caps output tokens for this call.
    """

    system: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    messages: list[Message]
    max_tokens: int = Field(gt=0)
    tool_choice: dict[str, Any] = Field(default_factory=lambda: {"type": "auto"})
    timeout_seconds: float | None = Field(
        None, gt=0, description="wall-clock budget for this call, retries included (seconds); None: the client's default"
    )


class ModelResponse(BaseModel):
    """A model's reply in Messages API shape, whichever model produced it."""

    id: str
    model: str
    content: list[TextBlock | ToolUseBlock]
    stop_reason: StopReason
    usage: Usage
    stop_details: dict[str, Any] | None = Field(
        None, description="the API's stop_details, e.g. {'type': 'refusal', 'category': 'cyber', 'explanation': ...}"
    )

