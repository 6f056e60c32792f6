"""Streamed calls (the summaries' final synthesis) when an error arrives inside the stream after its
HTTP 200 (issue 28), through the real ``anthropic`` SDK against the loopback fakes: the Messages API's
SSE ``event: error`` (:class:`tests.fakes.anthropic_server.FakeAnthropic`) and Bedrock's event-stream
exception frames on ``InvokeModelWithResponseStream`` (:class:`tests.fakes.bedrock_server.StrictBedrock`,
which also holds each request to the documented contract, ``anthropic_version`` in the body included).

A retryable error is retried within the request's time budget and the failed attempt's text is
discarded (the sink is told before the next attempt's text); a non-retryable one is the project's
named error at once; a 401 on a stream reads the key again and retries once, as a create does.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from longdoc.adapters.claude import BEDROCK_ANTHROPIC_VERSION, ClaudeModel
from longdoc.core.errors import ModelRequestError, ModelThrottled, ModelUnavailable
from longdoc.core.messages import Message, ModelRequest, TextBlock
from tests.fakes.anthropic_server import (FakeAnthropic, enable_streaming, error_reply, message_reply,
                                          stream_error_reply, text_block)
from tests.fakes.bedrock_server import StrictBedrock

FIRST = "The Supplier shall deliver the goods within thirty days of the order and bear every cost."
SECOND = "The Supplier delivers within thirty days."
INVOKE_MODEL = "us.anthropic.claude-haiku-4-5-20251001-v1:0"  # the table's InvokeModel row (endpoint "invoke")


class Sink:
    """A :class:`longdoc.core.ports.TextSink` that records what a printer would show."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.discards: list[str] = []
        self.attempts: list[str] = [""]

    def __call__(self, text: str) -> None:
        self.parts.append(text)
        self.attempts[-1] += text

    def discard(self, reason: str) -> None:
        self.discards.append(reason)
        self.attempts.append("")


@pytest.fixture(autouse=True)
def fresh_sdk_credentials() -> Iterator[None]:
    """The SDK caches its boto3 session (and so its credentials): start and end each test without it."""
    from anthropic.lib.aws import _auth

    _auth._get_session.cache_clear()
    yield
    _auth._get_session.cache_clear()


@pytest.fixture
def anthropic_fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield enable_streaming(server)


@pytest.fixture
def bedrock(fake_aws_env: None) -> Iterator[StrictBedrock]:
    with StrictBedrock() as server:
        yield enable_streaming(server)


def _request(timeout_seconds: float | None = None) -> ModelRequest:
    return ModelRequest(system=[], tools=[], max_tokens=256, timeout_seconds=timeout_seconds,
                        messages=[Message(role="user", content=[{"type": "text", "text": "Summarise."}])])


def _text(response) -> str:  # type: ignore[no-untyped-def]
    return "".join(b.text for b in response.content if isinstance(b, TextBlock))


@pytest.mark.parametrize("error_type", ["overloaded_error", "api_error"])
def test_an_in_stream_error_of_the_messages_api_is_retried_and_its_text_discarded(
        anthropic_fake: FakeAnthropic, error_type: str) -> None:
    # Given a stream that sends part of its answer, then `event: error` (overloaded_error / api_error,
    # the documented in-stream errors), and a good stream on the next attempt
    anthropic_fake.enqueue(stream_error_reply(message_reply([text_block(FIRST)]), error_type, after_events=4),
                           message_reply([text_block(SECOND)]))
    sink = Sink()
    model = ClaudeModel("test-key-not-real", "claude-sonnet-5-5", base_url=anthropic_fake.base_url, max_retries=2)
    # When the call streams
    response = model.stream(_request(timeout_seconds=30.0), sink)
    # Then the answer is the second attempt's alone, the first attempt's partial text was declared void
    # before the second's text arrived, and two requests were made
    assert _text(response) == SECOND
    assert len(anthropic_fake.requests) == 2 and "error" in anthropic_fake.sent_events
    assert sink.attempts[0] and FIRST.startswith(sink.attempts[0]) and sink.attempts[0] != FIRST
    assert sink.attempts[1] == SECOND and len(sink.discards) == 1 and error_type in sink.discards[0]


def test_a_non_retryable_in_stream_error_is_a_request_error_at_once(anthropic_fake: FakeAnthropic) -> None:
    # Given a stream that fails inside with invalid_request_error
    anthropic_fake.enqueue(stream_error_reply(message_reply([text_block(FIRST)]), "invalid_request_error"),
                           message_reply([text_block(SECOND)]))
    sink = Sink()
    model = ClaudeModel("test-key-not-real", "claude-sonnet-5-5", base_url=anthropic_fake.base_url, max_retries=2)
    # When it streams, Then it is the project's request error naming the type, with no retry, the text void
    with pytest.raises(ModelRequestError, match="in-stream invalid_request_error"):
        model.stream(_request(timeout_seconds=30.0), sink)
    assert len(anthropic_fake.requests) == 1 and len(sink.discards) == 1


