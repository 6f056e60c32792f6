"""The API Gateway REST proxy event ``longdoc serve`` builds for each HTTP request (issue 28).

The event has the shape of the "Input format of a Lambda function for proxy integration"
(https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-lambda-proxy-integrations.html#api-gateway-simple-proxy-for-lambda-input-format):

* ``headers`` holds each header's last value and ``multiValueHeaders`` every value in order (a header
  sent twice is two list items, never one ``"first,second"`` string); names keep the client's case,
  and the product reads them case-insensitively through Powertools' event classes (its ``Header``
  parameters and ``APIGatewayProxyEvent.headers``). ``queryStringParameters`` /
  ``multiValueQueryStringParameters`` likewise; with none, both are None.
* ``resource`` and ``requestContext.resourcePath`` are the matched route of the template's ``Api``
  events (``/extractions/{id}``, read from ``template.yaml``), and ``pathParameters`` its variables
  (``{"id": "run-1"}``; None for a route without any). A request that matches no route (API Gateway
  would not call the function) keeps its path as ``resource`` and reaches the handler's 404.
* A body that is not UTF-8 is base64 with ``isBase64Encoded: true``; an empty body is None.

The repeated headers come from the HTTP server itself: WSGI joins them with ``,`` into one
``HTTP_*`` variable, so :class:`RawHeadersHandler` (Werkzeug's request handler) also puts the
header lines as received into the environ (:data:`RAW_HEADERS_KEY`); without it (Werkzeug's
test client) the joined values are used. Header names with ``_`` are dropped, as Werkzeug does.
"""

from __future__ import annotations

import base64
import re
import time
import uuid
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from werkzeug.serving import WSGIRequestHandler
from werkzeug.wrappers import Request

TEMPLATE = Path(__file__).resolve().parents[4] / "template.yaml"
"""The SAM template whose ``Api`` events are the routes (the repository's ``template.yaml``)."""
RAW_HEADERS_KEY = "longdoc.raw_headers"
"""The environ key holding ``[(name, value), ...]`` as the client sent them (:class:`RawHeadersHandler`)."""
ACCOUNT_ID, STAGE = "123456789012", "local"


class RawHeadersHandler(WSGIRequestHandler):
    """Werkzeug's request handler that keeps every header line (name case, order, repeats) in the environ."""

    def make_environ(self) -> Any:  # WSGIEnvironment
        """Werkzeug's environ plus :data:`RAW_HEADERS_KEY`."""
        environ = super().make_environ()
        environ[RAW_HEADERS_KEY] = [(k, v.replace("\r\n", "")) for k, v in self.headers.items() if "_" not in k]
        return environ


class _CfnLoader(yaml.SafeLoader):
    """A YAML loader that reads CloudFormation's short-form tags (``!Ref``, ``!Sub`` ...) as plain values."""


_CfnLoader.add_multi_constructor("!", lambda loader, suffix, node: None)


@lru_cache(maxsize=4)
def template_routes(template: Path = TEMPLATE) -> tuple[tuple[str, str, re.Pattern[str]], ...]:
    """``(METHOD, route, regex)`` of every ``Api`` event in ``template`` (``ANY`` for ``Method: any``),
    static routes first (API Gateway prefers the most specific match). Raises OSError when it is unreadable."""
    data = yaml.load(template.read_text(encoding="utf-8"), Loader=_CfnLoader)  # noqa: S506 - SafeLoader subclass
    routes: list[tuple[str, str, re.Pattern[str]]] = []
    for resource in (data.get("Resources") or {}).values():
        for event in ((resource or {}).get("Properties") or {}).get("Events", {}).values():
            props = event.get("Properties") or {}
            if event.get("Type") == "Api" and isinstance(props.get("Path"), str):
                path = props["Path"]
                pattern = re.sub(r"\\\{(\w+)\\\+\\\}", r"(?P<\1>.+)", re.escape(path))
                pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", pattern)
                routes.append((str(props.get("Method", "any")).upper(), path, re.compile(f"^{pattern}$")))
    return tuple(sorted(routes, key=lambda r: (r[1].count("{"), r[1])))


def match_route(method: str, path: str, template: Path = TEMPLATE) -> tuple[str, dict[str, str] | None]:
    """The template route for ``method`` ``path`` and its path parameters; ``(path, None)`` for no match."""
    for route_method, route, regex in template_routes(template):
        found = regex.match(path)
        if found and route_method in (method.upper(), "ANY"):
            return route, found.groupdict() or None
    return path, None


def _multi(pairs: list[tuple[str, str]]) -> tuple[dict[str, str] | None, dict[str, list[str]] | None]:
    """``(last value per key, every value per key)``; ``(None, None)`` for no pairs."""
    multi: dict[str, list[str]] = {}
    for key, value in pairs:
        multi.setdefault(key, []).append(value)
    return ({k: v[-1] for k, v in multi.items()} or None), (multi or None)


def proxy_event(request: Request, body: bytes, template: Path = TEMPLATE) -> dict[str, Any]:
    """The API Gateway REST proxy event for ``request`` with ``body`` (bytes) on stage ``local`` (module docstring)."""
    raw = request.environ.get(RAW_HEADERS_KEY)
    headers, multi_headers = _multi(list(raw) if raw is not None else list(request.headers.items()))
    query, multi_query = _multi(list(request.args.items(multi=True)))
    try:
        text, encoded = body.decode("utf-8"), False
    except UnicodeDecodeError:
        text, encoded = base64.b64encode(body).decode("ascii"), True
    path = request.path or "/"
    resource, path_parameters = match_route(request.method, path, template)
    now = time.time()
    identity = {"accessKey": None, "accountId": None, "caller": None, "cognitoAuthenticationProvider": None,
                "cognitoAuthenticationType": None, "cognitoIdentityId": None, "cognitoIdentityPoolId": None,
                "principalOrgId": None, "sourceIp": request.remote_addr or "127.0.0.1", "user": None,
                "userAgent": request.headers.get("User-Agent", ""), "userArn": None, "clientCert": None}
    request_id = str(uuid.uuid4())
    return {
        "resource": resource, "path": path, "httpMethod": request.method,
        "headers": headers or {}, "multiValueHeaders": multi_headers or {},
        "queryStringParameters": query, "multiValueQueryStringParameters": multi_query,
        "pathParameters": path_parameters, "stageVariables": None,
        "requestContext": {"accountId": ACCOUNT_ID, "apiId": "local", "authorizer": None,
                           "domainName": request.host or "localhost", "domainPrefix": (request.host or "local").split(".")[0],
                           "extendedRequestId": request_id, "httpMethod": request.method, "identity": identity,
                           "path": f"/{STAGE}{path}", "protocol": request.environ.get("SERVER_PROTOCOL", "HTTP/1.1"),
                           "requestId": request_id,
                           "requestTime": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
                           "requestTimeEpoch": int(now * 1000), "resourceId": "local", "resourcePath": resource,
                           "stage": STAGE},
        "body": text if body else None, "isBase64Encoded": encoded,
    }
