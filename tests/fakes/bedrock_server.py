"""A loopback fake of the Amazon Bedrock runtime ``InvokeModel`` endpoint for Anthropic models.

It serves ``POST /model/{modelId}/invoke`` the way the real ``anthropic`` SDK's
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
from typing import Any
from urllib.parse import unquote

from tests.fakes.anthropic_server import FakeAnthropic, Reply
from tests.fakes.loopback import RecordedRequest


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
                           or parts[3] != "invoke"):
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
            answer = Reply(status=answer.status, body={**body, "model": model}, headers=answer.headers,
                           delay=answer.delay, drop=answer.drop)
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
        access_key, date, region, service, _ = fields.get("Credential", "////").split("/")
        if (access_key, region, service) != (self._credentials[0], self._region, service):
            return False
        signed = fields.get("SignedHeaders", "").split(";")
        headers = {name: request.headers[name] for name in signed if name in request.headers}
        body = request.raw
        url = f"{self.url}{request.path}"
        aws_request = AWSRequest(method=request.method, url=url, headers=headers, data=body)
        aws_request.context["timestamp"] = request.headers.get("x-amz-date", "")
        signer = SigV4Auth(Credentials(*self._credentials), service, self._region)
        canonical = signer.canonical_request(aws_request)
        expected = signer.signature(signer.string_to_sign(aws_request, canonical), aws_request)
        return date == aws_request.context["timestamp"][:8] and hmac.compare_digest(expected, fields.get("Signature", ""))
