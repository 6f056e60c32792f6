"""Adapters of the :class:`longdoc.bulk.ports.BatchClient` port: the Anthropic Message Batches API
through the ``anthropic`` SDK (``client.messages.batches.create/retrieve/results/cancel``), and a
local one answering in the same shapes from a :class:`~longdoc.core.ports.Model`.

The SDK's errors leave :class:`AnthropicBatches` translated as the Claude adapter's are
(:mod:`longdoc.adapters.anthropic_errors`): ``ModelThrottled`` (429, 529), ``ModelUnavailable``
(other 5xx, connection failures, timeouts), ``ModelRequestError`` (other 4xx), and
``BatchNotFound`` for a retrieve's 404; the bulk state machine retries on those names. An HTTP
200 whose body is not JSON (a batch answer, or a results line) is ``ModelUnavailable``
(:func:`~longdoc.adapters.anthropic_errors.not_json`); a results download cut mid-stream is
not translated (see :mod:`longdoc.adapters.anthropic_errors`)."""

from __future__ import annotations

import itertools
import json
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from longdoc.adapters.anthropic_errors import not_json, translated
from longdoc.adapters.claude import KeySource
from longdoc.adapters.claude_response import to_response as _to_response
from longdoc.bulk.ports import BatchInfo, BatchResult
from longdoc.bulk.requests import model_request
from longdoc.core.errors import BatchNotFound, ModelRequestError
from longdoc.core.ports import Model


#: How the batch client's errors name the API.
API = "Message Batches API"
log = logging.getLogger(__name__)
T = TypeVar("T")


def _constant(key: str) -> KeySource:
    """A key source that always gives ``key`` (a key passed as a string: nothing to refresh)."""
    def source(*, refresh: bool = False) -> str:
        return key

    return source


class AnthropicBatches:
    """Message Batches through the SDK. ``api_key`` / ``base_url`` as for
    :class:`~longdoc.adapters.claude.ClaudeModel` (tests point ``base_url`` at a loopback fake).

    Key rotation (issue 26), as the Claude adapter does it: ``api_key`` may be a key source
    (``source(refresh=False) -> str``, :class:`~longdoc.adapters.secrets.SecretKey`) asked before each
    call (its cached value; the client is rebuilt when the key changed); after a 401 the source is
    asked with ``refresh=True`` and the call retried once when the key changed. A 401 that
    persists is ``ModelRequestError``."""

    def __init__(self, api_key: str | KeySource, base_url: str | None = None, max_retries: int = 2) -> None:
        self._source: KeySource = _constant(api_key) if isinstance(api_key, str) else api_key
        self._base_url = base_url
        self._max_retries = max_retries
        self._key = ""
        self._client: Any = None
        self._current()

    def _current(self, *, refresh: bool = False) -> Any:
        """The client for the source's current key, rebuilt when the key changed."""
        import anthropic

        key = self._source(refresh=refresh)
        if self._client is None or key != self._key:
            self._key = key
            self._client = anthropic.Anthropic(api_key=key, base_url=self._base_url, max_retries=self._max_retries)
        return self._client

    def _rotating(self, call: Callable[[Any], T]) -> T:
        """``call(client)``; after a 401 the key is read again (bypassing the cache) and ``call``
        retried once if it changed; otherwise the 401 goes on (translated by the caller)."""
        import anthropic

        try:
            return call(self._current())
        except anthropic.AuthenticationError:
            before = self._key
            client = self._current(refresh=True)
            if self._key == before:
                raise
            log.warning("Message Batches API rejected the cached key; retrying once with the current secret")
            return call(client)

    def __repr__(self) -> str:
        return "AnthropicBatches()"

    @staticmethod
    def _info(batch: Any) -> BatchInfo:
        """The :class:`BatchInfo` of an SDK batch; ``ModelUnavailable`` for a 200 body that was not JSON."""
        if isinstance(batch, str):
            raise not_json(API, "not JSON", batch)
        created = batch.created_at.timestamp() if batch.created_at else None
        return BatchInfo(id=batch.id, processing_status=batch.processing_status,
                         counts=batch.request_counts.model_dump(), created_at=created)

    def create(self, requests: list[dict[str, Any]]) -> BatchInfo:
        """``POST /v1/messages/batches``."""
        with translated(API):
            return self._info(self._rotating(lambda c: c.messages.batches.create(requests=requests)))

    def retrieve(self, batch_id: str) -> BatchInfo:
        """``GET /v1/messages/batches/{id}``; 404 -> :class:`BatchNotFound`."""
        import anthropic

        with translated(API):
            try:
                return self._info(self._rotating(lambda c: c.messages.batches.retrieve(batch_id)))
            except anthropic.NotFoundError as exc:
                raise BatchNotFound(batch_id) from exc

    def results(self, batch_id: str) -> Iterator[BatchResult]:
        """The results JSONL, decoded line by line as it streams; a line that is not JSON (an SSE
        or HTML body answered with 200) is ``ModelUnavailable``."""
        with translated(API):
            lines = iter(self._rotating(lambda c: c.messages.batches.results(batch_id)))
            while True:
                try:
                    line = next(lines)
                except StopIteration:
                    return
                except json.JSONDecodeError as exc:
                    raise not_json(API, "not JSONL", exc.doc) from exc
                result = line.result
                if result.type == "succeeded":
                    yield BatchResult(line.custom_id, "succeeded", response=_to_response(result.message))
                elif result.type == "errored":
                    error = getattr(result.error, "error", None)
                    yield BatchResult(line.custom_id, "errored", error_type=getattr(error, "type", None),
                                      error_message=getattr(error, "message", None))
                else:
                    yield BatchResult(line.custom_id, result.type)

    def cancel(self, batch_id: str) -> BatchInfo:
        """``POST /v1/messages/batches/{id}/cancel``."""
        with translated(API):
            return self._info(self._rotating(lambda c: c.messages.batches.cancel(batch_id)))

    def list_recent(self, since: float) -> Iterator[BatchInfo]:
        """``GET /v1/messages/batches`` (most recent first, 100 a page), until a batch created before ``since``
        (epoch seconds)."""
        with translated(API):
            for batch in self._rotating(lambda c: c.messages.batches.list(limit=100)):
                info = self._info(batch)
                if info.created_at is not None and info.created_at < since:
                    return
                yield info


