"""Claude adapter for the :class:`longdoc.core.ports.Model` port: the Anthropic Messages API,
directly (``provider="anthropic"``) or through Amazon Bedrock (``provider="bedrock"``).

Both go through the ``anthropic`` SDK with the same request (system blocks with
``cache_control`` marks, tools, ``tool_choice``) and the same response conversion, so the
tool loop, stop reasons, prompt caching and checkpoints of a session do not depend on the
provider. Every request is built from the model's row of the capability table
(``longdoc/data/models.json``, :mod:`longdoc.core.request_rules`): its ``thinking`` and
``output_config.effort`` per job, no sampling parameters, and a request the row says the model
rejects (forced ``tool_choice``, assistant prefill) refused before sending with
:class:`~longdoc.core.errors.ModelRejectsRequest`.

With Bedrock no API key exists: requests are SigV4-signed with the AWS credentials resolved once at
composition (the Lambda role; a laptop's profile or keys: :mod:`longdoc.adapters.bedrock_access`). A row with ``endpoint: "messages"`` (the 5.x models) is served
by "Claude in Amazon Bedrock", the Messages API at ``/anthropic/v1/messages`` (BEDROCK page;
https://docs.aws.amazon.com/bedrock/latest/userguide/inference-messages-api.html), through the
SDK's ``AnthropicBedrockMantle`` client (service ``bedrock-mantle``, base URL
``https://bedrock-mantle.<region>.api.aws/anthropic``; the body names the model, the API
version is the ``anthropic-version`` header). A row with ``endpoint: "invoke"`` and any id not in
the table (the legacy ARN-versioned ids) go through ``AnthropicBedrock`` to the Bedrock runtime
``InvokeModel`` endpoint (``POST /model/{modelId}/invoke``, service ``bedrock``) with
``anthropic_version: "bedrock-2023-05-31"`` in the body, the value Bedrock's Anthropic Messages
API documents (https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages.html);
the SDK's own default is its first-party API version, which Anthropic warns the models of the
InvokeModel integration do not accept
(https://platform.claude.com/docs/en/build-with-claude/claude-on-amazon-bedrock-legacy).

An HTTP 200 whose body is not JSON (an SSE stream from a gateway that streams, a proxy's HTML
page) is :class:`~longdoc.core.errors.ModelUnavailable` naming the content type and the first
bytes (retryable: the next attempt may reach the API), never an ``AttributeError``.

Token counting (:meth:`ClaudeModel.count_tokens`, the :class:`longdoc.core.ports.TokenCounter`
port) uses ``messages.count_tokens`` with the same request fields and rules (MIG1021: the
2026-10-21 rules apply to token counting too), cached in-process by the SHA-256 of the request.

Key rotation (Anthropic API): the key comes from a *key source*, ``source(refresh=False) -> str``
(:class:`longdoc.adapters.secrets.SecretKey`, cached 5 minutes). Every call asks it for the
current key and rebuilds the SDK client when the key differs from the one the client holds, so
a rotated key reaches a warm function within the cache lifetime. An authentication error
(HTTP 401) refetches the key bypassing the cache and, if it changed, retries the call once
with a new client; a key that is still rejected is a :class:`ModelRequestError`.

The ``anthropic`` SDK is imported inside the methods that build a client or call it only: importing it
costs seconds, and code paths that never call Claude (ingest) must not pay for it.

Retries are the SDK's own (``max_retries``; it retries 408/409/429/5xx and dropped
connections with backoff, honouring ``retry-after-ms``/``retry-after`` headers), except for a
request with a time budget (``timeout_seconds``), whose retries are made within that budget by
:func:`longdoc.adapters.claude_budget.create_within`. What is
left after those retries is mapped to longdoc's named errors (:mod:`longdoc.adapters.anthropic_errors`, shared with
the Message Batches client), whose class names are the
Step Functions error names:

* HTTP 429 (``rate_limit_error``) and HTTP 529 (``overloaded_error``) -> :class:`ModelThrottled`
* connection failures, timeouts and other 5xx -> :class:`ModelUnavailable`
* any other 4xx -> :class:`ModelRequestError` (retrying will not help)

Status codes and error types, Bedrock's ``x-amzn-ErrorType`` names and the error events inside a
stream are listed with their sources in :mod:`longdoc.adapters.anthropic_errors`.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from longdoc.adapters.anthropic_errors import not_json, status_error, translated
from longdoc.adapters.bedrock_access import BedrockAccess
from longdoc.adapters.claude_budget import create_within
from longdoc.adapters.claude_stream import stream_within
from longdoc.core.errors import ModelUnavailable
from longdoc.adapters.claude_response import to_response as _to_response
from longdoc.core.messages import ModelRequest, ModelResponse
from longdoc.core.models_catalogue import Provider, spec_for, strict_tools_allowed
from longdoc.core.request_rules import model_fields

log = logging.getLogger(__name__)

#: ``anthropic_version`` Bedrock's Anthropic Messages API requires in the request body.
BEDROCK_ANTHROPIC_VERSION = "bedrock-2023-05-31"



class KeySource(Protocol):
    """Returns the current API key; ``refresh=True`` bypasses any cache (after a 401)."""

    def __call__(self, *, refresh: bool = False) -> str: ...


def _constant(key: str) -> KeySource:
    """A key source that always returns ``key`` (a key given as a plain string)."""

    def source(*, refresh: bool = False) -> str:
        return key

    return source


def _fingerprint(key: str) -> str:
    """SHA-256 of a key: compared to notice a new key without keeping the key itself."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


