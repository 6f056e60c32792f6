"""The HTTP <-> API Gateway proxy translation of ``longdoc serve``, with Werkzeug's test client (no socket)."""

from __future__ import annotations

import base64
import json
from types import SimpleNamespace
from typing import Any

from werkzeug.test import Client

from longdoc.local.docs_page import docs_html
from longdoc.local.server import ApiApp

SPEC = {"openapi": "3.1.0", "info": {"title": "longdoc", "version": "0.1.0"},
        "paths": {"/extractions": {"post": {"summary": "Start a run", "requestBody": {"content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/Req"}}}},
            "responses": {"422": {"description": "Validation Error"}}}},
            "/extractions/{run_id}": {"get": {"parameters": [{"name": "run_id", "in": "path", "required": True,
                                                               "schema": {"type": "string"}}]}}},
        "components": {"schemas": {"Req": {"properties": {"clause_types": {"type": "array"}}}}}}


def echo_api() -> tuple[SimpleNamespace, list[dict[str, Any]]]:
    """A stand-in API module whose handler records the event and answers it back (or the spec)."""
    seen: list[dict[str, Any]] = []

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        seen.append(event)
        if event["path"] == "/openapi.json":
            return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": json.dumps(SPEC)}
        return {"statusCode": 201, "multiValueHeaders": {"Set-Cookie": ["a=1", "b=2"]},
                "headers": {"Content-Type": "application/json"}, "body": json.dumps({"path": event["path"]})}

    return SimpleNamespace(handler=handler), seen


def test_a_request_becomes_the_rest_proxy_event_and_the_answer_the_response() -> None:
    api, seen = echo_api()
    client = Client(ApiApp(api, max_body_bytes=100))
    # When a POST with a query string, repeated parameters, a header and a JSON body arrives
    response = client.post("/extractions?x=1&y=2&y=3", json={"doc_id": "d"}, headers={"Idempotency-Key": "k1"})
    # Then the handler got the REST proxy event API Gateway sends
    event = seen[-1]
    assert (event["httpMethod"], event["path"], event["resource"]) == ("POST", "/extractions", "/extractions")
    assert event["headers"]["Idempotency-Key"] == "k1" and event["multiValueHeaders"]["Idempotency-Key"] == ["k1"]
    assert event["queryStringParameters"] == {"x": "1", "y": "3"}
    assert event["multiValueQueryStringParameters"] == {"x": ["1"], "y": ["2", "3"]}
    assert json.loads(event["body"]) == {"doc_id": "d"} and event["isBase64Encoded"] is False
    assert event["requestContext"]["stage"] == "local" and event["requestContext"]["identity"]["sourceIp"]
    # And its answer is the HTTP response: status, every header value, body
    assert response.status_code == 201 and response.get_json() == {"path": "/extractions"}
    assert response.headers.getlist("Set-Cookie") == ["a=1", "b=2"]


def test_binary_bodies_are_base64_and_empty_bodies_none() -> None:
    api, seen = echo_api()
    client = Client(ApiApp(api, max_body_bytes=100))
    client.post("/x", data=b"\xff\xfe\x00", content_type="application/octet-stream")
    assert seen[-1]["isBase64Encoded"] is True and base64.b64decode(seen[-1]["body"]) == b"\xff\xfe\x00"
    client.get("/x")
    assert seen[-1]["body"] is None and seen[-1]["queryStringParameters"] is None


def test_a_body_over_the_limit_is_413_before_the_handler() -> None:
    api, seen = echo_api()
    response = Client(ApiApp(api, max_body_bytes=10)).post("/extractions", data=b"x" * 11)
    assert response.status_code == 413 and response.get_json() == {"message": "Request Too Long", "limit_bytes": 10}
    assert seen == []


def test_docs_page_is_generated_from_the_openapi_document() -> None:
    api, _ = echo_api()
    response = Client(ApiApp(api)).get("/docs")
    page = response.get_data(as_text=True)
    assert response.status_code == 200 and response.mimetype == "text/html"
    assert page == docs_html(SPEC)
    assert "Start a run" in page and "clause_types" in page and "run_id" in page and "422" in page
    assert "<script" not in page
