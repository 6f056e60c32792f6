"""A loopback fake of the Message Batches API (``/v1/messages/batches``) for the real ``anthropic`` SDK.

Shapes from https://docs.anthropic.com/en/api/creating-message-batches,
https://docs.anthropic.com/en/api/retrieving-message-batches and
https://docs.anthropic.com/en/api/retrieving-message-batch-results: create answers a
``message_batch`` ``in_progress``; each retrieve after ``polls_to_end`` polls reports ``ended``
with a ``results_url``; results are JSONL (one ``{"custom_id", "result"}`` per line), shuffled.
Each request is answered by ``answer(params) -> Messages API message JSON``, unless
``outcomes[custom_id]`` names ``errored`` / ``canceled`` / ``expired`` (each used once).
``not_found_after_create`` 404s the next retrieves of a new batch. ``GET /v1/messages/batches``
lists the batches most recent first (``limit``, ``after_id``; ``has_more``, ``first_id``,
``last_id``, https://docs.anthropic.com/en/api/listing-message-batches); ``created_at`` is the
time of the create (``clock()``, epoch seconds).

A create is refused as the real API refuses it (:func:`create_problem`), each rule from its page:

* ``requests``: 1 to 100,000 items; each ``custom_id`` unique in the batch and matching
  ``^[a-zA-Z0-9_-]{1,64}$``; each ``params`` with ``model``, ``max_tokens`` (an integer of at least
  1) and a non-empty ``messages`` list (the create reference,
  https://platform.claude.com/docs/en/api/messages/batches/create) -> 400 ``invalid_request_error``;
* a body over 256 MB (``max_bytes``; the batch-processing guide's limit of 100,000 requests or
  256 MB, https://platform.claude.com/docs/en/build-with-claude/batch-processing) -> 413
  ``request_too_large`` (the errors page, https://platform.claude.com/docs/en/api/errors).

Every error answers in the errors page's shape: ``{"type": "error", "error": {"type", "message"},
"request_id"}``.
"""

from __future__ import annotations

import json
import random
import re
import time
from datetime import UTC, datetime
from collections.abc import Callable
from typing import Any

from tests.fakes.contract_holder import HoldsContract
from tests.fakes.loopback import LoopbackFake

PATH = "/v1/messages/batches"
MAX_REQUESTS = 100_000
"""Requests per batch (create reference: ``requests`` maxItems 100000)."""
MAX_BYTES = 256 * 1024 * 1024
"""Bytes per create body (batch-processing guide: 256 MB)."""
CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""``custom_id`` pattern (create reference)."""


def api_error(status: int, error_type: str, message: str) -> tuple[int, dict[str, Any]]:
    """An error answer in the errors page's shape (https://platform.claude.com/docs/en/api/errors)."""
    return status, {"type": "error", "error": {"type": error_type, "message": message},
                    "request_id": f"req_fake{random.randrange(10**12):012d}"}


def create_problem(body: Any, max_bytes: int = MAX_BYTES) -> tuple[int, dict[str, Any]] | None:
    """Why the real API would refuse this create body (status and error body), or None when it is valid.

    Rules and sources in the module docstring; the size is the body's JSON (UTF-8) in bytes.
    """
    if len(json.dumps(body, ensure_ascii=False).encode()) > max_bytes:
        return api_error(413, "request_too_large", f"Request exceeds the maximum allowed number of bytes ({max_bytes})")
    requests = body.get("requests") if isinstance(body, dict) else None
    if not isinstance(requests, list) or not 1 <= len(requests) <= MAX_REQUESTS:
        count = len(requests) if isinstance(requests, list) else "no"
        return api_error(400, "invalid_request_error", f"requests: expected 1 to {MAX_REQUESTS} items, got {count}")
    seen: set[str] = set()
    for i, request in enumerate(requests):
        problem = _request_problem(request, seen)
        if problem:
            return api_error(400, "invalid_request_error", f"requests.{i}{problem}")
    return None