def local_batch_hold() -> float:
    """Seconds a local batch reads ``in_progress`` after it was created: ``LONGDOC_LOCAL_BATCH_HOLD_SECONDS``
    (unset: 0, ended at once); tests stop a job between Submit and Harvest with it."""
    import os

    return float(os.environ.get("LONGDOC_LOCAL_BATCH_HOLD_SECONDS") or 0)


Outcome = Callable[[str], BatchResult | None]
"""Test hook: ``outcome(custom_id)`` returns the result to give instead of the model's answer, or None."""


class LocalBatches:
    """Batches answered at create time by ``model`` (offline baseline or Claude synchronously),
    results kept as JSONL files under ``root``; ``outcome`` injects errored/canceled/expired results.
    ``hold_seconds``: a batch reads ``in_progress`` for that long after it was created, as a real
    batch does while it runs (0: ``ended`` at once); tests use it to stop a job between Submit and
    Harvest."""

    def __init__(self, model: Model, root: Path, outcome: Outcome | None = None, hold_seconds: float = 0.0) -> None:
        self.model, self.root, self.outcome, self.hold_seconds = model, root, outcome, hold_seconds
        self._ids = itertools.count(len(list(root.glob("*.jsonl"))) if root.exists() else 0)
        root.mkdir(parents=True, exist_ok=True)

    def _answer(self, request: dict[str, Any]) -> BatchResult:
        injected = self.outcome(request["custom_id"]) if self.outcome else None
        if injected is not None:
            return injected
        try:
            return BatchResult(request["custom_id"], "succeeded", response=self.model.create(
                model_request(request["params"])))
        except ModelRequestError as exc:
            return BatchResult(request["custom_id"], "errored", error_type="invalid_request_error",
                               error_message=str(exc))

    def create(self, requests: list[dict[str, Any]]) -> BatchInfo:
        """Answer every request now and store the results; the batch is ``ended`` at once."""
        batch_id = f"msgbatch_local{next(self._ids):06d}"
        with (self.root / f"{batch_id}.jsonl").open("w") as out:
            for request in requests:
                r = self._answer(request)
                out.write(json.dumps({"custom_id": r.custom_id, "type": r.type, "error_type": r.error_type,
                                      "error_message": r.error_message,
                                      "response": r.response.model_dump() if r.response else None}) + "\n")
        return self.retrieve(batch_id)

    def retrieve(self, batch_id: str) -> BatchInfo:
        """``ended`` for a stored batch (its request count, its file's time), ``in_progress`` within
        ``hold_seconds`` of its creation; :class:`BatchNotFound` otherwise."""
        path = self.root / f"{batch_id}.jsonl"
        try:
            with path.open("rb") as lines:
                count = sum(1 for _ in lines)
            created = path.stat().st_mtime
        except FileNotFoundError:
            raise BatchNotFound(batch_id) from None
        if time.time() - created < self.hold_seconds:
            return BatchInfo(batch_id, "in_progress", {"processing": count, "succeeded": 0}, created_at=created)
        return BatchInfo(batch_id, "ended", {"processing": 0, "succeeded": count}, created_at=created)

    def results(self, batch_id: str) -> Iterator[BatchResult]:
        """The stored results, line by line."""
        from longdoc.core.messages import ModelResponse

        with (self.root / f"{batch_id}.jsonl").open() as lines:
            for line in lines:
                d = json.loads(line)
                response = ModelResponse(**d["response"]) if d["response"] else None
                yield BatchResult(d["custom_id"], d["type"], response, d["error_type"], d["error_message"])

    def cancel(self, batch_id: str) -> BatchInfo:
        """Nothing to cancel: local batches end at create."""
        return self.retrieve(batch_id)

    def list_recent(self, since: float) -> Iterator[BatchInfo]:
        """The stored batches whose file was written at or after ``since`` (epoch seconds), newest first."""
        infos = [self.retrieve(path.stem) for path in self.root.glob("*.jsonl")]
        yield from sorted((i for i in infos if (i.created_at or 0) >= since), key=lambda i: -(i.created_at or 0))
