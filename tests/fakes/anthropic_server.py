"""A loopback fake of the Anthropic Messages API (``POST /v1/messages``) for tests.

It speaks enough of the wire format for the real ``anthropic`` SDK: success bodies carry
``id``, ``type="message"``, ``role``, ``model``, ``content``, ``stop_reason``,
``stop_sequence`` and ``usage``; errors use the API's error shape
``{"type": "error", "error": {"type": ..., "message": ...}}`` (shapes from
https://docs.anthropic.com/en/api/messages and https://docs.anthropic.com/en/api/errors).

Usage::

    with FakeAnthropic() as fake:
        fake.enqueue(error_reply(429, retry_after_ms=1), message_reply([text_block("hi")]))
        model = ClaudeModel("test-key-not-real", "claude-x", base_url=fake.base_url)
        ...
        assert len(fake.requests) == 2

Each request takes the next scripted reply; when the queue is empty the ``responder``
(``responder(request_json) -> Reply``) computes one; without a responder the fake answers
HTTP 500 ``"no scripted response"``. The server, request log and connection handling are
those of :class:`tests.fakes.loopback.LoopbackFake`; only the answers are scripted here.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import math
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from tests.fakes.loopback import LoopbackFake, RecordedRequest

#: ``error.type`` the API uses for each HTTP status (https://docs.anthropic.com/en/api/errors).
ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}

_ids = itertools.count(1)


@dataclass(frozen=True)
class Reply:
    """One scripted answer.

    ``status``/``body``/``headers`` form the HTTP response (``body`` is JSON-encoded);
    ``delay`` is seconds to wait before answering; ``drop`` closes the connection without
    any response (the client sees a dropped connection). A success body whose ``model``
    is ``None`` gets the request's ``model`` filled in. ``stream_error`` (``(type, message)``,
    streamed requests only): after ``stream_error_after`` events of the stream, an error event
    arrives inside it and the stream ends (:func:`stream_error_reply`).
    """

    status: int = 200
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False
    stream_error: tuple[str, str] | None = None
    stream_error_after: int = 4


Responder = Callable[[Any], Reply]


def text_block(text: str) -> dict[str, Any]:
    """A ``text`` content block."""
    return {"type": "text", "text": text}


def tool_use_block(name: str, input: dict[str, Any], id: str | None = None) -> dict[str, Any]:
    """A ``tool_use`` content block; ``id`` defaults to a fresh ``toolu_fake_N``."""
    return {"type": "tool_use", "id": id or f"toolu_fake_{next(_ids):04d}", "name": name, "input": input}


def usage_json(
    input_tokens: int = 10,
    output_tokens: int = 5,
    cache_creation_input_tokens: int | None = 0,
    cache_read_input_tokens: int | None = 0,
) -> dict[str, Any]:
    """A ``usage`` object (token counts); pass ``None`` to send JSON null for a cache field."""
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": cache_creation_input_tokens,
        "cache_read_input_tokens": cache_read_input_tokens,
    }


def message_reply(
    content: list[dict[str, Any]],
    stop_reason: str | None = "end_turn",
    usage: dict[str, Any] | None = None,
    *,
    model: str | None = None,
    id: str | None = None,
    delay: float = 0.0,
    stop_details: dict[str, Any] | None = None,
) -> Reply:
    """A 200 reply carrying a Messages API ``message``.

    ``usage`` defaults to :func:`usage_json`; ``model=None`` echoes the request's model;
    ``stop_details`` (e.g. ``{"type": "refusal", "category": "cyber", "explanation": None}``)
    is sent when given.
    """
    body = {
        "id": id or f"msg_fake_{next(_ids):04d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage if usage is not None else usage_json(),
    }
    if stop_details is not None:
        body["stop_details"] = stop_details
    return Reply(status=200, body=body, delay=delay)


def error_reply(
    status: int,
    message: str = "scripted error",
    *,
    error_type: str | None = None,
    retry_after_ms: int | None = None,
    delay: float = 0.0,
) -> Reply:
    """An error reply in the API's shape; ``error_type`` defaults from :data:`ERROR_TYPES`.

    ``retry_after_ms`` sets the ``retry-after-ms`` header, which the SDK obeys, so retries
    in tests take milliseconds instead of the SDK's 0.5-8 s backoff.
    """
    kind = error_type or ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    headers = {"retry-after-ms": str(retry_after_ms)} if retry_after_ms is not None else {}
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return Reply(status=status, body=body, headers=headers, delay=delay)


def stream_error_reply(reply: Reply, error_type: str, message: str = "scripted in-stream error", *,
                       after_events: int = 4) -> Reply:
    """``reply`` streamed with an error inside the stream after its HTTP 200: ``after_events`` events
    (``message_start``, ``content_block_start``, text deltas ...), then the error, then the end.

    On the Messages API the error is an SSE ``event: error`` with ``{"type": "error", "error": {"type":
    error_type, "message"}}`` (``overloaded_error``, ``api_error``; "Error events",
    https://docs.anthropic.com/en/api/messages-streaming); on Bedrock's
    ``InvokeModelWithResponseStream`` an event-stream ``exception`` message of that type
    (``throttlingException`` ...; :mod:`tests.fakes.event_stream`).
    """
    return replace(reply, stream_error=(error_type, message), stream_error_after=after_events)


def dropped_connection(delay: float = 0.0) -> Reply:
    """A reply that closes the socket without answering (client sees a connection error)."""
    return Reply(drop=True, delay=delay)


class PromptCache:
    """Anthropic's prompt cache, computed from a request's ``cache_control`` breakpoints.

    The prompt is read as the API caches it: the tools, then the system blocks, then each
    message's content blocks (a string content is one block), in that order; a cache prefix
    runs from the start up to and including a block marked with ``cache_control``
    (https://platform.claude.com/docs/en/build-with-claude/prompt-caching). Each block counts
    ceil(len(its JSON without cache_control) / 4) tokens. For one request:

    * ``cache_read_input_tokens``: the tokens of the longest breakpoint prefix already cached
      (same blocks, byte for byte);
    * ``cache_creation_input_tokens``: the tokens from there to the last breakpoint, when that
      prefix is not cached and reaches ``min_tokens`` (below the minimum nothing is cached);
    * ``input_tokens``: the rest. Every breakpoint prefix of at least ``min_tokens`` is then cached.

    Simplifications: no TTL, no 20-block lookback limit, one cache for every model.
    """

    def __init__(self, min_tokens: int = 1024) -> None:
        self.min_tokens = min_tokens
        self._cached: dict[str, int] = {}

    @staticmethod
    def _blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
        blocks = [*body.get("tools", []), *(body.get("system") or [])]
        for message in body.get("messages", []):
            content = message["content"]
            blocks.extend([{"type": "text", "text": content}] if isinstance(content, str) else content)
        return blocks

    def usage(self, body: dict[str, Any]) -> dict[str, int]:
        """The input-side usage of ``body`` (see the class docstring); updates the cache."""
        digest, total, breakpoints = hashlib.sha256(), 0, []
        for block in self._blocks(body):
            plain = {k: v for k, v in block.items() if k != "cache_control"}
            text = json.dumps(plain, sort_keys=True, ensure_ascii=False)
            digest.update(text.encode())
            total += math.ceil(len(text) / 4)
            if "cache_control" in block:
                breakpoints.append((digest.copy().hexdigest(), total))
        read = max((tokens for key, tokens in breakpoints if key in self._cached), default=0)
        last_key, last_tokens = breakpoints[-1] if breakpoints else ("", 0)
        creation = last_tokens - read if last_tokens >= self.min_tokens and last_key not in self._cached else 0
        for key, tokens in breakpoints:
            if tokens >= self.min_tokens:
                self._cached[key] = tokens
        return {"input_tokens": total - read - creation, "cache_read_input_tokens": read,
                "cache_creation_input_tokens": creation}


class FakeAnthropic(LoopbackFake):
    """Loopback HTTP server faking ``POST /v1/messages``; starts on construction.

    Attributes:
        base_url: ``http://127.0.0.1:<port>`` to pass as the SDK's ``base_url``.
        requests: every request received, in arrival order
            (:class:`~tests.fakes.loopback.RecordedRequest`; ``api_key`` gives the key sent).
        responder: optional ``responder(request_json) -> Reply`` used when the queue is empty.
        cache: optional :class:`PromptCache`; when set, every successful reply's input-side
            ``usage`` is computed from the request's cache breakpoints instead of scripted.

    Use as a context manager or call :meth:`close`. Thread-safe: the server runs in a
    daemon thread and handles each connection in its own thread.
    """

    name = "fake-anthropic"

    def __init__(self, responder: Responder | None = None, cache: PromptCache | None = None) -> None:
        self.responder: Responder | None = responder
        self.cache: PromptCache | None = cache
        self._queue: deque[Reply] = deque()
        super().__init__()
        self.base_url = self.url

    def enqueue(self, *replies: Reply) -> None:
        """Append scripted replies; each request consumes one, in order."""
        with self.lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        """Number of scripted replies not yet consumed."""
        with self.lock:
            return len(self._queue)

    def reply(self, request: RecordedRequest) -> Reply:
        """The next scripted reply, else the responder's; a success ``message`` whose
        ``model`` is None gets the request's model. Anything but ``POST /v1/messages`` is a
        404; a responder that raises gives a 500."""
        try:
            answer = self._scripted(request)
        except Exception as exc:  # a broken responder should fail loudly, not hang
            answer = error_reply(500, f"fake responder raised {exc!r}")
        payload = answer.body
        if payload is not None and payload.get("type") == "message" and payload.get("model") is None:
            request_model = request.body.get("model") if isinstance(request.body, dict) else None
            answer = replace(answer, body={**payload, "model": request_model or "claude-fake"})
        payload = answer.body
        if self.cache is not None and payload is not None and payload.get("type") == "message":
            with self.lock:
                usage = {**payload.get("usage", {}), **self.cache.usage(request.body)}
            answer = replace(answer, body={**payload, "usage": usage})
        return answer

    def response_headers(self) -> dict[str, str]:
        """A fresh ``request-id`` on every answer, as the API sends."""
        return {"request-id": f"req_fake_{next(_ids):04d}"}

    def _scripted(self, request: RecordedRequest) -> Reply:
        with self.lock:
            if request.method != "POST" or request.path != "/v1/messages":
                return error_reply(404, f"fake serves POST /v1/messages only, not {request.method} {request.path}")
            if self._queue:
                return self._queue.popleft()
            responder = self.responder
        if responder is not None:
            return responder(request.body)
        return error_reply(500, "no scripted response")


# --- Streaming (SSE): requests with "stream": true get the reply as Messages API server-sent events ---

STREAM_CHUNK_WORDS = 3
"""Words per ``text_delta`` event when a scripted text block is streamed."""


def sse_events(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The event sequence the API streams for ``message`` (https://docs.anthropic.com/en/api/messages-streaming).

    ``message_start`` (empty content, input usage), per block ``content_block_start`` /
    ``content_block_delta`` (``text_delta`` a few words at a time, one ``input_json_delta``
    for a tool call, ``thinking_delta`` + ``signature_delta`` for a thinking block; a
    ``redacted_thinking`` block comes whole in its start event) / ``content_block_stop``, then ``message_delta`` (stop reason, output
    tokens) and ``message_stop``.
    """
    usage = message.get("usage") or usage_json()
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {**usage, "output_tokens": 1}}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message.get("content") or []):
        if block["type"] == "thinking":
            # Thinking streams as thinking_delta(s) then one signature_delta (THINK page, streaming)
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": {"type": "thinking", "thinking": "",
                                                                     "signature": ""}}))
            if block.get("thinking"):
                events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                    "type": "thinking_delta", "thinking": block["thinking"]}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                "type": "signature_delta", "signature": block.get("signature", "")}}))
        elif block["type"] == "redacted_thinking":
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": block}))
        elif block["type"] == "text":
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": {"type": "text", "text": ""}}))
            words = re.findall(r"\s*\S+\s*", block["text"]) or [""]
            for i in range(0, len(words), STREAM_CHUNK_WORDS):
                events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                    "type": "text_delta", "text": "".join(words[i:i + STREAM_CHUNK_WORDS])}}))
        else:
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": {**block, "input": {}}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(block.get("input") or {})}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": message.get("stop_reason"),
                                                                        "stop_sequence": None},
                                     "usage": {"output_tokens": usage.get("output_tokens", 0)}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _streaming_handler(base: type, fake: FakeAnthropic) -> type:
    """A request handler that answers ``"stream": true`` requests with SSE (chunked) and the rest as ``base`` does."""

    class StreamingHandler(base):  # type: ignore[misc, valid-type]
        def _handle(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except json.JSONDecodeError:
                body = None
            path = urlsplit(self.path).path
            eventstream = path.endswith("/invoke-with-response-stream")  # Bedrock InvokeModel, streamed
            if not (eventstream or (isinstance(body, dict) and body.get("stream"))):
                self.rfile = io.BytesIO(raw)
                return super()._handle()
            recorded = RecordedRequest(self.command, path, {},
                                       {k.lower(): v for k, v in self.headers.items()}, body, len(raw), None, raw)
            with fake.lock:
                fake.requests.append(recorded)
            answer = fake.reply(recorded)
            if answer.delay:
                time.sleep(answer.delay)
            ok = answer.status == 200 and isinstance(answer.body, dict) and answer.body.get("type") == "message"
            recorded.answered = answer.status
            if not ok:
                data = json.dumps(answer.body or {}).encode()
                self.send_response(answer.status)
                for name, value in {"content-type": "application/json", "content-length": str(len(data)),
                                    **fake.response_headers(), **answer.headers}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
                return
            from tests.fakes import event_stream

            self.send_response(200)
            content_type = event_stream.CONTENT_TYPE if eventstream else "text/event-stream"
            for name, value in {"content-type": content_type, "transfer-encoding": "chunked",
                                "cache-control": "no-cache", **fake.response_headers()}.items():
                self.send_header(name, value)
            self.end_headers()
            events = sse_events(answer.body or {})
            if answer.stream_error is not None:
                error_type, text = answer.stream_error
                events = [*events[:answer.stream_error_after],
                          ("error", {"type": "error", "error": {"type": error_type, "message": text}})]
            for event, data_json in events:
                if eventstream:
                    payload = (event_stream.exception(error_type, text) if event == "error"
                               else event_stream.chunk(data_json))
                else:
                    payload = f"event: {event}\ndata: {json.dumps(data_json)}\n\n".encode()
                self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
                self.wfile.flush()
                fake.sent_events.append(event)
                if fake.stream_delay:
                    time.sleep(fake.stream_delay)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return StreamingHandler


def enable_streaming(fake: FakeAnthropic, delay: float = 0.0) -> FakeAnthropic:
    """Let ``fake`` answer streamed requests (``"stream": true``) with SSE; ``delay`` seconds between events.

    ``fake.sent_events`` records the event names sent, in order. Returns ``fake``.
    """
    fake.stream_delay = delay
    fake.sent_events = []
    fake._server.RequestHandlerClass = _streaming_handler(fake._server.RequestHandlerClass, fake)
    return fake