def _request_problem(request: Any, seen: set[str]) -> str | None:
    """What is wrong with one batch request (``custom_id`` and the required ``params``), or None."""
    if not isinstance(request, dict):
        return ": expected an object"
    cid = request.get("custom_id")
    if not isinstance(cid, str) or not CUSTOM_ID.match(cid):
        return f".custom_id: {cid!r} does not match ^[a-zA-Z0-9_-]{{1,64}}$"
    if cid in seen:
        return f".custom_id: {cid!r} is not unique within the batch"
    seen.add(cid)
    params = request.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("model"), str):
        return ".params.model: Field required"
    tokens = params.get("max_tokens")
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1:
        return f".params.max_tokens: expected an integer of at least 1, got {tokens!r}"
    if not isinstance(params.get("messages"), list) or not params["messages"]:
        return ".params.messages: expected a non-empty list"
    return None


class FakeBatches(LoopbackFake):
    """The fake; ``batches`` maps id -> ``{"requests", "results", "polls", "canceled"}``."""

    name = "fake-batches"

    def __init__(self, answer: Callable[[dict[str, Any]], dict[str, Any]], *, polls_to_end: int = 1,
                 seed: int = 7, clock: Callable[[], float] = time.time, max_bytes: int = MAX_BYTES) -> None:
        self.answer, self.polls_to_end, self.rng, self.clock = answer, polls_to_end, random.Random(seed), clock
        self.max_bytes = max_bytes
        self.batches: dict[str, dict[str, Any]] = {}
        self.outcomes: dict[str, dict[str, Any]] = {}
        self.not_found_after_create = 0
        super().__init__()
        self._server.RequestHandlerClass = _jsonl_handler(self._server.RequestHandlerClass, self)

    def _object(self, batch_id: str) -> dict[str, Any]:
        b = self.batches[batch_id]
        ended = b["canceled"] or b["polls"] >= self.polls_to_end
        counts = {k: 0 for k in ("processing", "succeeded", "errored", "canceled", "expired")}
        for line in b["results"]:
            counts[line["result"]["type"] if ended else "processing"] += 1
        return {"id": batch_id, "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
                "request_counts": counts, "created_at": _iso(b["created_at"]),
                "expires_at": "2025-01-02T00:00:00Z", "ended_at": "2025-01-01T01:00:00Z" if ended else None,
                "cancel_initiated_at": None, "archived_at": None,
                "results_url": f"{self.url}{PATH}/{batch_id}/results" if ended else None}

    def _result(self, request: dict[str, Any]) -> dict[str, Any]:
        injected = self.outcomes.pop(request["custom_id"], None)
        if injected is not None:
            return injected
        return {"type": "succeeded", "message": self.answer(request["params"])}

    def route(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, Any]:
        """Create (refused as :func:`create_problem` says), retrieve, cancel; unknown ids 404 in the API's error shape."""
        if method == "POST" and path == PATH:
            problem = create_problem(body, self.max_bytes)
            if problem is not None:
                return problem
            batch_id = f"msgbatch_{len(self.batches):04d}"
            results = [{"custom_id": r["custom_id"], "result": self._result(r)} for r in body["requests"]]
            self.rng.shuffle(results)
            self.batches[batch_id] = {"requests": body["requests"], "results": results, "polls": 0,
                                      "canceled": False, "hidden": self.not_found_after_create,
                                      "created_at": self.clock()}
            return 200, self._object(batch_id) | {"processing_status": "in_progress"}
        if method == "GET" and path == PATH:
            return 200, self._list(query)
        batch_id = path[len(PATH) + 1:].split("/")[0]
        b = self.batches.get(batch_id)
        if b is None or (method == "GET" and b["hidden"] > 0):
            if b is not None:
                b["hidden"] -= 1
            return api_error(404, "not_found_error", f"{batch_id} not found")
        if path.endswith("/cancel"):
            b["canceled"] = True
            return 200, self._object(batch_id)
        b["polls"] += 1
        return 200, self._object(batch_id)

    def _list(self, query: dict[str, list[str]]) -> dict[str, Any]:
        """One page of the list, most recent first (without changing any batch's poll count)."""
        ids = sorted(self.batches, key=lambda i: self.batches[i]["created_at"], reverse=True)
        after = query.get("after_id", [None])[0]
        start = ids.index(after) + 1 if after in ids else 0
        page = ids[start:start + int(query.get("limit", ["20"])[0])]
        data = [self._object(i) for i in page]
        return {"data": data, "has_more": start + len(page) < len(ids), "first_id": page[0] if page else None,
                "last_id": page[-1] if page else None}

    def created(self) -> int:
        """How many batches were created."""
        return len(self.batches)


