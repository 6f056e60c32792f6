"""The batch client's errors are longdoc's: the real ``anthropic`` SDK against the loopback Message
Batches fake (:mod:`tests.fakes.batches_server`) answering 429 / 529 / 5xx / 4xx, or no server at
all, and :class:`~longdoc.adapters.batches.AnthropicBatches` raising the project's named errors
(the names ``statemachine/bulk.asl.json`` retries on), never the SDK's classes."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import pytest

from longdoc.adapters.batches import AnthropicBatches
from longdoc.core.errors import BatchNotFound, LongdocError, ModelRequestError, ModelThrottled, ModelUnavailable
from tests.fakes.batches_server import PATH, FakeBatches
from tests.fakes.loopback import Fault

REQUEST = {"custom_id": "r0", "params": {"model": "claude-test", "max_tokens": 16,
                                         "messages": [{"role": "user", "content": "hello"}]}}


def _answer(params: dict[str, Any]) -> dict[str, Any]:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": params["model"],
            "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1}}


def _api_error(status: int, error_type: str) -> Fault:
    """An answer in the Messages API's error shape (https://docs.anthropic.com/en/api/errors)."""
    return Fault(status=status, body={"type": "error", "error": {"type": error_type, "message": f"injected {status}"}})


@pytest.fixture
def fake() -> Iterator[FakeBatches]:
    with FakeBatches(_answer) as server:
        yield server


def _client(url: str) -> AnthropicBatches:
    return AnthropicBatches("test-key-not-real", base_url=url, max_retries=0)


CALLS: dict[str, Callable[[AnthropicBatches, str], Any]] = {
    "create": lambda c, _: c.create([REQUEST]),
    "retrieve": lambda c, batch_id: c.retrieve(batch_id),
    "cancel": lambda c, batch_id: c.cancel(batch_id),
    "list_recent": lambda c, _: list(c.list_recent(0.0)),
}


@pytest.mark.parametrize(("status", "error_type", "named", "sdk_class"), [
    (429, "rate_limit_error", ModelThrottled, anthropic.RateLimitError),
    (529, "overloaded_error", ModelThrottled, anthropic.OverloadedError),
    (500, "api_error", ModelUnavailable, anthropic.InternalServerError),
    (503, "api_error", ModelUnavailable, anthropic.ServiceUnavailableError),
    (400, "invalid_request_error", ModelRequestError, anthropic.BadRequestError),
    (401, "authentication_error", ModelRequestError, anthropic.AuthenticationError),
])
@pytest.mark.parametrize("call", sorted(CALLS))
def test_an_api_error_is_raised_as_the_named_error(fake: FakeBatches, call: str, status: int, error_type: str,
                                                   named: type[LongdocError], sdk_class: type[Exception]) -> None:
    # Given a batch that exists, and the API answering the next request with an error
    client = _client(fake.url)
    batch_id = client.create([REQUEST]).id
    fake.inject(_api_error(status, error_type))
    # When the client calls the API
    with pytest.raises(LongdocError) as caught:
        CALLS[call](client, batch_id)
    # Then it raises the project's error, by class and by name (the Step Functions error name)
    assert type(caught.value) is named and type(caught.value).__name__ == named.__name__
    assert not isinstance(caught.value, anthropic.AnthropicError)
    # And the message names the API, the status and the error type; the SDK's error is the cause
    assert "Message Batches API" in str(caught.value) and f"HTTP {status} {error_type}" in str(caught.value)
    assert type(caught.value.__cause__) is sdk_class
    assert fake.pending_faults == 0


def test_a_throttled_answer_is_retried_by_the_sdk_before_it_is_raised(fake: FakeBatches) -> None:
    # Given a client with one SDK retry and the API answering 429 twice
    client = AnthropicBatches("test-key-not-real", base_url=fake.url, max_retries=1)
    fake.inject(Fault(status=429, body={"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}},
                      headers={"retry-after-ms": "1"}),
                Fault(status=429, body={"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}},
                      headers={"retry-after-ms": "1"}))
    # When a batch is created, then it is ModelThrottled after both answers
    with pytest.raises(ModelThrottled, match="HTTP 429 rate_limit_error: slow"):
        client.create([REQUEST])
    assert len(fake.calls("POST", PATH)) == 2


def test_an_unknown_batch_is_still_batch_not_found(fake: FakeBatches) -> None:
    # Given no batch of that id, when it is retrieved, then it is BatchNotFound (Poll counts those)
    with pytest.raises(BatchNotFound) as caught:
        _client(fake.url).retrieve("msgbatch_missing")
    assert type(caught.value.__cause__) is anthropic.NotFoundError


def _refused_url() -> str:
    """A loopback URL nothing listens on (the port was bound, then freed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("call", [*sorted(CALLS), "results"])
def test_a_refused_connection_is_model_unavailable(call: str) -> None:
    # Given no server at the API's address
    client = _client(_refused_url())
    calls = {**CALLS, "results": lambda c, batch_id: list(c.results(batch_id))}
    # When the client calls the API, then it is ModelUnavailable caused by the SDK's connection error
    with pytest.raises(ModelUnavailable, match="Message Batches API unreachable") as caught:
        calls[call](client, "msgbatch_0000")
    assert type(caught.value).__name__ == "ModelUnavailable"
    assert isinstance(caught.value.__cause__, anthropic.APIConnectionError)


class _RotatingKey:
    """A key source whose secret was rotated: the cached value is the old key until a refresh."""

    def __init__(self) -> None:
        self.refreshes = 0

    def __call__(self, *, refresh: bool = False) -> str:
        self.refreshes += refresh
        return "key-new" if self.refreshes else "key-old"


def test_a_rotated_key_is_read_again_after_a_401_and_the_call_retried_once(fake: FakeBatches) -> None:
    # Given a warm batch client built from a key source whose secret was rotated (cache: the old key)
    source = _RotatingKey()
    client = AnthropicBatches(source, base_url=fake.url, max_retries=0)
    # And the API rejecting the old key once
    fake.inject(_api_error(401, "authentication_error"))
    # When a batch is created
    info = client.create([REQUEST])
    # Then the key was read again bypassing the cache, and the one retry carried the new key
    sent = fake.calls("POST", PATH)
    assert source.refreshes == 1 and info.id
    assert [r.api_key for r in sent] == ["key-old", "key-new"]
    # And later calls keep the new key without another refresh
    client.retrieve(info.id)
    assert fake.requests[-1].api_key == "key-new" and source.refreshes == 1


def test_a_401_with_an_unchanged_key_is_a_request_error_not_a_loop(fake: FakeBatches) -> None:
    # Given a key source whose secret did not change, and the API rejecting the key
    client = AnthropicBatches(lambda *, refresh=False: "key-same", base_url=fake.url, max_retries=0)
    fake.inject(_api_error(401, "authentication_error"))
    # When a batch is created, then it is ModelRequestError after one request (no retry with the same key)
    with pytest.raises(ModelRequestError, match="HTTP 401"):
        client.create([REQUEST])
    assert len(fake.calls("POST", PATH)) == 1
