"""The Message Batches fake refuses what the real API refuses, and the product never sends it.

Rules (each from the page named in :mod:`tests.fakes.batches_server`): 1 to 100,000 requests;
``custom_id`` unique and matching ``^[a-zA-Z0-9_-]{1,64}$``; ``params`` with ``model``,
``max_tokens`` >= 1 and non-empty ``messages`` (400 ``invalid_request_error``); a body over 256 MB
(413 ``request_too_large``). Through the real ``anthropic`` SDK and
:class:`~longdoc.adapters.batches.AnthropicBatches`, each refusal is the project's
:class:`~longdoc.core.errors.ModelRequestError`, never the SDK's class.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from longdoc.bulk.plan import BulkLimits, custom_id, split
from longdoc.core.errors import ModelRequestError
from tests.fakes.batches_server import MAX_REQUESTS, FakeBatches
from tests.functional.test_bulk_batch_errors import _answer, _client


def _params(**changes: Any) -> dict[str, Any]:
    return {"model": "claude-test", "max_tokens": 16, "messages": [{"role": "user", "content": "hello"}]} | changes


@pytest.fixture
def fake() -> Iterator[FakeBatches]:
    """The Batches fake with its documented limits, answering every request with one short message."""
    with FakeBatches(_answer) as server:
        yield server


@pytest.mark.parametrize(("requests", "names"), [
    ([], "requests: expected 1 to 100000 items, got 0"),
    ([{"custom_id": "run#1-r0", "params": _params()}], "requests.0.custom_id: 'run#1-r0' does not match"),
    ([{"custom_id": "x" * 65, "params": _params()}], "does not match ^[a-zA-Z0-9_-]{1,64}$"),
    ([{"custom_id": "a", "params": _params()}, {"custom_id": "a", "params": _params()}],
     "requests.1.custom_id: 'a' is not unique within the batch"),
    ([{"custom_id": "a", "params": {"max_tokens": 16, "messages": [{"role": "user", "content": "x"}]}}],
     "requests.0.params.model: Field required"),
    ([{"custom_id": "a", "params": _params(max_tokens=0)}], "requests.0.params.max_tokens: expected an integer"),
    ([{"custom_id": "a", "params": _params(messages=[])}], "requests.0.params.messages: expected a non-empty list"),
])
def test_a_create_the_api_refuses_is_refused_and_raised_as_a_request_error(fake: FakeBatches, requests: list[Any],
                                                                          names: str) -> None:
    # When a batch the real API would refuse is created
    with pytest.raises(ModelRequestError) as caught:
        _client(fake.url).create(requests)
    # Then the fake answered 400 invalid_request_error naming the field, the adapter raised the project's error
    assert "HTTP 400 invalid_request_error" in str(caught.value) and names in str(caught.value)
    assert type(caught.value.__cause__) is anthropic.BadRequestError
    assert fake.created() == 0 and fake.requests[-1].answered == 400


def test_more_than_100000_requests_are_refused(fake: FakeBatches) -> None:
    requests = [{"custom_id": f"c{n}", "params": _params()} for n in range(MAX_REQUESTS + 1)]
    with pytest.raises(ModelRequestError, match="expected 1 to 100000 items, got 100001"):
        _client(fake.url).create(requests)
    assert fake.created() == 0


def test_a_body_over_the_byte_limit_is_413_and_the_product_splits_below_it() -> None:
    # Given a fake whose byte limit is scaled down (256 MB is the real one), and 40 requests of about 150 bytes
    limit = 2_000
    requests = [{"custom_id": custom_id(f"run-{n:04d}", 0), "params": _params()} for n in range(40)]
    with FakeBatches(_answer, max_bytes=limit) as fake:
        client = _client(fake.url)
        # When they are sent in one batch, Then the API answers 413 request_too_large, a request error here
        with pytest.raises(ModelRequestError, match="HTTP 413 request_too_large"):
            client.create(requests)
        assert fake.created() == 0
        # When the product splits them under the same limit, Then every batch is accepted
        parts = list(split(requests, BulkLimits(max_bytes=limit)))
        for part in parts:
            client.create(part)
        assert len(parts) > 1 and fake.created() == len(parts)
        assert sum(len(fake.batches[b]["requests"]) for b in fake.batches) == 40


@pytest.mark.parametrize("run_id", ["run-0123456789abcdef", "bulk-78daf924d2c7-00003", "run#/é" * 20])
def test_the_products_custom_ids_are_accepted(fake: FakeBatches, run_id: str) -> None:
    # Given custom ids the product makes for ordinary, bulk and odd (over-long, non-ASCII) run ids, two rounds each
    requests = [{"custom_id": custom_id(run_id, r), "params": _params()} for r in (0, 11)]
    # Then the API accepts them (pattern, length, unique)
    assert _client(fake.url).create(requests).id.startswith("msgbatch_")
