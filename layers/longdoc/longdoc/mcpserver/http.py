"""The MCP streamable HTTP transport at ``/mcp``, as a WSGI application ``longdoc serve`` mounts.

``longdoc serve`` is a WSGI server (Werkzeug); the SDK's transport is an ASGI application
(:meth:`mcp.server.mcpserver.MCPServer.streamable_http_app`). :class:`McpHttpMount` runs that
application on an event loop of its own thread and hands it each request as an ASGI scope, the
whole body at once, collecting the whole answer. The transport runs stateless with JSON answers
(``stateless_http=True, json_response=True``: each POST carries one JSON-RPC message and is
answered with one JSON body; MCP spec "Transports", Streamable HTTP), so no answer streams and
buffering loses nothing. A GET for a server-sent event stream is then refused by the SDK (405),
which clients take as "no stream". The SDK's DNS-rebinding protection is on for a loopback host.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable, MutableMapping
from typing import Any

from longdoc.mcpserver.server import LongdocMCP, build_server

PATH = "/mcp"
"""Where ``longdoc serve`` mounts the transport."""

REQUEST_SECONDS = 60.0
"""Longest an HTTP request to ``/mcp`` may take before it is answered 504 (seconds); tool calls end far sooner
(:data:`longdoc.mcpserver.jobs.WAIT_SECONDS`)."""

_REASONS = {200: "OK", 202: "Accepted", 204: "No Content", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
            405: "Method Not Allowed", 406: "Not Acceptable", 413: "Content Too Large", 415: "Unsupported Media Type",
            421: "Misdirected Request", 500: "Internal Server Error", 504: "Gateway Timeout"}


def asgi_scope(environ: dict[str, Any]) -> dict[str, Any]:
    """The ASGI HTTP connection scope of a WSGI ``environ`` (ASGI spec 3.0, "HTTP Connection Scope";
    WSGI's CGI variables, PEP 3333): method, path, query string, headers as lower-case byte pairs."""
    headers = [(key[5:].replace("_", "-").lower().encode("latin-1"), str(value).encode("latin-1"))
               for key, value in environ.items() if key.startswith("HTTP_")]
    for key, name in (("CONTENT_TYPE", b"content-type"), ("CONTENT_LENGTH", b"content-length")):
        if environ.get(key):
            headers.append((name, str(environ[key]).encode("latin-1")))
    path = environ.get("PATH_INFO") or "/"
    return {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
            "method": environ.get("REQUEST_METHOD", "GET"), "scheme": environ.get("wsgi.url_scheme", "http"),
            "path": path, "raw_path": path.encode("latin-1"), "root_path": "",
            "query_string": str(environ.get("QUERY_STRING", "")).encode("latin-1"), "headers": headers,
            "client": (environ.get("REMOTE_ADDR", "127.0.0.1"), int(environ.get("REMOTE_PORT") or 0)),
            "server": (environ.get("SERVER_NAME", "127.0.0.1"), int(environ.get("SERVER_PORT") or 0))}


def _read_body(environ: dict[str, Any]) -> bytes:
    """The request body: ``CONTENT_LENGTH`` bytes, or what the server's terminated input holds (chunked)."""
    stream = environ["wsgi.input"]
    length = environ.get("CONTENT_LENGTH")
    if length:
        return bytes(stream.read(int(length)))
    return bytes(stream.read()) if environ.get("wsgi.input_terminated") else b""


class McpHttpMount:
    """The ``/mcp`` WSGI application: :meth:`start` before serving, :meth:`stop` after.

    ``host`` is the address ``longdoc serve`` binds (the SDK turns its DNS-rebinding protection on for a
    loopback one). Raises RuntimeError from :meth:`__call__` when it was not started.
    """

    def __init__(self, server: LongdocMCP | None = None, host: str = "127.0.0.1"):
        self.server = server or build_server()
        self.app = self.server.streamable_http_app(streamable_http_path=PATH, json_response=True,
                                                   stateless_http=True, host=host)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()

    def start(self) -> None:
        """Start the event loop thread and the SDK's session manager on it; returns when it is ready."""
        self._thread = threading.Thread(target=self._run, name="mcp-http", daemon=True)
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("the MCP HTTP transport did not start within 30 s")

    def _run(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop, self._stopping = asyncio.get_running_loop(), asyncio.Event()
        async with self.server.session_manager.run():
            self._ready.set()
            await self._stopping.wait()

    def stop(self) -> None:
        """Stop the session manager and the loop thread (requests in flight are cancelled)."""
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            self._thread.join(10)

    async def _call(self, scope: dict[str, Any], body: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """One request through the ASGI application: ``(status, headers, body)``."""
        sent = False
        status, headers, chunks = 500, [], []

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Event().wait()  # the client never disconnects mid-call here; wait to be cancelled
            return {"type": "http.disconnect"}

        async def send(message: MutableMapping[str, Any]) -> None:
            nonlocal status, headers
            if message["type"] == "http.response.start":
                status, headers = int(message["status"]), list(message.get("headers") or [])
            elif message["type"] == "http.response.body":
                chunks.append(bytes(message.get("body") or b""))

        await self.app(scope, receive, send)
        return status, headers, b"".join(chunks)

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        """Answer one WSGI request with the transport's answer (504 past :data:`REQUEST_SECONDS`)."""
        if self._loop is None:
            raise RuntimeError("McpHttpMount.start() was not called")
        future = asyncio.run_coroutine_threadsafe(self._call(asgi_scope(environ), _read_body(environ)), self._loop)
        try:
            status, headers, data = future.result(REQUEST_SECONDS)
        except TimeoutError:
            future.cancel()
            status, headers, data = 504, [(b"content-type", b"application/json")], \
                b'{"message": "the MCP request took longer than 60 s"}'
        start_response(f"{status} {_REASONS.get(status, 'Status')}",
                       [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers])
        return [data]
