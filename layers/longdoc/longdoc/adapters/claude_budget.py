"""A Claude call within a time budget (issue 12, failure 8): retries and the waits between
them fit the caller's remaining seconds (e.g. the Lambda's remaining time).

Used by :class:`longdoc.adapters.claude.ClaudeModel` for a request with ``timeout_seconds``.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - typing only
    import anthropic

log = logging.getLogger(__name__)

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
    """Whether the SDK would retry ``exc``: 408/409/429/5xx or a connection failure."""
    import anthropic

    if isinstance(exc, anthropic.APIStatusError):
        return exc.status_code in RETRY_STATUSES or exc.status_code >= 500
    return isinstance(exc, anthropic.APIConnectionError)


def create_within(client: anthropic.Anthropic, kwargs: dict[str, Any], budget: float, max_retries: int,
                   timeout: float) -> Any:
    """``messages.create`` in at most ``budget`` seconds, retries and the waits between them included.

    Returns the SDK's raw response (``with_raw_response``: ``.headers``, ``.parse()``), so the
    caller can name the content type of a body that is not JSON.

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
            return client.with_options(timeout=max(per_attempt, 0.001),
                                       max_retries=0).messages.with_raw_response.create(**kwargs)
        except Exception as exc:
            wait = _retry_wait(attempt, exc)
            left = deadline - time.monotonic() - wait
            if not _retryable(exc) or attempt == max_retries or left < MIN_ATTEMPT_SECONDS:
                raise
            log.info("Claude call failed (%s); retry %d in %.1f s, %.1f s of its budget left",
                     type(exc).__name__, attempt + 1, wait, left)
            time.sleep(wait)
    raise AssertionError("unreachable: the last attempt returns or raises")
