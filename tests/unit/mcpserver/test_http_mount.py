"""``/mcp`` on ``longdoc serve``'s WSGI app: the MCP streamable HTTP transport through the WSGI-to-ASGI mount,
exercised with Werkzeug's test client (no socket), beside a stand-in API handler."""

from __future__ import annotations

import json
import threading
import time
from types import SimpleNamespace
from typing import Any

from werkzeug.test import Client

from longdoc.local.server import ApiApp
from longdoc.mcpserver.http import McpHttpMount, asgi_scope
from longdoc.mcpserver.jobs import Jobs

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
           "Host": "127.0.0.1:8080"}


def test_asgi_scope_carries_method_path_query_and_headers() -> None:
    scope = asgi_scope({"REQUEST_METHOD": "POST", "PATH_INFO": "/mcp", "QUERY_STRING": "a=1",
                        "HTTP_ACCEPT": "application/json", "CONTENT_TYPE": "application/json",
                        "CONTENT_LENGTH": "2", "REMOTE_ADDR": "127.0.0.1", "REMOTE_PORT": "5000",
                        "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8080"})
    assert (scope["method"], scope["path"], scope["query_string"]) == ("POST", "/mcp", b"a=1")
    assert dict(scope["headers"]) == {b"accept": b"application/json", b"content-type": b"application/json",
                                      b"content-length": b"2"}


def test_mcp_requests_reach_the_transport_and_others_the_handler() -> None:
    # Given the serve app with the MCP mount and a stand-in API handler
    seen: list[str] = []

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        seen.append(event["path"])
        return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": "{}"}

    mount = McpHttpMount()
    mount.start()
    try:
        client = Client(ApiApp(SimpleNamespace(handler=handler), mounts={"/mcp": mount}))
        # When a client initializes over /mcp (JSON-RPC, the 2025-11-25 handshake), then lists tools
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}
        first = client.post("/mcp", data=json.dumps(init), headers=HEADERS)
        listed = client.post("/mcp", data=json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
                             headers=HEADERS | {"MCP-Protocol-Version": "2025-11-25"})
        other = client.get("/documents/x")
    finally:
        mount.stop()
    # Then the transport answered both with JSON, the handler never saw them, and it answered the rest
    assert first.status_code == 200 and first.get_json()["result"]["serverInfo"]["name"] == "longdoc"
    assert listed.status_code == 200 and "extract" in [t["name"] for t in listed.get_json()["result"]["tools"]]
    assert other.status_code == 200 and seen == ["/documents/x"]


def test_a_job_past_the_wait_is_answered_later_and_not_started_twice() -> None:
    # Given work that takes longer than the wait
    release, started = threading.Event(), []

    def work() -> str:
        started.append(1)
        release.wait(5)
        return "done"

    jobs = Jobs()
    # When it is run with a short wait, and run again under the same key while it still runs
    first = jobs.run("k", work, wait_seconds=0.05)
    again = jobs.run("k", work, wait_seconds=0.05)
    # Then the calls came back before it finished, joined one job, and it ends with its result
    assert not first.done.is_set() and again is first and started == [1]
    release.set()
    assert first.done.wait(5) and first.result == "done"
    time.sleep(0.05)
    assert jobs.run("k", lambda: "second", wait_seconds=5).result == "second"
