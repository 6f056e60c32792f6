"""The ``anthropic`` SDK's errors translated into longdoc's taxonomy, for every client of the SDK.

:class:`~longdoc.adapters.claude.ClaudeModel` (Messages, Anthropic API or Bedrock) and
:class:`~longdoc.adapters.batches.AnthropicBatches` (Message Batches) raise these for every
status and connection error the SDK raises, so no SDK class name reaches a state machine
(``statemachine/*.asl.json`` retries on ours). An HTTP 200 whose body is not JSON (a proxy's page, an SSE stream from a
gateway that streams; the SDK hands such a body back as a ``str``) is
:class:`~longdoc.core.errors.ModelUnavailable` (:func:`not_json`): retryable, since the next
attempt may reach the API. Not translated yet: a results download cut mid-stream (the HTTP
client's ``RemoteProtocolError``). What is left after the SDK's own retries maps as follows:

* HTTP 429 (``rate_limit_error``) and HTTP 529 (``overloaded_error``); Bedrock's
  ``ThrottlingException`` and ``ModelNotReadyException`` -> :class:`~longdoc.core.errors.ModelThrottled`
* connection failures, timeouts and other 5xx; Bedrock's ``ModelTimeoutException``,
  ``ModelErrorException``, ``InternalServerException`` and ``ServiceUnavailableException``
  -> :class:`~longdoc.core.errors.ModelUnavailable`
* any other 4xx (401 included) -> :class:`~longdoc.core.errors.ModelRequestError` (retrying will not help)
* an error event inside a stream (the SDK raises it with status 200) by its ``error.type``:
  ``rate_limit_error``, ``overloaded_error``, Bedrock's ``throttlingException`` /
  ``modelNotReadyException`` throttled; ``api_error``, ``timeout_error``, Bedrock's
  ``internalServerException``, ``serviceUnavailableException``, ``modelStreamErrorException``,
  ``modelTimeoutException`` unavailable, and so is an event whose type is empty: the SDK's
  event-stream decoder keeps only the names of botocore's ``ResponseStream`` shape, so Bedrock's
  ``modelNotReadyException`` frame arrives nameless; any other type a request error

Status codes and error types follow the Messages API error reference
(https://docs.anthropic.com/en/api/errors); Bedrock names its errors in the ``x-amzn-ErrorType``
header (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html).
The SDK is imported inside :func:`translated` only (it costs seconds to import).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from longdoc.core.errors import LongdocError, ModelRequestError, ModelThrottled, ModelUnavailable

if TYPE_CHECKING:  # pragma: no cover - typing only
    import anthropic

#: HTTP statuses the API uses when it is out of capacity (rate limited / overloaded).
THROTTLE_STATUSES: frozenset[int] = frozenset({429, 529})
#: Bedrock error types (``x-amzn-ErrorType``) that mean "no capacity now" / "try again later".
BEDROCK_THROTTLE_ERRORS: frozenset[str] = frozenset({"ThrottlingException", "ModelNotReadyException"})
BEDROCK_UNAVAILABLE_ERRORS: frozenset[str] = frozenset(
    {"ModelTimeoutException", "ModelErrorException", "InternalServerException", "ServiceUnavailableException",
     "ModelStreamErrorException"})
#: ``error.type`` of an error event inside a stream (after HTTP 200) that means "try again later":
#: the Anthropic API's (https://docs.anthropic.com/en/api/messages-streaming, "Error events") and,
#: capitalised, Bedrock's event-stream exception names (``throttlingException`` ...).
STREAM_THROTTLE_TYPES: frozenset[str] = frozenset({"rate_limit_error", "overloaded_error"})
STREAM_UNAVAILABLE_TYPES: frozenset[str] = frozenset({"api_error", "timeout_error"})


def status_error(exc: anthropic.APIStatusError, api: str = "Claude API") -> LongdocError:
    """The named error for an SDK status error (see the module docstring); ``api`` starts its message."""
    status = exc.status_code
    bedrock_type = _bedrock_error_type(exc)
    error_type = bedrock_type or getattr(exc, "type", None) or _body_field(exc.body, "type")
    api_message = getattr(exc, "api_message", None) or _body_field(exc.body, "message")
    if api_message is None and isinstance(exc.body, dict) and isinstance(exc.body.get("message"), str):
        api_message = exc.body["message"]  # Bedrock's error body: {"message": "..."}
    detail = f"HTTP {status}" + (f" {error_type}" if error_type else "")
    detail += f": {api_message or exc.message}"
    if status == 200:  # an error event inside a stream: its type is all there is
        detail = f"in-stream {error_type or 'error without a type'}: {api_message or exc.message}"
        bedrock_type = (error_type or "")[:1].upper() + (error_type or "")[1:]
        if error_type in STREAM_THROTTLE_TYPES:
            status = 429
        elif not error_type or error_type in STREAM_UNAVAILABLE_TYPES:
            status = 500
    if status in THROTTLE_STATUSES or bedrock_type in BEDROCK_THROTTLE_ERRORS:
        return ModelThrottled(f"{api} throttled ({detail})")
    if status >= 500 or bedrock_type in BEDROCK_UNAVAILABLE_ERRORS:
        return ModelUnavailable(f"{api} failed ({detail})")
    return ModelRequestError(f"{api} rejected the request ({detail})")


#: How many characters of a non-JSON body an error message shows.
BODY_PREVIEW_CHARS = 80


def not_json(api: str, content_type: str | None, body: object) -> ModelUnavailable:
    """The error for an HTTP 200 whose body is not the API's JSON: names the content type and
    the first :data:`BODY_PREVIEW_CHARS` characters of the body (``body`` as the SDK returned it)."""
    preview = body[:BODY_PREVIEW_CHARS] if isinstance(body, str) else type(body).__name__
    return ModelUnavailable(f"{api} answered HTTP 200 with a body that is not JSON "
                            f"(content-type {content_type or 'missing'}; starts {preview!r})")


@contextmanager
def translated(api: str) -> Iterator[None]:
    """Run the block with the SDK's status and connection errors raised as named errors instead.

    A status error becomes :func:`status_error`'s; a connection failure or timeout
    (``APIConnectionError``, ``APITimeoutError``) :class:`~longdoc.core.errors.ModelUnavailable`.
    The SDK's error stays the ``__cause__``.
    """
    import anthropic

    try:
        yield
    except anthropic.APIStatusError as exc:
        raise status_error(exc, api) from exc
    except anthropic.APIConnectionError as exc:  # includes APITimeoutError
        raise ModelUnavailable(f"{api} unreachable: {exc.message}") from exc


def _bedrock_error_type(exc: anthropic.APIStatusError) -> str | None:
    """The Bedrock error name from ``x-amzn-ErrorType`` (``Name:namespace`` -> ``Name``), if any."""
    response = getattr(exc, "response", None)
    header = response.headers.get("x-amzn-errortype") if response is not None else None
    return header.split(":", 1)[0] or None if header else None


def _body_field(body: object, field: str) -> str | None:
    """Return ``body["error"][field]`` from an Anthropic error body, if present."""
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get(field), str):
            return error[field]
    return None
