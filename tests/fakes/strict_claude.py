"""A strict, brain-agnostic Claude: the Messages fake that answers as the documented contract says.

:class:`ClaudeContract` is the surface-independent part, shared by the Messages
(:class:`StrictClaude`), Batches (:class:`tests.fakes.batches_server.StrictBatches`) and Bedrock
(:class:`tests.fakes.bedrock_server.StrictBedrock`) fakes:

1. every request is first checked by :func:`tests.fakes.claude_contract.check_request`; a refusal
   is answered with its documented 400/404 and recorded in ``rejected``;
2. the *brain* (the fake's scripted replies or ``responder``: any code that plays the model)
   then answers, and :meth:`ClaudeContract.shape` makes that answer what the model would send:
   * when thinking is on for the request (explicit ``adaptive`` / ``enabled``, or ``thinking``
     absent on a row whose default is adaptive, S55-MIG; ``between_tools`` only between tool
     calls, S55-NEW) the reply starts with a thinking block
     ``{"type": "thinking", "thinking": "", "signature": ...}`` (empty text: ``display``
     ``"omitted"`` is the default, S55-MIG; any other ``display`` gets a short text), signed by
     the contract's :class:`~tests.fakes.claude_wire.SignatureBook`;
   * thinking spends ``thinking_tokens`` output tokens (``min`` with ``budget_tokens`` for
     ``enabled``) against ``max_tokens`` (THINK: thinking counts toward ``max_tokens`` and is
     billed as output): when nothing is left the reply is ``stop_reason: "max_tokens"`` holding
     only the thinking block; otherwise the brain's blocks are kept while they fit (a block that
     does not fit, and every one after it, is cut: ``max_tokens``);
   * ``usage`` is computed: input side by the surface's :class:`~tests.fakes.claude_cache.StrictCache`,
     output = thinking + the kept blocks by the fake tokenizer.
3. ``POST /v1/messages/count_tokens`` answers ``{"input_tokens": N}`` with the same checks
   (MIG1021: the 2026-10-21 rules apply to token counting) and the fake tokenizer.

Streaming (``enable_streaming``) sends the thinking block as ``content_block_start`` (thinking)
+ ``signature_delta``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from tests.fakes.anthropic_server import FakeAnthropic, Reply, Responder
from tests.fakes.claude_cache import StrictCache
from tests.fakes.claude_contract import ApiError, Surface, check_request, model_key, row_for, thinking_mode
from tests.fakes.claude_wire import THINKING_TYPES, SignatureBook, block_tokens, blocks_of, count_input_tokens
from tests.fakes.contract_holder import HoldsContract
from tests.fakes.loopback import RecordedRequest

DEFAULT_THINKING_TOKENS = 64
"""Output tokens each reply spends on thinking (configurable per fake)."""


@dataclass(frozen=True)
class Rejection:
    """A request a strict fake refused: where, the body, and the documented error it answered."""

    surface: str
    body: Any
    error: ApiError


class ClaudeContract:
    """Checks requests and shapes replies for one surface (module docstring); thread-safe.

    Attributes:
        book: the thinking signatures issued and verified.
        cache: this surface's prompt cache.
        rejected: every refused request (:class:`Rejection`), in order.
        checked: every request body checked (accepted or not), in order.
    """

    def __init__(self, surface: Surface, *, thinking_tokens: int = DEFAULT_THINKING_TOKENS,
                 clock: Callable[[], float] = time.time, book: SignatureBook | None = None) -> None:
        self.surface: Surface = surface
        self.thinking_tokens = thinking_tokens
        self.book = book or SignatureBook()
        self.cache = StrictCache(surface=surface, clock=clock)
        self.rejected: list[Rejection] = []
        self.checked: list[Any] = []
        self._lock = threading.Lock()

    def check(self, body: Any, api_version: str, surface: Surface | None = None) -> ApiError | None:
        """:func:`check_request` of ``body``; a refusal is recorded in :attr:`rejected`."""
        where = surface or self.surface
        error = check_request(body, surface=where, api_version=api_version, signatures=self.book)
        with self._lock:
            self.checked.append(body)
            if error is not None:
                self.rejected.append(Rejection(where, body, error))
        return error

    def shape(self, body: dict[str, Any], message: dict[str, Any], *, batch: str | None = None) -> dict[str, Any]:
        """The brain's ``message`` as the model sends it for ``body`` (module docstring, step 2)."""
        row = row_for(body.get("model"), self.surface)
        assert row is not None, "shape() after a passed check only"
        mode = thinking_mode(body, row)
        content = [b for b in message.get("content") or [] if b.get("type") not in THINKING_TYPES]
        last = (body.get("messages") or [{}])[-1]
        between = any(b.get("type") == "tool_result" for b in blocks_of(last.get("content")))
        thinks = mode in ("adaptive", "enabled") or (mode == "between_tools" and bool(body.get("tools")) and between)
        stop, spent, kept = message.get("stop_reason"), 0, []
        max_tokens = int(body.get("max_tokens") or 0)
        if thinks:
            settings = body.get("thinking") if isinstance(body.get("thinking"), dict) else {}
            display = settings.get("display", "omitted")
            text = "" if display == "omitted" else "The fake model considered the request."
            kept.append(self.book.issue(model_key(row), body, text))
            spent = self.thinking_tokens
            if mode == "enabled" and isinstance(settings.get("budget_tokens"), int):
                spent = min(spent, settings["budget_tokens"])
        if thinks and spent >= max_tokens:
            stop, spent = "max_tokens", max_tokens
        else:
            for block in content:
                cost = block_tokens(block)
                if spent + cost > max_tokens:
                    stop = "max_tokens"
                    break
                kept.append(block)
                spent += cost
        usage = self.cache.account(model_key(row), body, row.spec.min_cacheable_tokens, batch=batch)
        usage["output_tokens"] = max(spent, 1)
        return {**message, "content": kept, "stop_reason": stop, "usage": usage}

    def cache_stats(self) -> dict[str, Any]:
        """This surface's cache totals (:meth:`~tests.fakes.claude_cache.StrictCache.stats`)."""
        return self.cache.stats()


