"""Voyage AI REST requests over plain HTTPS: the retry and key-rotation loop both SDK-free adapters share.

The adapters are embeddings (:mod:`longdoc.adapters.voyage_http`) and rerank
(:mod:`longdoc.adapters.voyage_rerank`); each says only what it sends and how it reads the answer.

Why no ``voyageai`` SDK: ``import voyageai`` loads numpy, pillow, tokenizers, huggingface-hub
and langchain (about 130 MB unzipped in a Lambda function, ``docs/operations.md``); one JSON
POST needs the standard library and ``tenacity`` for the retry loop.

Requests: ``POST {base_url}/{endpoint}`` with ``Authorization: Bearer <key>`` and a JSON body;
``base_url`` defaults to ``https://api.voyageai.com/v1`` (https://docs.voyageai.com/reference/embeddings-api,
https://docs.voyageai.com/reference/reranker-api). Errors are JSON ``{"detail": message}``.

Retries: HTTP 429, 500, 502, 503, 504, timeouts and dropped connections are retried with
exponential backoff and full jitter (tenacity's ``wait_exponential_jitter``, multiplier and jitter
``retry_initial``, capped at ``retry_max`` seconds) for ``max_attempts`` attempts in all, then
raise the caller's *unavailable* error; any other 4xx raises the caller's *rejected* error at
once, with Voyage's ``detail`` (at most 300 characters). The key is sent in the header only,
never logged or put in an error message.

Key rotation: ``api_key`` may be a key source (``source(refresh=False) -> str``, e.g.
:class:`longdoc.adapters.secrets.SecretKey`); every request asks it for the current key, and a
401 asks again with ``refresh=True`` and retries once when the key changed.
"""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any, TypeVar

from longdoc.core.errors import LongdocError

T = TypeVar("T")

VOYAGE_BASE_URL = "https://api.voyageai.com/v1"
#: HTTP statuses retried as transient (rate limit and server errors).
TRANSIENT_STATUSES = frozenset({429, 500, 502, 503, 504})


class _Transient(Exception):
    """A retryable failure (status or connection); carries a key-free description. ``unreached``: no
    HTTP answer came (refused, timed out, dropped), so the endpoint or the network is the suspect."""

    def __init__(self, message: str, unreached: bool = False) -> None:
        super().__init__(message)
        self.unreached = unreached


class _Unauthorized(Exception):
    """HTTP 401: the key was rejected (maybe rotated)."""


