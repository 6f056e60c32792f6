"""The local API's event against API Gateway's REST proxy event (issue 28): repeated headers and query
parameters in the multi-value fields, the template's route in ``resource`` with its path parameters,
case-insensitive header reads through Powertools, through a real socket server (Werkzeug joins
repeated headers in the WSGI environ; :class:`longdoc.local.api_event.RawHeadersHandler` keeps them)."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Annotated, Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.openapi.params import Header
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent
from werkzeug.serving import make_server

from longdoc.local.api_event import RawHeadersHandler, match_route
from longdoc.local.server import ApiApp

# The documented example of the REST proxy input format, written out here with its fields and value
# types: "Input format of a Lambda function for proxy integration",
# https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-lambda-proxy-integrations.html#api-gateway-simple-proxy-for-lambda-input-format
# (multi-value fields: "Support for multi-value headers and query string parameters", same page).
AWS_SAMPLE: dict[str, Any] = {
    "resource": "/my/path", "path": "/my/path", "httpMethod": "GET",
    "headers": {"header1": "value1", "header2": "value2"},
    "multiValueHeaders": {"header1": ["value1"], "header2": ["value1", "value2"]},
    "queryStringParameters": {"parameter1": "value2", "parameter2": "value"},
    "multiValueQueryStringParameters": {"parameter1": ["value1", "value2"], "parameter2": ["value"]},
    "requestContext": {
        "accountId": "123456789012", "apiId": "id", "authorizer": {"claims": None, "scopes": None},
        "domainName": "id.execute-api.us-east-1.amazonaws.com", "domainPrefix": "id",
        "extendedRequestId": "request-id", "httpMethod": "GET",
        "identity": {"accessKey": None, "accountId": None, "caller": None, "cognitoAuthenticationProvider": None,
                     "cognitoAuthenticationType": None, "cognitoIdentityId": None, "cognitoIdentityPoolId": None,
                     "principalOrgId": None, "sourceIp": "IP", "user": None, "userAgent": "user-agent",
                     "userArn": None, "clientCert": None},
        "path": "/my/path", "protocol": "HTTP/1.1", "requestId": "id=", "requestTime": "04/Mar/2020:19:15:17 +0000",
        "requestTimeEpoch": 1583349317135, "resourceId": None, "resourcePath": "/my/path", "stage": "$default"},
    "pathParameters": None, "stageVariables": None, "body": "Hello from Lambda!", "isBase64Encoded": False,
}


@pytest.fixture
def served() -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """``longdoc serve``'s app on a loopback socket (as cli/serve.py builds it), its handler recording events."""
    seen: list[dict[str, Any]] = []

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        seen.append(event)
        return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": "{}"}

    server = make_server("127.0.0.1", 0, ApiApp(SimpleNamespace(handler=handler)), threaded=True,
                         request_handler=RawHeadersHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_port, seen
    server.shutdown()
    server.server_close()


def _send(port: int, method: str, target: str, headers: list[tuple[str, str]], body: bytes = b"") -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.putrequest(method, target)
    for name, value in headers:
        connection.putheader(name, value)
    connection.putheader("Content-Length", str(len(body)))
    connection.endheaders(body)
    status = connection.getresponse().status
    connection.close()
    return status


def test_the_local_event_has_the_shape_of_api_gateways(served: tuple[int, list[dict[str, Any]]]) -> None:
    port, seen = served
    # When a GET with repeated headers and query parameters reaches `longdoc serve`
    _send(port, "GET", "/extractions/run-1?parameter1=value1&parameter1=value2&parameter2=value",
          [("X-Trace", "first"), ("X-Trace", "second"), ("User-Agent", "probe")])
    event = seen[-1]
    # Then it has every field of the documented event, with the same value types
    assert set(event) == set(AWS_SAMPLE)
    assert set(event["requestContext"]) == set(AWS_SAMPLE["requestContext"])
    assert set(event["requestContext"]["identity"]) == set(AWS_SAMPLE["requestContext"]["identity"])
    for key in ("resource", "path", "httpMethod", "headers", "multiValueHeaders", "queryStringParameters",
                "multiValueQueryStringParameters", "isBase64Encoded"):
        assert type(event[key]) is type(AWS_SAMPLE[key]), key
    # And repeated values are separate items, the last one in the single-value fields (not "first,second")
    assert event["multiValueHeaders"]["X-Trace"] == ["first", "second"] and event["headers"]["X-Trace"] == "second"
    assert event["multiValueQueryStringParameters"] == AWS_SAMPLE["multiValueQueryStringParameters"]
    assert event["queryStringParameters"] == {"parameter1": "value2", "parameter2": "value"}
    # And the resource is the template's route, with its path parameter
    assert (event["resource"], event["requestContext"]["resourcePath"]) == ("/extractions/{id}",) * 2
    assert event["pathParameters"] == {"id": "run-1"} and event["path"] == "/extractions/run-1"
    assert event["requestContext"]["identity"]["userAgent"] == "probe"


def test_headers_are_read_case_insensitively_through_powertools(served: tuple[int, list[dict[str, Any]]]) -> None:
    port, seen = served
    # Given a client that sends the Idempotency-Key header in lower case, and a body that is not UTF-8
    _send(port, "POST", "/extractions", [("idempotency-key", "k-1"), ("Content-Type", "application/octet-stream")],
          b"\xff\xfe")
    event = seen[-1]
    assert event["resource"] == "/extractions" and event["pathParameters"] is None and event["isBase64Encoded"]
    # When the product reads it as the API function does (Powertools' event class and a Header parameter)
    app = APIGatewayRestResolver(enable_validation=True)

    @app.post("/extractions")
    def start(key: Annotated[str | None, Header(alias="Idempotency-Key")] = None) -> dict[str, Any]:
        return {"key": key}

    # Then the header is found whatever its case
    assert APIGatewayProxyEvent(event).headers.get("IDEMPOTENCY-KEY") == "k-1"
    assert app.resolve(event, None)["body"] == '{"key":"k-1"}'


@pytest.mark.parametrize(("method", "path", "expected"), [
    ("GET", "/extractions/abc", ("/extractions/{id}", {"id": "abc"})),
    ("POST", "/extractions", ("/extractions", None)),
    ("GET", "/summaries/s-1", ("/summaries/{summary_id}", {"summary_id": "s-1"})),
    ("GET", "/bulk-extractions/b-1", ("/bulk-extractions/{bulk_id}", {"bulk_id": "b-1"})),
    ("GET", "/openapi.json", ("/openapi.json", None)),
    ("DELETE", "/extractions/abc", ("/extractions/abc", None)),  # no such route: the handler answers 404
])
def test_routes_come_from_the_templates_api_events(method: str, path: str, expected: tuple[str, Any]) -> None:
    # When a request is matched against template.yaml's Api events, Then it gets that route and its variables
    assert match_route(method, path) == expected