@pytest.mark.parametrize(("frame", "named"), [("throttlingException", ModelThrottled),
                                              ("serviceUnavailableException", ModelUnavailable),
                                              ("internalServerException", ModelUnavailable),
                                              ("modelStreamErrorException", ModelUnavailable),
                                              ("modelNotReadyException", ModelUnavailable)])
def test_a_bedrock_exception_frame_is_classified_and_retried(bedrock: StrictBedrock, frame: str,
                                                             named: type[Exception]) -> None:
    # Given Bedrock's InvokeModelWithResponseStream sending part of the answer, then an event-stream
    # exception frame of that type, and a good stream on the next attempt
    bedrock.enqueue(stream_error_reply(message_reply([text_block(FIRST)]), frame, after_events=4),
                    message_reply([text_block(SECOND)]))
    sink = Sink()
    model = ClaudeModel(None, INVOKE_MODEL, provider="bedrock", base_url=bedrock.base_url, max_retries=2)
    # When the call streams
    response = model.stream(_request(timeout_seconds=30.0), sink)
    # Then the frame was classified retryable (its name in the discard reason: named error's message) and the
    # second attempt's answer is the result; both requests went to the streaming action with Bedrock's
    # anthropic_version in the body (the strict fake refuses the SDK's first-party version)
    assert _text(response) == SECOND and sink.attempts[-1] == SECOND and len(sink.discards) == 1
    assert ("throttled" if named is ModelThrottled else "failed") in sink.discards[0]
    assert [r.path.rsplit("/", 1)[-1] for r in bedrock.requests] == ["invoke-with-response-stream"] * 2
    assert {r.body["anthropic_version"] for r in bedrock.requests} == {BEDROCK_ANTHROPIC_VERSION}
    assert bedrock.rejected == [] and bedrock.bad_signatures == 0


def test_a_bedrock_validation_frame_is_a_request_error(bedrock: StrictBedrock) -> None:
    # Given a stream that fails inside with validationException
    bedrock.enqueue(stream_error_reply(message_reply([text_block(FIRST)]), "validationException", "bad input"))
    model = ClaudeModel(None, INVOKE_MODEL, provider="bedrock", base_url=bedrock.base_url, max_retries=2)
    # When it streams, Then it is ModelRequestError naming the frame, not retried
    with pytest.raises(ModelRequestError, match="in-stream validationException: bad input"):
        model.stream(_request(timeout_seconds=30.0), Sink())
    assert len(bedrock.requests) == 1


def test_retries_of_in_stream_errors_stay_inside_the_budget(anthropic_fake: FakeAnthropic) -> None:
    # Given a stream that is overloaded inside on every attempt, many retries allowed, and 2 s of budget
    anthropic_fake.responder = lambda body: stream_error_reply(message_reply([text_block(FIRST)]), "overloaded_error")
    model = ClaudeModel("test-key-not-real", "claude-sonnet-5-5", base_url=anthropic_fake.base_url, max_retries=6)
    started = time.monotonic()
    # When it streams, Then it gives up throttled within the budget (0.5 s then 1 s waits; no attempt with
    # under a second left), after two attempts, not seven
    with pytest.raises(ModelThrottled, match="in-stream overloaded_error"):
        model.stream(_request(timeout_seconds=2.0), Sink())
    assert time.monotonic() - started < 2.5 and len(anthropic_fake.requests) == 2


def test_a_streamed_call_reads_a_rejected_key_again_and_retries_once(anthropic_fake: FakeAnthropic) -> None:
    # Given a key source whose cached key was revoked while the secret holds the new one
    keys = {"cached": "test-key-old-not-real", "current": "test-key-new-not-real"}

    def source(*, refresh: bool = False) -> str:
        if refresh:
            keys["cached"] = keys["current"]
        return keys["cached"]

    anthropic_fake.enqueue(error_reply(401, "invalid x-api-key"), message_reply([text_block(SECOND)]))
    model = ClaudeModel(source, "claude-sonnet-5-5", base_url=anthropic_fake.base_url, max_retries=0)
    # When the summary's final call streams
    response = model.stream(_request(), Sink())
    # Then the 401 made it read the key again and retry the stream with the new key (the key-rotation path)
    assert _text(response) == SECOND
    assert [r.api_key for r in anthropic_fake.requests] == ["test-key-old-not-real", "test-key-new-not-real"]