class ClaudeModel:
    """A :class:`longdoc.core.ports.Model` backed by Claude, on the Anthropic API or Amazon Bedrock.

    Args:
        api_key: ``provider="anthropic"``: the API key, or a :class:`KeySource` such as
            :class:`longdoc.adapters.secrets.SecretKey` (rotation, see the module docstring);
            held by the SDK client only, never logged or included in ``repr``.
            ``provider="bedrock"``: must be ``None`` (the IAM role signs the requests).
        model: model id sent with every call: an Anthropic id (``"claude-sonnet-5-5"``) or a
            Bedrock model / inference profile id
            (``"us.anthropic.claude-sonnet-4-5-20250929-v1:0"``); also :attr:`name`, recorded on
            every result.
        provider: ``"anthropic"`` (default) or ``"bedrock"``; also :attr:`provider`.
        base_url: API root (default: the SDK's, ``https://api.anthropic.com`` or
            ``https://bedrock-runtime.<region>.amazonaws.com``); tests point it at a loopback fake.
        aws_region: Bedrock Region when ``aws_access`` is None (default: the SDK reads ``AWS_REGION`` /
            ``AWS_DEFAULT_REGION`` and the credentials from the environment at each request).
        aws_access: Bedrock's region and credentials resolved once at composition
            (:func:`longdoc.adapters.bedrock_access.resolve_bedrock_access`), passed to the SDK client
            explicitly, so a later change of the environment (the local engine's moto sandbox) never
            reaches it; refreshed temporary credentials rebuild the client, as a rotated key does.
        max_retries: retries the SDK performs before an error reaches us (SDK default 2).
        timeout: seconds per HTTP attempt (600 s = the SDK's own default for
            non-streaming calls, below the 15-minute Lambda limit). A request's
            ``timeout_seconds`` replaces it: then the whole call, retries included, fits
            that budget (:func:`longdoc.adapters.claude_budget.create_within`).

    Raises:
        ValueError: a key given with ``provider="bedrock"``, or none with ``"anthropic"``.
    """

    name: str
    provider: Provider

    def __init__(
        self,
        api_key: str | KeySource | None,
        model: str,
        *,
        provider: Provider = "anthropic",
        base_url: str | None = None,
        aws_region: str | None = None,
        aws_access: BedrockAccess | None = None,
        max_retries: int = 2,
        timeout: float = 600.0,
    ) -> None:
        self.name = model
        self.provider = provider
        self.max_retries = max_retries
        self._base_url = base_url
        self._timeout = timeout
        self._key_source: KeySource | None = None
        self._aws_access: BedrockAccess | None = None
        self._key_fingerprint: str | None = None
        self._client: Any
        self._counts: dict[str, int] = {}
        spec = spec_for(model, provider) if provider in ("anthropic", "bedrock") else None
        #: Whether ``"strict": true`` may go on a tool (:func:`longdoc.core.models_catalogue.strict_tools_allowed`).
        self.strict_tools = strict_tools_allowed(model, provider)
        #: Bedrock only: ``"messages"`` (``AnthropicBedrockMantle``) or ``"invoke"`` (``AnthropicBedrock``).
        self.endpoint: str | None = None
        if provider == "bedrock":
            if api_key is not None:
                raise ValueError("provider 'bedrock' signs requests with AWS credentials: pass no API key")
            self.endpoint = spec.endpoint if spec is not None and spec.endpoint else "invoke"
            self._aws_access = aws_access
            self._client = self._bedrock_client({"aws_region": aws_region} if aws_access is None
                                                else aws_access.client_kwargs())
        elif provider == "anthropic":
            if api_key is None:
                raise ValueError("provider 'anthropic' needs an API key or a key source")
            self._key_source = _constant(api_key) if isinstance(api_key, str) else api_key
            self._client = self._anthropic_client(self._key_source())
        else:
            raise ValueError(f"unknown Claude provider {provider!r}: use 'anthropic' or 'bedrock'")

    def __repr__(self) -> str:
        return f"ClaudeModel(provider={self.provider!r}, model={self.name!r})"

    def _anthropic_client(self, key: str) -> Any:
        """A new Anthropic API client holding ``key``; remembers the key's fingerprint."""
        import anthropic

        self._key_fingerprint = _fingerprint(key)
        return anthropic.Anthropic(api_key=key, base_url=self._base_url, max_retries=self.max_retries,
                                   timeout=self._timeout)

    def _bedrock_client(self, auth: dict[str, Any]) -> Any:
        """A new Bedrock client (Mantle for ``endpoint="messages"``) with ``auth`` (region, keys or
        bearer key: :meth:`BedrockAccess.client_kwargs`); remembers the credentials' fingerprint."""
        import anthropic

        self._key_fingerprint = _fingerprint(repr(sorted(auth.items())))
        bedrock = anthropic.AnthropicBedrockMantle if self.endpoint == "messages" else anthropic.AnthropicBedrock
        return bedrock(**auth, base_url=self._base_url, max_retries=self.max_retries, timeout=self._timeout)

    def _current_client(self, *, refresh: bool = False) -> Any:
        """The client for the key source's current key (Bedrock: the current AWS credentials), rebuilt when it changed."""
        if self._key_source is None:  # Bedrock
            if self._aws_access is not None:
                auth = self._aws_access.client_kwargs()
                if _fingerprint(repr(sorted(auth.items()))) != self._key_fingerprint:
                    log.info("AWS credentials for Bedrock changed (refreshed); rebuilding the client")
                    self._client = self._bedrock_client(auth)
            return self._client
        key = self._key_source(refresh=refresh)
        if _fingerprint(key) != self._key_fingerprint:
            log.info("Anthropic API key changed; rebuilding the client")
            self._client = self._anthropic_client(key)
        return self._client

    def create(self, request: ModelRequest) -> ModelResponse:
        """Run one Messages API call (Anthropic API or Bedrock InvokeModel) and return it as a
        :class:`ModelResponse`.

        The request is :meth:`_kwargs`'s (table-driven ``thinking`` / ``output_config``). On
        Bedrock's InvokeModel endpoint the body also carries ``anthropic_version`` =
        :data:`BEDROCK_ANTHROPIC_VERSION`.

        Raises:
            ModelRejectsRequest: (before sending) the model's row rejects the request: a forced
                ``tool_choice`` or an assistant prefill (:mod:`longdoc.core.request_rules`).
            ModelThrottled: HTTP 429 or 529 (Bedrock: ThrottlingException, ModelNotReadyException)
                after the SDK's retries.
            ModelUnavailable: connection failure, timeout or other 5xx (Bedrock also
                ModelTimeoutException, ModelErrorException) after the retries; an HTTP 200
                whose body is not JSON (an SSE stream, an HTML page).
            ModelRequestError: any other 4xx, including a 401 that persists after the key was
                read again; the message carries the status, the error type and its message.
        """
        kwargs = self._kwargs(request)
        return self._with_key_rotation(lambda client: self._call(kwargs, request, client))

    def _with_key_rotation(self, call: Callable[[Any], ModelResponse]) -> ModelResponse:
        """``call(client)`` with the current client; after a 401 (Anthropic API) the key is read again,
        bypassing the cache, and ``call`` retried once if it changed (module docstring). Raises
        :class:`ModelRequestError` for a 401 that persists, or on Bedrock."""
        import anthropic  # already loaded by __init__; cheap

        try:
            return call(self._current_client())
        except anthropic.AuthenticationError as exc:
            if self._key_source is None:
                raise status_error(exc) from exc
            # A revoked or rotated key: read the secret again, bypassing the cache, and retry
            # once if it changed; the same key rejected again is a request error.
            before = self._key_fingerprint
            client = self._current_client(refresh=True)
            if self._key_fingerprint == before:
                raise status_error(exc) from exc
            log.warning("Anthropic API rejected the cached key; retrying once with the current secret")
            try:
                return call(client)
            except anthropic.AuthenticationError as again:
                raise status_error(again) from again

    def _call(self, kwargs: dict[str, Any], request: ModelRequest, client: Any) -> ModelResponse:
        """One ``messages.create`` with ``client``; SDK errors other than 401 mapped (see :meth:`create`).

        An HTTP 200 whose body is not JSON (a gateway's SSE stream, a proxy's page) is retried
        like a 5xx, which the SDK does not do for a 200: up to ``max_retries`` more attempts,
        0.5 s doubling (at most 8 s) between them and within ``timeout_seconds`` when the
        request has one; what is left is :class:`ModelUnavailable`.
        """
        started = time.monotonic()
        budget = request.timeout_seconds
        for attempt in range(self.max_retries + 1):
            left = None if budget is None else max(1.0, budget - (time.monotonic() - started))
            answer = self._call_once(kwargs, request.model_copy(update={"timeout_seconds": left}), client)
            if isinstance(answer, ModelResponse):
                return answer
            pause = min(0.5 * 2 ** attempt, 8.0)
            out_of_time = budget is not None and time.monotonic() - started + pause >= budget
            if attempt == self.max_retries or out_of_time:
                raise answer
            log.warning("%s; retrying in %.1f s", answer, pause)
            time.sleep(pause)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _call_once(self, kwargs: dict[str, Any], request: ModelRequest,
                   client: Any) -> ModelResponse | ModelUnavailable:
        """One attempt of :meth:`_call`: the response, or, for a non-JSON 200, the
        :class:`ModelUnavailable` it ends as (returned, not raised, so that :meth:`_call` retries it)."""
        import anthropic

        try:
            if request.timeout_seconds is not None:
                # The caller's budget (e.g. the Lambda's remaining time) bounds the whole call,
                # retries and waits included; what does not fit fails as ModelUnavailable
                # (retried by the state machine from the checkpoint).
                raw = create_within(client, kwargs, request.timeout_seconds, self.max_retries, self._timeout)
            else:
                raw = client.messages.with_raw_response.create(**kwargs)
            message = raw.parse()
        except anthropic.AuthenticationError:
            raise  # handled by create(): refetch the key and retry once
        except anthropic.APIStatusError as exc:
            raise status_error(exc) from exc
        except anthropic.APIConnectionError as exc:  # includes APITimeoutError
            raise ModelUnavailable(f"Claude API unreachable ({self.provider}): {exc.message}") from exc
        if isinstance(message, str) or not hasattr(message, "content"):
            return not_json(f"Claude API ({self.provider})", raw.headers.get("content-type"), message)
        return _to_response(message)

    def _kwargs(self, request: ModelRequest) -> dict[str, Any]:
        """The ``messages.create`` keyword arguments of ``request`` (also those of ``messages.stream``).

        ``model``, ``max_tokens`` (output tokens, thinking included), ``messages``; ``system``
        and ``tools`` when not empty (``cache_control`` marks kept), ``tool_choice`` only with
        tools (the API rejects it without); ``thinking`` and ``output_config`` (``effort``)
        from the capability table for ``request.job``
        (:func:`longdoc.core.request_rules.model_fields`, none for a model not in the table).
        No sampling parameter is ever sent. On Bedrock's InvokeModel endpoint the body also carries
        ``anthropic_version`` = :data:`BEDROCK_ANTHROPIC_VERSION`. Raises ``ModelRejectsRequest``
        (see :meth:`create`).
        """
        tool_choice = request.tool_choice if request.tools else None
        messages = [m.model_dump() for m in request.messages]
        fields = model_fields(self.name, self.provider, request.job, tool_choice, messages)
        kwargs: dict[str, Any] = {"model": self.name, "max_tokens": request.max_tokens, "messages": messages}
        if request.system:
            kwargs["system"] = request.system
        if request.tools:
            kwargs["tools"] = request.tools if self.strict_tools else [without_strict(t) for t in request.tools]
            kwargs["tool_choice"] = tool_choice
        kwargs.update(fields)  # thinking, output_config: the SDK 2.15 has parameters for both
        if self.endpoint == "invoke":
            kwargs["extra_body"] = {"anthropic_version": BEDROCK_ANTHROPIC_VERSION}
        return kwargs

    # --- Token counting (:class:`longdoc.core.ports.TokenCounter`) ---

    def count_tokens(self, request: ModelRequest) -> int:
        """The input tokens ``request`` would take (``POST /v1/messages/count_tokens``), cached.

        Sends what :meth:`create` would (:meth:`_kwargs` without ``max_tokens``; the same
        request rules apply, MIG1021), so the count includes tools, system and thinking
        settings. A repeated request (same SHA-256 of its JSON) is answered from an
        in-process cache without an HTTP call. Not on Bedrock's InvokeModel endpoint (it has
        none): raises ``NotImplementedError`` there, and the caller falls back to its estimate.
        Errors map as in :meth:`create` (ModelThrottled, ModelUnavailable, ModelRequestError).
        The count is the API's estimate of the billed input (TOKCOUNT page).
        """
        import json

        if self.endpoint == "invoke":
            raise NotImplementedError("Bedrock InvokeModel has no token-counting endpoint")
        kwargs = self._kwargs(request)
        kwargs.pop("max_tokens")
        key = hashlib.sha256(json.dumps(kwargs, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()
        if key in self._counts:
            return self._counts[key]
        with translated(f"Claude API ({self.provider})"):
            raw = self._current_client().messages.with_raw_response.count_tokens(**kwargs)
            counted = raw.parse()
        if isinstance(counted, str) or not hasattr(counted, "input_tokens"):
            raise not_json(f"Claude API ({self.provider})", raw.headers.get("content-type"), counted)
        self._counts[key] = int(counted.input_tokens)
        return self._counts[key]

    # --- Streaming (summaries; :class:`longdoc.core.ports.StreamingModel`) ---

    def stream(self, request: ModelRequest, on_text: Callable[[str], None]) -> ModelResponse:
        """Run one Messages API call streamed (SSE; Bedrock InvokeModel: its event stream); ``on_text``
        gets each text delta as it arrives.

        Uses the SDK's ``messages.stream`` helper (``text_stream``, then the accumulated final message),
        so a long answer never waits on one response or trips the SDK's guard against long
        non-streaming requests. The request is built as in :meth:`create` (:meth:`_kwargs`: table-driven
        fields, Bedrock's ``anthropic_version`` on InvokeModel, the same refusals: ModelRejectsRequest
        before sending), with the key source's current key and the same one-time retry after a 401.
        An error inside the stream after its HTTP 200 is classified by its type, and retryable ones
        are retried within ``request.timeout_seconds``, a failed attempt's text discarded
        (:func:`longdoc.adapters.claude_stream.stream_within`). Errors map as in :meth:`create`
        (ModelThrottled, ModelUnavailable, ModelRequestError); a connection dropped mid-stream is
        ModelUnavailable.
        """
        kwargs = self._kwargs(request)

        def call(client: Any) -> ModelResponse:
            return _to_response(stream_within(client, kwargs, on_text, budget=request.timeout_seconds,
                                              max_retries=self.max_retries, api="Claude API"))

        return self._with_key_rotation(call)


def without_strict(tool: dict[str, Any]) -> dict[str, Any]:
    """``tool`` without its ``"strict"`` flag, for an endpoint that does not support strict tool use
    (Bedrock: structured outputs are listed as not supported,
    https://platform.claude.com/docs/en/build-with-claude/claude-in-amazon-bedrock); the harness still
    checks every tool input against its schema (:func:`longdoc.extract.tools.input_problems`)."""
    return {k: v for k, v in tool.items() if k != "strict"}
