"""A streamed Messages API call with its retries inside the caller's time budget (issue 28).

Used by :meth:`longdoc.adapters.claude.ClaudeModel.stream` (the summaries' final synthesis). An
error can arrive *inside* a stream after its HTTP 200:

* Anthropic API: an SSE ``event: error`` with ``{"type": "error", "error": {"type": "overloaded_error"
  | "api_error" | ...}}`` ("Error events", https://docs.anthropic.com/en/api/messages-streaming);
* Bedrock ``InvokeModelWithResponseStream``: an event-stream ``exception`` frame
  (``throttlingException``, ``serviceUnavailableException``, ``internalServerException``,
  ``modelStreamErrorException``, ``modelTimeoutException``, ``validationException``; the
  ``ResponseStream`` members of
  https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModelWithResponseStream.html),
  which the SDK turns into the same error event.

The SDK raises those as a status error with status 200; :func:`longdoc.adapters.anthropic_errors.status_error`
classifies them by their type. :func:`stream_within` retries the retryable ones
(:class:`~longdoc.core.errors.ModelThrottled`, :class:`~longdoc.core.errors.ModelUnavailable`, as an
HTTP error before the stream or a dropped connection) up to ``max_retries`` times, 0.5 s doubling
(at most 8 s, the SDK's backoff without jitter) between attempts, each attempt's timeout what is
left of the budget, and never starts one with less than
:data:`~longdoc.adapters.claude_budget.MIN_ATTEMPT_SECONDS` left. The text of a failed attempt is
void: when it had sent text, the sink is told (``on_text.discard(reason)`` when the sink has that
method, :class:`longdoc.core.ports.TextSink`) before the next attempt's text, or before the error
is raised, so a printer never shows it as part of the answer. The SDK's own retries are off here
(each would get the whole timeout again).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from longdoc.adapters.anthropic_errors import status_error
from longdoc.adapters.claude_budget import MIN_ATTEMPT_SECONDS
from longdoc.core.errors import LongdocError, ModelThrottled, ModelUnavailable

log = logging.getLogger(__name__)


def _discard(on_text: Callable[[str], None], reason: str) -> None:
    """Tell a sink with a ``discard`` method that the text it got from the failed attempt is void."""
    discard = getattr(on_text, "discard", None)
    if callable(discard):
        discard(reason)


def _attempt(client: Any, kwargs: dict[str, Any], on_text: Callable[[str], None],
             api: str) -> tuple[Any, LongdocError | None, bool]:
    """One streamed attempt: ``(final message, None, sent)`` or ``(None, the named error, sent)``;
    ``sent`` tells whether ``on_text`` got any text. A 401 is raised unchanged (the caller's key rotation)."""
    import anthropic

    sent = False
    error: LongdocError
    cause: Exception
    try:
        with client.messages.stream(**kwargs) as events:
            for text in events.text_stream:
                sent = True
                on_text(text)
            return events.get_final_message(), None, sent
    except anthropic.AuthenticationError:
        raise
    except anthropic.APIStatusError as exc:
        error, cause = status_error(exc, api), exc
    except anthropic.APIConnectionError as exc:  # includes APITimeoutError
        error, cause = ModelUnavailable(f"{api} unreachable: {exc.message}"), exc
    except Exception as exc:  # the HTTP client's error for a stream cut mid-way (not wrapped by the SDK)
        if type(exc).__module__.split(".")[0] not in ("httpx", "httpx2", "httpcore"):
            raise
        error, cause = ModelUnavailable(f"{api} stream broke off: {type(exc).__name__}: {exc}"), exc
    error.__cause__ = cause
    return None, error, sent


def stream_within(client: Any, kwargs: dict[str, Any], on_text: Callable[[str], None], *, budget: float | None,
                  max_retries: int, api: str) -> Any:
    """``messages.stream(**kwargs)`` on ``client``, retried as the module docstring says; returns the SDK's final message.

    ``budget``: seconds for every attempt and wait together (None: the client's timeout per attempt,
    no overall bound). ``on_text`` gets each text delta of the attempt that is running.

    Raises:
        anthropic.AuthenticationError: unchanged (the caller reads the key again and retries once).
        ModelThrottled / ModelUnavailable: what is left after the retries, or when the budget is spent.
        ModelRequestError: any other error (an in-stream ``validationException`` / ``invalid_request_error``
            included), at once.
    """
    started = time.monotonic()
    for attempt in range(max_retries + 1):
        left = None if budget is None else budget - (time.monotonic() - started)
        options: dict[str, Any] = {"max_retries": 0}
        if left is not None:
            options["timeout"] = max(left, 0.001)
        message, error, sent = _attempt(client.with_options(**options), kwargs, on_text, api)
        if error is None:
            return message
        pause = min(0.5 * 2 ** attempt, 8.0)
        retryable = isinstance(error, ModelThrottled | ModelUnavailable)
        out_of_time = budget is not None and time.monotonic() - started + pause + MIN_ATTEMPT_SECONDS > budget
        if sent:
            _discard(on_text, str(error))
        if not retryable or attempt == max_retries or out_of_time:
            raise error
        log.warning("streamed call failed (%s); attempt %d of %d in %.1f s, its text discarded", error,
                    attempt + 2, max_retries + 1, pause)
        time.sleep(pause)
    raise AssertionError("unreachable: the last attempt returns or raises")  # pragma: no cover