class VoyageRest:
    """POSTs JSON to one Voyage endpoint with retries and key rotation; see the module docstring.

    Args:
        api_key: Voyage API key (header only), or a key source.
        endpoint: path below the API root (``"embeddings"``, ``"rerank"``).
        label: what a failure names (``"embeddings"`` -> ``"Voyage embeddings failed after ..."``).
        unavailable: error raised when the retries are spent (e.g. ``EmbeddingUnavailable``).
        rejected: error raised for a 4xx other than 429 and for a key Voyage keeps rejecting.
        max_attempts: attempts per request, retries included.
        timeout: seconds per HTTP request, whole: connecting, sending, the status line and headers,
            the body and an error's body together (a server that trickles any of them is a timeout
            once they are spent; the exchange runs on a daemon thread that is left to its socket
            timeout, so a caller never waits longer).
        base_url: API root including ``/v1`` (tests: a loopback fake).
        retry_initial, retry_max: backoff multiplier and cap in seconds (full jitter).
    """

    def __init__(self, api_key: str | Callable[..., str], endpoint: str, *, label: str,
                 unavailable: type[LongdocError], rejected: type[LongdocError], max_attempts: int = 5,
                 timeout: float = 60, base_url: str | None = None, retry_initial: float = 1.0,
                 retry_max: float = 20.0) -> None:
        self.key_source: Callable[..., str] = (lambda refresh=False: api_key) if isinstance(api_key, str) else api_key
        self.url = (base_url or VOYAGE_BASE_URL).rstrip("/") + "/" + endpoint
        self.label = label
        self.max_attempts = max_attempts
        self._unavailable = unavailable
        self._rejected = rejected
        self._timeout = timeout
        self._retry_initial = retry_initial
        self._retry_max = retry_max

    def post(self, payload: dict[str, Any], about: str = "") -> dict[str, Any]:
        """POST ``payload`` (retried as the module docstring says) and return the parsed JSON answer.

        ``about`` is appended to a rejection's subject (``"Voyage rejected the request{about}: HTTP
        400: ..."``), e.g. the model and the number of inputs. Raises the *unavailable* or
        *rejected* error given to the constructor.
        """
        from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential_jitter

        body = json.dumps(payload).encode("utf-8")
        answer: dict[str, Any] = {}
        try:
            for attempt in Retrying(reraise=True, stop=stop_after_attempt(self.max_attempts),
                                    wait=wait_exponential_jitter(multiplier=self._retry_initial, max=self._retry_max,
                                                                 jitter=self._retry_initial),
                                    retry=retry_if_exception_type(_Transient)):
                with attempt:
                    answer = self._post_with_current_key(body, about)
        except _Transient as exc:
            hint = f" (no answer from {self.url}: check LONGDOC_VOYAGE_BASE_URL and the network)" if exc.unreached else ""
            raise self._unavailable(f"Voyage {self.label} failed after {self.max_attempts} attempts: {exc}{hint}") from exc
        return answer

    def _post_with_current_key(self, body: bytes, about: str) -> dict[str, Any]:
        """POST with the source's current key; on 401, read the key again and retry once if it changed."""
        key = self._header_safe(self.key_source())
        try:
            return self._post(body, key, about)
        except _Unauthorized:
            fresh = self._header_safe(self.key_source(refresh=True))
            if fresh == key:
                raise self._rejected("Voyage rejected the API key: HTTP 401") from None
            try:
                return self._post(body, fresh, about)
            except _Unauthorized:
                raise self._rejected("Voyage rejected the API key: HTTP 401") from None

    def _header_safe(self, key: str) -> str:
        """``key`` stripped of surrounding whitespace; the *rejected* error (never naming the key) when it
        holds a character an HTTP header cannot carry (a line break or control character, or one
        outside Latin-1: RFC 9110 section 5.5), which http.client would refuse with the key in its message."""
        key = key.strip()
        if not key.isprintable() or not key.isascii() and any(ord(ch) > 0xFF for ch in key):
            raise self._rejected("the Voyage API key holds a line break, control or non-Latin-1 character; "
                                 "set the key again (VOYAGE_API_KEY or the Voyage secret)")
        return key

    def _post(self, body: bytes, key: str, about: str) -> dict[str, Any]:
        """POST ``body``; the parsed answer, or _Transient / _Unauthorized / the rejected error."""
        request = urllib.request.Request(self.url, data=body, method="POST", headers={
            "Authorization": f"Bearer {key}", "Content-Type": "application/json",
            "Accept": "application/json", "User-Agent": "longdoc"})
        try:
            raw, exc, detail = _within(lambda: _exchange(request, self._timeout), self._timeout)
            if exc is not None:
                raise exc
        except urllib.error.HTTPError as exc:
            if exc.code == 401:
                raise _Unauthorized() from exc
            if exc.code in TRANSIENT_STATUSES:
                raise _Transient(f"HTTP {exc.code}: {detail}") from exc
            raise self._rejected(f"Voyage rejected the request{about}: HTTP {exc.code}: {detail}") from exc
        except (urllib.error.URLError, TimeoutError, socket.timeout, ConnectionError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise _Transient(f"{type(exc).__name__}: {reason}", unreached=True) from exc
        try:
            answer = json.loads(raw)
        except ValueError:  # JSONDecodeError, UnicodeDecodeError: e.g. a proxy's HTML login page
            snippet = raw[:80].decode("utf-8", errors="replace")
            raise self._rejected(f"Voyage {self.label} answered{about} with a body that is not JSON "
                                 f"(is LONGDOC_VOYAGE_BASE_URL right?): {snippet!r}") from None
        if not isinstance(answer, dict):
            raise self._rejected(f"Voyage answered {type(answer).__name__}, not a JSON object")
        return answer


def _exchange(request: urllib.request.Request, timeout: float) -> tuple[bytes, urllib.error.HTTPError | None, str]:
    """One request: ``(body, None, "")``, or ``(b"", the HTTPError, its detail)`` for an error status (its
    body read here, inside the same time limit); other errors raise."""
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - https or test URL
            return response.read(), None, ""
    except urllib.error.HTTPError as exc:
        return b"", exc, _detail(exc)


def _within(call: Callable[[], T], seconds: float) -> T:
    """``call()``'s result, or :class:`TimeoutError` when it has not returned within ``seconds``. The call
    runs on a daemon thread: a socket timeout bounds each read, not a server sending a byte at a time,
    and the caller must not wait past its own time limit (``POST /triage`` answers within API Gateway's
    29 s). The abandoned thread ends with its socket; being a daemon, it never holds the process open."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    worker = threading.Thread(target=run, name="voyage-request", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise TimeoutError(f"no whole answer within {seconds:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _detail(exc: urllib.error.HTTPError) -> str:
    """The ``detail`` of a Voyage error body, else the HTTP reason (at most 300 characters)."""
    try:
        payload = json.loads(exc.read() or b"{}")
    except (ValueError, OSError):
        payload = {}
    detail = payload.get("detail") if isinstance(payload, dict) else None
    return str(detail or exc.reason)[:300]
