"""A loopback fake of the Amazon Bedrock runtime ``InvokeModel`` endpoint for Anthropic models.

It serves ``POST /model/{modelId}/invoke`` (and ``/invoke-with-response-stream``, streamed as an AWS
event stream with :func:`tests.fakes.anthropic_server.enable_streaming`) the way the real ``anthropic`` SDK's
``AnthropicBedrock`` client calls it: the body is a Messages API request without ``model``
and with ``anthropic_version``; the answer is a Messages API ``message`` (shapes:
https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages.html).
Errors use Bedrock's shape, ``{"message": ...}`` with the error name in the
``x-amzn-ErrorType`` header (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html).

It also serves ``POST /anthropic/v1/messages``, the Messages-API Bedrock endpoint ("Claude in
Amazon Bedrock", https://docs.aws.amazon.com/bedrock/latest/userguide/inference-messages-api.html)
that the SDK's ``AnthropicBedrockMantle`` client calls for the 5.x models: a Messages API body with
``model``, signed for service ``bedrock-mantle``; point that client at :attr:`FakeBedrock.mantle_url`.

Every request must be SigV4-signed (service ``bedrock`` for InvokeModel): the fake recomputes the signature
with botocore from the credentials it was given (the test's fake environment credentials) and
answers 403 ``InvalidSignatureException`` when it does not match, as AWS would. Scripted
replies, the responder hook and the request log are those of
:class:`tests.fakes.anthropic_server.FakeAnthropic` (and its loopback server).
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any
from urllib.parse import unquote

from tests.fakes.anthropic_server import FakeAnthropic, Reply
from tests.fakes.contract_holder import HoldsContract
from tests.fakes.loopback import RecordedRequest


INVOKE_ACTIONS = ("invoke", "invoke-with-response-stream")
"""``POST /model/{modelId}/<action>``: InvokeModel and InvokeModelWithResponseStream (the latter answered
as an AWS event stream once :func:`tests.fakes.anthropic_server.enable_streaming` is on)."""


def bedrock_error(status: int, error_type: str, message: str = "scripted error", *,
                  retry_after_ms: int | None = None) -> Reply:
    """A Bedrock error answer: HTTP ``status``, ``x-amzn-ErrorType: <error_type>:...``, ``{"message"}``.

    ``retry_after_ms`` sets the header the SDK obeys, so its retries take milliseconds in tests.
    """
    headers = {"x-amzn-ErrorType": f"{error_type}:http://internal.amazon.com/coral/com.amazon.bedrock/"}
    if retry_after_ms is not None:
        headers["retry-after-ms"] = str(retry_after_ms)
    return Reply(status=status, body={"message": message}, headers=headers)


class FakeBedrock(FakeAnthropic):
    """Loopback server faking ``POST /model/{modelId}/invoke``; starts on construction.

    Attributes:
        base_url: pass as ``ClaudeModel(..., provider="bedrock", base_url=...)`` (InvokeModel ids).
        mantle_url: the same for ids served by the Messages-API endpoint (``<base_url>/anthropic``).
        invoked_models: the model ids of the accepted requests, in order (URL-decoded).
        bad_signatures: requests refused because their SigV4 signature did not verify.
    """

    name = "fake-bedrock"

    def __init__(self, responder: Any = None, *, access_key: str | None = None, secret_key: str | None = None,
                 region: str | None = None) -> None:
        """Credentials and Region default to the environment's (the fake test credentials of
        ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` / ``AWS_REGION``), which the SDK signs with."""
        self._credentials = (access_key or os.environ["AWS_ACCESS_KEY_ID"],
                             secret_key or os.environ["AWS_SECRET_ACCESS_KEY"])
        self._region = region or os.environ.get("AWS_REGION") or os.environ["AWS_DEFAULT_REGION"]
        self.invoked_models: list[str] = []
        self.bad_signatures = 0
        super().__init__(responder)
        self.mantle_url = f"{self.base_url}/anthropic"

    def _scripted(self, request: RecordedRequest) -> Reply:
        parts = request.path.split("/")
        mantle = request.method == "POST" and request.path == "/anthropic/v1/messages"
        if not mantle and (request.method != "POST" or len(parts) != 4 or parts[1] != "model"
                           or parts[3] not in INVOKE_ACTIONS):
            return bedrock_error(404, "UnknownOperationException", f"fake serves POST /model/<id>/invoke and "
                                 f"/anthropic/v1/messages only, not {request.method} {request.path}")
        if not self._signature_ok(request, "bedrock-mantle" if mantle else "bedrock"):
            with self.lock:
                self.bad_signatures += 1
            return bedrock_error(403, "InvalidSignatureException", "The request signature we calculated does not "
                                 "match the signature you provided.")
        model = str((request.body or {}).get("model")) if mantle else unquote(parts[2])
        with self.lock:
            self.invoked_models.append(model)
            queued = self._queue.popleft() if self._queue else None
            responder = self.responder
        answer = queued if queued is not None else (responder(request.body) if responder else
                                                   bedrock_error(500, "InternalServerException", "no scripted response"))
        body = answer.body
        if body is not None and body.get("type") == "message" and body.get("model") is None:
            answer = replace(answer, body={**body, "model": model})
        return answer

    def reply(self, request: RecordedRequest) -> Reply:
        """The scripted (or responder's) answer, the model filled in from the path; 403 when unsigned."""
        try:
            return self._scripted(request)
        except Exception as exc:  # a broken responder should fail loudly, not hang
            return bedrock_error(500, "InternalServerException", f"fake responder raised {exc!r}")

    def response_headers(self) -> dict[str, str]:
        """Bedrock answers carry ``x-amzn-RequestId``."""
        return {"x-amzn-RequestId": "fake-request-id"}

    def _signature_ok(self, request: RecordedRequest, service: str = "bedrock") -> bool:
        """Recompute the SigV4 signature of ``request`` for ``service`` with botocore and compare (constant time)."""
        import hmac

        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        authorization = request.headers.get("authorization", "")
        if not authorization.startswith("AWS4-HMAC-SHA256 "):
            return False
        fields = dict(part.strip().split("=", 1) for part in authorization[len("AWS4-HMAC-SHA256 "):].split(","))
        expected_service = service
        access_key, date, region, service, _ = fields.get("Credential", "////").split("/")
        if (access_key, region, service) != (self._credentials[0], self._region, expected_service):
            return False
        signed = fields.get("SignedHeaders", "").split(";")
        headers = {name: request.headers[name] for name in signed if name in request.headers}
        body = request.raw
        url = f"{self.url}{request.path}"
        aws_request = AWSRequest(method=request.method, url=url, headers=headers, data=body)
        aws_request.context["timestamp"] = request.headers.get("x-amz-date", "")
        signer = SigV4Auth(Credentials(*self._credentials), expected_service, self._region)
        canonical = signer.canonical_request(aws_request)
        expected = signer.signature(signer.string_to_sign(aws_request, canonical), aws_request)
        return date == aws_request.context["timestamp"][:8] and hmac.compare_digest(expected, fields.get("Signature", ""))


# --- The strict mode: the documented request rules, thinking and cache (tests.fakes.strict_claude) ---

MESSAGES_PATHS = ("/anthropic/v1/messages", "/v1/messages")
"""The Messages-API Bedrock endpoint (``bedrock-mantle``: ``.../anthropic/v1/messages``, AWS-MSG
https://docs.aws.amazon.com/bedrock/latest/userguide/inference-messages-api.html), with or without
the ``/anthropic`` base path (the SDK's ``AnthropicBedrockMantle`` appends ``/v1/messages`` to its base URL)."""


COUNT_PATHS = tuple(f"{p}/count_tokens" for p in MESSAGES_PATHS)
"""Token counting on the Messages-API Bedrock endpoint (same checks, the fake tokenizer)."""


class StrictBedrock(HoldsContract, FakeBedrock):
    """:class:`FakeBedrock` that holds requests to the contract, as :class:`tests.fakes.strict_claude.StrictClaude`.

    Serves both paths of the capability table's Bedrock rows: InvokeModel ``POST /model/{id}/invoke``
    (``endpoint: "invoke"``; API version = the body's ``anthropic_version``) and the Messages API
    (``endpoint: "messages"``, :data:`MESSAGES_PATHS`; API version = the ``anthropic-version``
    header; SigV4 for service ``bedrock-mantle``, or an ``Authorization: Bearer`` key). A refusal
    answers in Bedrock's shape (``ValidationException`` 400 with ``{"message"}``; an unknown model
    ``ResourceNotFoundException`` 404) and is recorded in ``rejected``.
    """

    name = "strict-bedrock"

    def __init__(self, responder: Any = None, *, thinking_tokens: int | None = None, **kwargs: Any) -> None:
        from tests.fakes.strict_claude import DEFAULT_THINKING_TOKENS, ClaudeContract

        self.contract = ClaudeContract("bedrock", thinking_tokens=thinking_tokens or DEFAULT_THINKING_TOKENS)
        self.paths: list[str] = []
        super().__init__(responder, **kwargs)


    def _scripted(self, request: RecordedRequest) -> Reply:
        from tests.fakes.strict_claude import api_version_of

        if request.method == "POST" and request.path in COUNT_PATHS and isinstance(request.body, dict):
            return self._count_tokens(request)
        parts = request.path.split("/")
        invoke = request.method == "POST" and len(parts) == 4 and parts[1] == "model" and parts[3] in INVOKE_ACTIONS
        messages = request.method == "POST" and request.path in MESSAGES_PATHS
        if not (invoke or messages) or not isinstance(request.body, dict):
            return super()._scripted(request)
        if messages and not (request.headers.get("authorization", "").startswith("Bearer ")
                             or self._signature_ok(request, "bedrock-mantle")):
            with self.lock:
                self.bad_signatures += 1
            return bedrock_error(403, "InvalidSignatureException", "The request signature we calculated does not "
                                 "match the signature you provided.")
        if invoke and not self._signature_ok(request):
            return super()._scripted(request)  # answers the 403
        model = unquote(parts[2]) if invoke else str(request.body.get("model"))
        body = {**request.body, "model": model}
        version = str(request.body.get("anthropic_version", "")) if invoke else api_version_of(request)
        error = self.contract.check(body, version)
        with self.lock:
            self.paths.append(request.path)
        if error is not None:
            kind = "ResourceNotFoundException" if error.status == 404 else "ValidationException"
            return bedrock_error(error.status, kind, error.message)
        if invoke:
            answer = super()._scripted(request)
        else:
            with self.lock:
                self.invoked_models.append(model)
                queued = self._queue.popleft() if self._queue else None
                responder = self.responder
            answer = queued or (responder(request.body) if responder else
                                bedrock_error(500, "InternalServerException", "no scripted response"))
        payload = answer.body
        if answer.status == 200 and isinstance(payload, dict) and payload.get("type") == "message":
            shaped = self.contract.shape(body, {**payload, "model": payload.get("model") or model})
            answer = replace(answer, status=200, body=shaped)
        return answer

    def _count_tokens(self, request: RecordedRequest) -> Reply:
        """``{"input_tokens": N}`` for a count request that passes the checks (MIG1021: the rules apply to counting)."""
        from tests.fakes.claude_wire import count_input_tokens
        from tests.fakes.strict_claude import api_version_of

        if not (request.headers.get("authorization", "").startswith("Bearer ")
                or self._signature_ok(request, "bedrock-mantle")):
            return bedrock_error(403, "InvalidSignatureException", "The request signature we calculated does not "
                                 "match the signature you provided.")
        error = self.contract.check(request.body, api_version_of(request), "count_tokens")
        if error is not None:
            return bedrock_error(error.status, "ValidationException", error.message)
        return Reply(status=200, body={"input_tokens": count_input_tokens(request.body)})