def api_version_of(request: RecordedRequest) -> str:
    """The ``anthropic-version`` header of a request (the SDK 2.x sends ``2026-10-21``, VERS)."""
    return request.headers.get("anthropic-version", "")


class StrictClaude(HoldsContract, FakeAnthropic):
    """:class:`FakeAnthropic` holding every request to the contract (module docstring).

    Scripted replies (``enqueue``) and ``responder`` are the brain; ``rejected`` lists the
    refused requests (empty when the product kept every rule); :meth:`cache_stats` gives the
    cache totals. ``thinking_tokens``: output tokens per reply spent on thinking; ``clock``:
    seconds, for cache lifetimes.
    """

    name = "strict-claude"

    def __init__(self, responder: Responder | None = None, *, thinking_tokens: int = DEFAULT_THINKING_TOKENS,
                 clock: Callable[[], float] = time.time) -> None:
        self.contract = ClaudeContract("messages", thinking_tokens=thinking_tokens, clock=clock)
        super().__init__(responder)


    def reply(self, request: RecordedRequest) -> Reply:
        """Checks first (documented 400/404), then the brain's answer shaped; count_tokens answered here."""
        if request.method == "POST" and request.path == "/v1/messages/count_tokens":
            error = self.contract.check(request.body, api_version_of(request), "count_tokens")
            if error is not None:
                return Reply(status=error.status, body=error.body())
            return Reply(status=200, body={"input_tokens": count_input_tokens(request.body)})
        if request.method == "POST" and request.path == "/v1/messages":
            error = self.contract.check(request.body, api_version_of(request))
            if error is not None:
                return Reply(status=error.status, body=error.body())
        answer = super().reply(request)
        payload = answer.body
        if answer.status == 200 and isinstance(payload, dict) and payload.get("type") == "message":
            answer = replace(answer, body=self.contract.shape(request.body, payload))
        return answer
