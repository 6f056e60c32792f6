"""Claude adapter for the :class:`longdoc.core.ports.Model` port (Anthropic Messages API).

The ``anthropic`` SDK is imported inside :meth:`ClaudeModel.__init__` only: importing it
costs seconds, and code paths that never call Claude (ingest) must not pay for it.

Retries are the SDK's own (``max_retries``; it retries 408/409/429/5xx and dropped
connections with backoff, honouring ``retry-after-ms``/``retry-after`` headers). What is
left after those retries is mapped to longdoc's named errors, whose class names are the
Step Functions error names:

* HTTP 429 (``rate_limit_error``) and HTTP 529 (``overloaded_error``) -> :class:`ModelThrottled`
* connection failures, timeouts and other 5xx -> :class:`ModelUnavailable`
* any other 4xx -> :class:`ModelRequestError` (retrying will not help)

Status codes and error types follow the Messages API error reference
(https://docs.anthropic.com/en/api/errors).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, get_args

from longdoc.core.errors import ModelRequestError, ModelThrottled, ModelUnavailable
from longdoc.core.messages import ModelRequest, ModelResponse, StopReason, TextBlock, ToolUseBlock, Usage

if TYPE_CHECKING:  # pragma: no cover - typing only
    import anthropic
    from anthropic.types import Message as SdkMessage

log = logging.getLogger(__name__)

_STOP_REASONS: frozenset[str] = frozenset(get_args(StopReason))
#: HTTP statuses the API uses when it is out of capacity (rate limited / overloaded).
THROTTLE_STATUSES: frozenset[int] = frozenset({429, 529})


class ClaudeModel:
    """A :class:`longdoc.core.ports.Model` backed by the Anthropic Messages API.

    Args:
        api_key: Anthropic API key (see :func:`longdoc.adapters.secrets.api_key`); held by
            the SDK client only, never logged or included in ``repr``.
        model: model id sent with every call (e.g. ``"claude-sonnet-5-5"``); also
            :attr:`name`, recorded on every result.
        base_url: API root (default: the SDK's, ``https://api.anthropic.com``); tests
            point it at a loopback fake.
        max_retries: retries the SDK performs before an error reaches us (SDK default 2).
        timeout: seconds per HTTP attempt (600 s = the SDK's own default for
            non-streaming calls, below the 15-minute Lambda limit). A request's
            ``timeout_seconds`` replaces it: then the whole call, retries included, fits
            that budget (:func:`_create_within`).
    """

    name: str

    def __init__(
        self,
        api_key: str,
        model: str,
        *,
        base_url: str | None = None,
        max_retries: int = 2,
        timeout: float = 600.0,
    ) -> None:
        import anthropic  # lazy: ~2.5 s import, see module docstring

        self.name = model
        self.max_retries = max_retries
        self.timeout = timeout
        self._client: anthropic.Anthropic = anthropic.Anthropic(
            api_key=api_key,
            base_url=base_url,
            max_retries=max_retries,
            timeout=timeout,
        )

    def __repr__(self) -> str:
        return f"ClaudeModel(model={self.name!r})"

    def create(self, request: ModelRequest) -> ModelResponse:
        """Run one Messages API call and return it as a :class:`ModelResponse`.

        ``system``/``tools``/``tool_choice`` are sent as given (``cache_control`` marks
        included); empty ``system`` or ``tools`` lists are left out of the request,
        because the API rejects ``tool_choice`` without tools.

        Raises:
            ModelThrottled: HTTP 429 or 529 after the SDK's retries.
            ModelUnavailable: connection failure, timeout or other 5xx after the retries.
            ModelRequestError: any other 4xx; the message carries the status, the API's
                error type and its error message.
        """
        import anthropic  # already loaded by __init__; cheap

        kwargs: dict[str, Any] = {
            "model": self.name,
            "max_tokens": request.max_tokens,
            "messages": [m.model_dump() for m in request.messages],
        }
        if request.system:
            kwargs["system"] = request.system
        if request.tools:
            kwargs["tools"] = request.tools
            kwargs["tool_choice"] = request.tool_choice
        try:
            if request.timeout_seconds is not None:
                message = _create_within(self._client, kwargs, request.timeout_seconds, self.max_retries,
                                         self.timeout)
            else:
                message = self._client.messages.create(**kwargs)
        except anthropic.APIStatusError as exc:
            raise _map_status_error(exc) from exc
        except anthropic.APIConnectionError as exc:  # includes APITimeoutError
            raise ModelUnavailable(f"Claude API unreachable: {exc.message}") from exc
        return _to_response(message)


# --- A call within a time budget (issue 12, failure 8) -------------------------------------------

MIN_ATTEMPT_SECONDS = 1.0
"""An attempt is not started with less than this many seconds for it."""
RETRY_STATUSES: frozenset[int] = frozenset({408, 409, 429})
"""Retried statuses besides 5xx: the SDK's own choice (``anthropic._base_client._should_retry``)."""


def _retry_wait(attempt: int, exc: Exception) -> float:
    """Seconds to wait before retry ``attempt`` + 1: ``retry-after-ms`` / ``retry-after`` when the
    API sends one, else 0.5 s doubling per attempt up to 8 s (the SDK's backoff without jitter)."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    try:
        if headers.get("retry-after-ms"):
            return float(headers["retry-after-ms"]) / 1000
        if headers.get("retry-after"):
            return float(headers["retry-after"])
    except ValueError:
        pass
    return min(0.5 * 2 ** attempt, 8.0)


def _retryable(exc: Exception) -> bool:
    import anthropic

    if isinstance(exc, anthropic.APIStatusError):
        return exc.status_code in RETRY_STATUSES or exc.status_code >= 500
    return isinstance(exc, anthropic.APIConnectionError)


def _create_within(client: anthropic.Anthropic, kwargs: dict[str, Any], budget: float, max_retries: int,
                   timeout: float) -> SdkMessage:
    """``messages.create`` in at most ``budget`` seconds, retries and the waits between them included.

    The SDK's own retries are off here (each of them would get the whole timeout again, so 3
    attempts could take 3 x the budget); up to ``max_retries`` retries of a retryable failure
    (:func:`_retryable`) are made here instead. Each attempt's timeout is what is left of the
    budget (at most ``timeout``, the client's per-attempt seconds), so every attempt, and the
    wait before it, ends by the budget: the first attempt may use all of it (a slow but good
    reply is not cut short to make room for retries), and a retry is only made when at least
    :data:`MIN_ATTEMPT_SECONDS` are left for it. Otherwise the last error is raised: the state
    machine retries the session later, from what is stored. Raises the SDK's
    ``APIStatusError`` / ``APIConnectionError``.
    """
    deadline = time.monotonic() + budget
    for attempt in range(max_retries + 1):
        per_attempt = min(timeout, deadline - time.monotonic())
        try:
            return client.with_options(timeout=max(per_attempt, 0.001), max_retries=0).messages.create(**kwargs)
        except Exception as exc:
            wait = _retry_wait(attempt, exc)
            left = deadline - time.monotonic() - wait
            if not _retryable(exc) or attempt == max_retries or left < MIN_ATTEMPT_SECONDS:
                raise
            log.info("Claude call failed (%s); retry %d in %.1f s, %.1f s of its budget left",
                     type(exc).__name__, attempt + 1, wait, left)
            time.sleep(wait)
    raise AssertionError("unreachable: the last attempt returns or raises")


def _map_status_error(exc: anthropic.APIStatusError) -> Exception:
    """Translate an SDK status error into longdoc's error taxonomy (see module docstring)."""
    status = exc.status_code
    error_type = getattr(exc, "type", None) or _body_field(exc.body, "type")
    api_message = getattr(exc, "api_message", None) or _body_field(exc.body, "message")
    detail = f"HTTP {status}" + (f" {error_type}" if error_type else "")
    detail += f": {api_message or exc.message}"
    if status in THROTTLE_STATUSES:
        return ModelThrottled(f"Claude API throttled ({detail})")
    if status >= 500:
        return ModelUnavailable(f"Claude API failed ({detail})")
    return ModelRequestError(f"Claude API rejected the request ({detail})")


def _body_field(body: object, field: str) -> str | None:
    """Return ``body["error"][field]`` from an Anthropic error body, if present."""
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get(field), str):
            return error[field]
    return None


def _to_response(message: SdkMessage) -> ModelResponse:
    """Convert an SDK ``Message`` into our :class:`ModelResponse`.

    Keeps ``text`` and ``tool_use`` blocks in order and drops every other block type
    (thinking, server tools, ...). An unknown or missing ``stop_reason`` becomes
    ``"end_turn"`` with a warning; ``None`` cache token counts become 0; ``stop_details``
    (a refusal's ``category`` and ``explanation``) is kept as a dict.
    """
    content: list[TextBlock | ToolUseBlock] = []
    for block in message.content:
        if block.type == "text":
            content.append(TextBlock(text=block.text))
        elif block.type == "tool_use":
            content.append(ToolUseBlock(id=block.id, name=block.name, input=dict(block.input)))
    stop_reason = message.stop_reason
    if stop_reason not in _STOP_REASONS:
        log.warning("unknown stop_reason %r from Claude; treating it as end_turn", stop_reason)
        stop_reason = "end_turn"
    usage = message.usage
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
        ),
    )
