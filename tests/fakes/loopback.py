"""A small loopback HTTP server base for API fakes, with fault injection and a request log.

Subclasses implement :meth:`LoopbackFake.route` (method, path, query, parsed JSON body ->
status and JSON body). Faults are injected per request, in order, before routing::

    fake.inject(status(429), status(500), slow(0.2), drop())

Each queued fault is consumed by one request (``slow`` then answers normally after the
delay). ``fake.requests`` records every request with its raw body size in bytes, so tests
can assert on batch sizes and payload bytes. Only 127.0.0.1 is bound (port chosen by the OS).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True)
class Fault:
    """One injected misbehaviour: an HTTP ``status`` with ``body``, a ``delay``, or a dropped connection.

    ``status=None`` means "answer normally" (used with ``delay`` for slow responses);
    ``drop=True`` closes the socket without any response; ``raw`` is sent as the body as it is
    (with ``content-type: text/html``) instead of JSON.
    """

    status: int | None = None
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False
    raw: bytes | None = None
    drip: float = 0.0
    """Seconds between the body's bytes: headers at once, then the body a byte at a time (a server that
    keeps a connection alive without ever finishing its answer)."""
    drip_head: bool = False
    """With ``drip``: the status line and headers go a byte at a time too."""


def status(code: int, message: str = "injected error", headers: dict[str, str] | None = None) -> Fault:
    """An error answer with HTTP ``code`` and a JSON ``{"detail"/"message": ...}`` body."""
    return Fault(status=code, body={"detail": message, "message": message, "code": code},
                 headers=headers or {})


def not_json(code: int = 200, text: str = "<html>proxy login</html>") -> Fault:
    """An answer with HTTP ``code`` whose body is ``text``, not JSON (a proxy's page, say)."""
    return Fault(status=code, raw=text.encode("utf-8"))


def slow(seconds: float) -> Fault:
    """Answer normally after ``seconds``."""
    return Fault(delay=seconds)


def drip(seconds: float, head: bool = False, fault: Fault | None = None) -> Fault:
    """Answer normally (or as ``fault``, e.g. ``status(503)``), but send the body one byte every ``seconds``
    after the headers; with ``head``, the status line and headers too."""
    base = fault or Fault()
    return Fault(status=base.status, body=base.body, headers=base.headers, raw=base.raw, drip=seconds, drip_head=head)


def drop(delay: float = 0.0) -> Fault:
    """Close the connection without answering (the client sees a dropped connection)."""
    return Fault(drop=True, delay=delay)


@dataclass
class RecordedRequest:
    """A request the fake received: method, path (no query), query dict, JSON body, raw byte size.

    Recorded on arrival; ``answered`` is the HTTP status sent, filled in when answered
    (None for a dropped connection or a reply still being delayed); ``raw`` is the body's
    bytes as received (a signature check needs them exactly).
    """

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    size: int
    answered: int | None = None
    raw: bytes = field(default=b"", repr=False)

    @property
    def api_key(self) -> str | None:
        """The API key the client sent: ``x-api-key``, ``api-key``, else an ``authorization:
        Bearer`` token (which header carries it depends on the SDK and its version)."""
        for name in ("x-api-key", "api-key"):
            if name in self.headers:
                return self.headers[name]
        scheme, _, token = self.headers.get("authorization", "").partition(" ")
        return token if scheme.lower() == "bearer" and token else None


class LoopbackFake:
    """Threaded HTTP server on 127.0.0.1 with a fault queue; starts on construction.

    Attributes:
        url: ``http://127.0.0.1:<port>``.
        requests: every request received, in arrival order (:class:`RecordedRequest`).
    """

    name = "fake"

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._faults: deque[Fault] = deque()
        self.lock = threading.RLock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._server.daemon_threads = True
        host, port = self._server.server_address[:2]
        self.url = f"http://{host}:{port}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name=self.name, daemon=True)
        self._thread.start()

    # -- test controls ------------------------------------------------------------------

    def inject(self, *faults: Fault) -> None:
        """Queue faults; each of the next requests consumes one, in order."""
        with self.lock:
            self._faults.extend(faults)

    @property
    def pending_faults(self) -> int:
        """Number of injected faults not yet consumed."""
        with self.lock:
            return len(self._faults)

    def calls(self, method: str, path: str) -> list[RecordedRequest]:
        """The recorded requests for one endpoint."""
        with self.lock:
            return [r for r in self.requests if r.method == method and r.path == path]

    def close(self) -> None:
        """Stop the server and free the port (idempotent)."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()

    def __enter__(self) -> LoopbackFake:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- for subclasses -----------------------------------------------------------------

    def route(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, Any]:
        """Answer one request: return ``(status, json_body)``."""
        raise NotImplementedError

    def reply(self, request: RecordedRequest) -> Fault:
        """The whole answer to one request (status, JSON body, headers, delay, drop).

        Here: the next injected fault (its delay spent first, so a ``slow`` fault delays the
        routing itself), else :meth:`route`'s answer; a fake that scripts whole answers
        overrides this. A route that raises answers 500, so a broken fake fails loudly.
        """
        fault = self._next_fault()
        if fault is not None and fault.delay:
            time.sleep(fault.delay)
        if fault is not None and (fault.drop or fault.status is not None):
            return Fault(status=fault.status, body=fault.body, headers=fault.headers, drop=fault.drop, raw=fault.raw,
                         drip=fault.drip, drip_head=fault.drip_head)
        try:
            code, payload = self.route(request.method, request.path, request.query, request.body)
        except Exception as exc:
            code, payload = 500, {"message": f"fake raised {exc!r}"}
        return Fault(status=code, body=payload, drip=fault.drip if fault is not None else 0.0,
                     drip_head=fault.drip_head if fault is not None else False)

    def response_headers(self) -> dict[str, str]:
        """Headers added to every answer that is sent (none here)."""
        return {}

    def _next_fault(self) -> Fault | None:
        with self.lock:
            return self._faults.popleft() if self._faults else None


def _make_handler(fake: LoopbackFake) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 - http.server naming
            self._handle()

        def do_POST(self) -> None:  # noqa: N802
            self._handle()

        def do_DELETE(self) -> None:  # noqa: N802
            self._handle()

        def _handle(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except json.JSONDecodeError:
                body = raw.decode("utf-8", "replace")
            parts = urlsplit(self.path)
            recorded = RecordedRequest(self.command, parts.path, parse_qs(parts.query),
                                       {k.lower(): v for k, v in self.headers.items()}, body, len(raw), None, raw)
            with fake.lock:
                fake.requests.append(recorded)
            answer = fake.reply(recorded)
            if answer.delay:
                time.sleep(answer.delay)
            if answer.drop:
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            code = answer.status if answer.status is not None else 200
            recorded.answered = code
            raw = getattr(answer, "raw", None)  # a fake's own reply type may have no raw body
            data = raw if raw is not None else json.dumps(answer.body if answer.body is not None else {}).encode()
            headers = {**fake.response_headers(), **answer.headers}  # a fault may name its own content-type
            content_type = headers.pop("content-type", "text/html" if raw is not None else "application/json")
            if getattr(answer, "drip_head", False):  # the whole answer, head included, a byte at a time
                head = "".join([f"HTTP/1.1 {code} X\r\ncontent-type: {content_type}\r\n",
                                f"content-length: {len(data)}\r\n", *(f"{k}: {v}\r\n" for k, v in headers.items()),
                                "\r\n"]).encode()
                self._trickle(head + data, answer.drip)
                return
            self.send_response(code)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            if not getattr(answer, "drip", 0.0):
                self.wfile.write(data)
                return
            self.wfile.flush()
            self._trickle(data, answer.drip)

        def _trickle(self, data: bytes, seconds: float) -> None:
            """Send ``data`` a byte every ``seconds`` until the client gives up (the write then fails)."""
            self.close_connection = True
            for byte in data:
                time.sleep(seconds)
                try:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                except OSError:
                    return

        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            return

    return Handler