def errored(error_type: str, message: str) -> dict[str, Any]:
    """An ``errored`` result in the API's shape."""
    return {"type": "errored", "error": {"type": "error", "error": {"type": error_type, "message": message}}}


def _jsonl_handler(base: type, fake: FakeBatches) -> type:
    """Answers ``GET .../results`` with the batch's JSONL; everything else as ``base``."""

    class Handler(base):  # type: ignore[misc, valid-type]
        def do_GET(self) -> None:  # noqa: N802
            if not self.path.endswith("/results"):
                return super().do_GET()
            batch_id = self.path[len(PATH) + 1:].split("/")[0]
            with fake.lock:
                lines = list(fake.batches[batch_id]["results"])
            # Streamed line by line (encoded twice: once for the length), as a large results file is:
            # the client's memory can be measured without this server's copy of the whole body in it.
            self.send_response(200)
            self.send_header("content-type", "application/binary")
            self.send_header("content-length", str(sum(len(_line(r)) for r in lines)))
            self.end_headers()
            for result in lines:
                self.wfile.write(_line(result))

    return Handler


def _iso(seconds: float) -> str:
    """Epoch seconds as the API's RFC 3339 time."""
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def _line(result: dict[str, Any]) -> bytes:
    """One line of the results JSONL."""
    return (json.dumps(result) + "\n").encode()


# --- The strict mode: every request's params held to the contract (tests.fakes.strict_claude) ---


class StrictBatches(HoldsContract, FakeBatches):
    """:class:`FakeBatches` whose every request is held to the Messages contract.

    At create, each request's ``params`` is checked by
    :func:`tests.fakes.claude_contract.check_request` (surface ``batch``; MIG1021: the 2026-10-21
    rules apply to each request of a batch created with that version; API version = the create's
    ``anthropic-version`` header). A refused request does not refuse the batch: it comes back as
    an ``errored`` result carrying the documented error body (the results format: one result per
    ``custom_id``, ``errored`` with the error); it is also recorded in ``rejected``. Accepted
    requests are answered by ``answer(params)`` (the brain) and shaped by
    :class:`tests.fakes.strict_claude.ClaudeContract`: thinking blocks, thinking tokens against
    ``max_tokens``, and the *batch* cache, separate from the Messages fake's; a batch's cache
    writes become readable when the batch has ended (its first retrieve that reports ``ended``).
    """

    name = "strict-batches"

    def __init__(self, answer: Callable[[dict[str, Any]], dict[str, Any]], *, thinking_tokens: int | None = None,
                 **kwargs: Any) -> None:
        from tests.fakes.strict_claude import DEFAULT_THINKING_TOKENS, ClaudeContract

        self.contract = ClaudeContract("batch", thinking_tokens=thinking_tokens or DEFAULT_THINKING_TOKENS)
        self._version = ""
        self._batch = ""
        super().__init__(answer, **kwargs)
        self.base_url = self.url


    def reply(self, request: Any) -> Any:
        """As :class:`FakeBatches`, with the request's API version kept for :meth:`_result`."""
        with self.lock:
            self._version = request.headers.get("anthropic-version", "")
            self._batch = f"msgbatch_{len(self.batches):04d}"
            return super().reply(request)

    def _result(self, request: dict[str, Any]) -> dict[str, Any]:
        injected = self.outcomes.pop(request["custom_id"], None)
        if injected is not None:
            return injected
        params = request["params"]
        error = self.contract.check(params, self._version)
        if error is not None:
            return {"type": "errored", "error": error.body()}
        message = {"model": params.get("model"), **self.answer(params)}
        return {"type": "succeeded", "message": self.contract.shape(params, message, batch=self._batch)}

    def _object(self, batch_id: str) -> dict[str, Any]:
        out = super()._object(batch_id)
        if out["processing_status"] == "ended":
            self.contract.cache.commit(batch_id)
        return out
