"""ClaudeModel against a loopback fake of the Messages API, through the real ``anthropic`` SDK."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from longdoc.adapters.claude import ClaudeModel
from longdoc.core.errors import ModelRequestError, ModelThrottled, ModelUnavailable
from longdoc.core.messages import Message, ModelRequest, TextBlock, ThinkingBlock, ToolUseBlock, Usage
from longdoc.core.ports import Model
from tests.fakes.anthropic_server import (
    FakeAnthropic,
    Reply,
    dropped_connection,
    enable_streaming,
    error_reply,
    message_reply,
    text_block,
    tool_use_block,
    usage_json,
)

TEST_KEY = "test-key-not-real"
MODEL_ID = "claude-test-model"

SYSTEM = [
    {"type": "text", "text": "You extract clauses and cite them."},
    {"type": "text", "text": "Clause catalogue: governing_law, termination.", "cache_control": {"type": "ephemeral"}},
]
TOOLS = [
    {
        "name": "record_extraction",
        "description": "Record one extracted clause with citations.",
        "input_schema": {
            "type": "object",
            "properties": {"clause_type": {"type": "string"}, "quote": {"type": "string"}},
            "required": ["clause_type", "quote"],
        },
        "cache_control": {"type": "ephemeral"},
    }
]


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


def _model(fake: FakeAnthropic, max_retries: int = 1) -> ClaudeModel:
    return ClaudeModel(TEST_KEY, MODEL_ID, base_url=fake.base_url, max_retries=max_retries, timeout=10.0)


def _request() -> ModelRequest:
    return ModelRequest(
        system=SYSTEM,
        tools=TOOLS,
        messages=[Message(role="user", content=[{"type": "text", "text": "CASE_FACTS: {}\nFind governing_law."}])],
        max_tokens=1024,
    )


def test_tool_use_reply_is_converted_exactly(fake: FakeAnthropic) -> None:
    # Given a reply with thinking, text and tool_use blocks and full usage figures
    tool_input = {"clause_type": "governing_law", "quote": "laws of the State of Delaware", "page": 7}
    fake.enqueue(
        message_reply(
            [
                {"type": "thinking", "thinking": "look at section 12", "signature": "sig"},
                text_block("Recording it."),
                tool_use_block("record_extraction", tool_input, id="toolu_01"),
            ],
            stop_reason="tool_use",
            usage=usage_json(1200, 85, cache_creation_input_tokens=900, cache_read_input_tokens=300),
            id="msg_01",
        )
    )
    model = _model(fake)
    # When the model is called
    response = model.create(_request())
    # Then the blocks, stop reason and usage come back exactly, thinking kept whole (it goes back unchanged)
    assert isinstance(model, Model)
    assert model.name == MODEL_ID
    assert response.id == "msg_01"
    assert response.model == MODEL_ID
    assert response.content == [
        ThinkingBlock(thinking="look at section 12", signature="sig"),
        TextBlock(text="Recording it."),
        ToolUseBlock(id="toolu_01", name="record_extraction", input=tool_input),
    ]
    assert response.stop_reason == "tool_use"
    assert response.usage == Usage(
        input_tokens=1200, output_tokens=85, cache_creation_input_tokens=900, cache_read_input_tokens=300
    )


def test_null_cache_usage_becomes_zero(fake: FakeAnthropic) -> None:
    # Given a reply whose cache usage fields are JSON null
    fake.enqueue(
        message_reply(
            [text_block("done")],
            usage=usage_json(40, 2, cache_creation_input_tokens=None, cache_read_input_tokens=None),
        )
    )
    # When the model is called
    response = _model(fake).create(_request())
    # Then the cache counts are 0
    assert response.usage == Usage(input_tokens=40, output_tokens=2)
    assert response.stop_reason == "end_turn"


def test_request_body_and_headers(fake: FakeAnthropic) -> None:
    # Given a scripted success
    fake.enqueue(message_reply([text_block("ok")]))
    request = _request()
    # When the model is called
    _model(fake).create(request)
    # Then one request carried the key, system blocks with cache_control, tools, messages, tool_choice
    assert len(fake.requests) == 1
    sent = fake.requests[0]
    assert sent.method == "POST"
    assert sent.path == "/v1/messages"
    # (anthropic 2.x sends the key as "authorization: Bearer"; older SDKs used "x-api-key")
    assert sent.api_key == TEST_KEY
    assert sent.headers.get("x-api-key") == TEST_KEY or sent.headers["authorization"] == f"Bearer {TEST_KEY}"
    assert sent.body["model"] == MODEL_ID
    assert sent.body["max_tokens"] == 1024
    assert sent.body["system"] == SYSTEM
    assert sent.body["system"][1]["cache_control"] == {"type": "ephemeral"}
    assert sent.body["tools"] == TOOLS
    assert sent.body["messages"] == [m.model_dump() for m in request.messages]
    assert sent.body["tool_choice"] == {"type": "auto"}
    assert "stream" not in sent.body or sent.body["stream"] is False


def test_rate_limit_then_success_is_retried_by_sdk(fake: FakeAnthropic) -> None:
    # Given one 429 (asking for a 1 ms wait) and then a success
    fake.enqueue(error_reply(429, "slow down", retry_after_ms=1), message_reply([text_block("ok")]))
    # When the model is called with one SDK retry allowed
    response = _model(fake, max_retries=1).create(_request())
    # Then the SDK retried and the call succeeded
    assert response.content == [TextBlock(text="ok")]
    assert len(fake.requests) == 2


def test_persistent_rate_limit_raises_model_throttled(fake: FakeAnthropic) -> None:
    # Given only 429s
    fake.enqueue(*[error_reply(429, "Number of request tokens has exceeded your rate limit", retry_after_ms=1)] * 3)
    # When the model is called with one retry
    with pytest.raises(ModelThrottled) as caught:
        _model(fake, max_retries=1).create(_request())
    # Then it is ModelThrottled, caused by the SDK's RateLimitError, after 2 attempts
    import anthropic

    assert isinstance(caught.value.__cause__, anthropic.RateLimitError)
    assert "429" in str(caught.value) and "rate limit" in str(caught.value)
    assert len(fake.requests) == 2


def test_overloaded_529_raises_model_throttled(fake: FakeAnthropic) -> None:
    # Given only 529 overloaded errors
    fake.enqueue(*[error_reply(529, "Overloaded", retry_after_ms=1)] * 3)
    # When the model is called with one retry
    with pytest.raises(ModelThrottled) as caught:
        _model(fake, max_retries=1).create(_request())
    # Then it is ModelThrottled naming the overload, after 2 attempts
    assert "529" in str(caught.value) and "overloaded_error" in str(caught.value)
    assert caught.value.__cause__ is not None and caught.value.__cause__.status_code == 529  # type: ignore[attr-defined]
    assert len(fake.requests) == 2


def test_persistent_500_raises_model_unavailable(fake: FakeAnthropic) -> None:
    # Given only 500s
    fake.enqueue(*[error_reply(500, "Internal server error", retry_after_ms=1)] * 3)
    # When the model is called with two retries
    with pytest.raises(ModelUnavailable) as caught:
        _model(fake, max_retries=2).create(_request())
    # Then it is ModelUnavailable after 3 attempts
    assert "500" in str(caught.value)
    assert len(fake.requests) == 3


def test_dropped_connection_raises_model_unavailable(fake: FakeAnthropic) -> None:
    # Given a server that drops every connection without answering
    fake.enqueue(dropped_connection(), dropped_connection())
    # When the model is called with one retry (SDK backoff ~0.5 s)
    with pytest.raises(ModelUnavailable) as caught:
        _model(fake, max_retries=1).create(_request())
    # Then it is ModelUnavailable caused by the SDK's APIConnectionError, after 2 attempts
    import anthropic

    assert isinstance(caught.value.__cause__, anthropic.APIConnectionError)
    assert len(fake.requests) == 2


def test_bad_request_raises_model_request_error_without_retry(fake: FakeAnthropic) -> None:
    # Given a 400 with the API's error message
    api_message = "messages.0.content: Input should be a valid list"
    fake.enqueue(error_reply(400, api_message), message_reply([text_block("never reached")]))
    # When the model is called with retries allowed
    with pytest.raises(ModelRequestError) as caught:
        _model(fake, max_retries=2).create(_request())
    # Then it is ModelRequestError with status, type and message, and no retry happened
    assert "400" in str(caught.value)
    assert "invalid_request_error" in str(caught.value)
    assert api_message in str(caught.value)
    assert len(fake.requests) == 1
    assert fake.pending == 1


def test_unknown_stop_reason_maps_to_end_turn_with_warning(
    fake: FakeAnthropic, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a stop reason this code does not know
    fake.enqueue(message_reply([text_block("hm")], stop_reason="brand_new_reason"))
    # When the model is called
    with caplog.at_level(logging.WARNING, logger="longdoc.adapters.claude"):
        response = _model(fake).create(_request())
    # Then it is treated as end_turn and a warning names the original
    assert response.stop_reason == "end_turn"
    assert "brand_new_reason" in caplog.text


def test_empty_tools_omit_tool_choice(fake: FakeAnthropic) -> None:
    # Given a request without tools
    fake.enqueue(message_reply([text_block("plain")]))
    request = ModelRequest(system=SYSTEM, tools=[], messages=[Message(role="user", content="hi")], max_tokens=50)
    # When the model is called
    _model(fake).create(request)
    # Then neither tools nor tool_choice are sent (the API rejects tool_choice without tools)
    body = fake.requests[0].body
    assert "tools" not in body and "tool_choice" not in body
    assert body["messages"] == [{"role": "user", "content": "hi"}]


def test_fake_responder_and_empty_queue(fake: FakeAnthropic) -> None:
    # Given an empty queue and no responder
    model = _model(fake, max_retries=0)
    # When the model is called, Then the fake's 500 surfaces as ModelUnavailable with its message
    with pytest.raises(ModelUnavailable, match="no scripted response"):
        model.create(_request())

    # Given a responder that echoes the last user message
    def echo(body: dict) -> Reply:
        return message_reply([text_block(f"echo: {body['messages'][-1]['content']}")])

    fake.responder = echo
    # When the model is called
    response = model.create(ModelRequest(system=[], tools=[], messages=[Message(role="user", content="ping")], max_tokens=5))
    # Then the reply was computed from the request
    assert response.content == [TextBlock(text="echo: ping")]


def test_module_import_does_not_load_anthropic() -> None:
    # Given a fresh interpreter
    code = "import sys, longdoc.adapters.claude; print('anthropic' in sys.modules)"
    # When only the adapter module is imported
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # Then the SDK has not been imported (it loads lazily in ClaudeModel.__init__)
    assert out.stdout.strip() == "False"


def test_repr_hides_the_key(fake: FakeAnthropic) -> None:
    # Given a model built with a key
    model = _model(fake)
    # When it is rendered, Then the key does not appear
    assert TEST_KEY not in repr(model)
    assert MODEL_ID in repr(model)


def test_call_budget_bounds_a_slow_reply(fake: FakeAnthropic) -> None:
    # Given replies that take 5 s each, and a caller with 2 s left (e.g. the Lambda's remaining time)
    fake.enqueue(*[message_reply([text_block("late")], "end_turn", usage_json(1, 1), delay=5)] * 2)
    request = _request().model_copy(update={"timeout_seconds": 2.0})
    # When the model is called with one retry
    import time

    started = time.monotonic()
    with pytest.raises(ModelUnavailable) as caught:
        _model(fake, max_retries=1).create(request)
    # Then the one attempt the budget allows gave up at the budget, with no SDK retry
    import anthropic

    assert isinstance(caught.value.__cause__, anthropic.APITimeoutError)
    assert len(fake.requests) == 1
    assert time.monotonic() - started < 8  # without the budget: two 5 s replies, over 10 s


# --- Issue 12: a call within a time budget, and a refusal's category ---------------------------


class _RecordingClient:
    """Wraps the SDK client; records (monotonic time, timeout, max_retries) of every ``with_options`` call."""

    def __init__(self, client, seen: list[tuple[float, float, int]]):
        self._client, self._seen = client, seen

    def with_options(self, **options):
        import time

        self._seen.append((time.monotonic(), float(options.get("timeout", 600.0)),
                           int(options.get("max_retries", 2))))
        return self._client.with_options(**options)

    def __getattr__(self, name):
        return getattr(self._client, name)


def test_attempts_times_timeout_fit_the_budget_sdk_retries_included(fake: FakeAnthropic) -> None:
    # Given 61 s left and an API that keeps failing with 500 (the issue: 3 attempts took 75 s)
    fake.responder = lambda body: error_reply(500, "internal", retry_after_ms=1)
    import time

    model = _model(fake, max_retries=2)
    seen: list[tuple[float, float, int]] = []
    model._client = _RecordingClient(model._client, seen)
    started = time.monotonic()
    # When one call is made with that budget
    with pytest.raises(ModelUnavailable):
        model.create(_request().model_copy(update={"timeout_seconds": 61.0}))
    # Then every attempt, SDK retries included, would end by the 61 s even if each used its whole timeout
    # (before: one SDK call with a 61 s timeout and 2 SDK retries, i.e. 3 x 61 s)
    assert all(at + timeout * (retries + 1) <= started + 61.0 + 0.05 for at, timeout, retries in seen)
    assert all(retries == 0 for _, _, retries in seen) and len(fake.requests) == len(seen) == 3
    assert seen[0][1] == 10.0  # the first attempt gets its full timeout (the client's 10 s), not a third of the budget


def test_slow_failures_are_retried_within_the_budget(fake: FakeAnthropic) -> None:
    # Given an API answering 500 after 2.5 s, and 6 s left (the 25 s and 61 s, scaled down)
    import time

    fake.responder = lambda body: error_reply(500, "slow failure", delay=2.5)
    started = time.monotonic()
    # When one call is made with two retries allowed
    with pytest.raises(ModelUnavailable):
        _model(fake, max_retries=2).create(_request().model_copy(update={"timeout_seconds": 6.0}))
    # Then it retries while time is left for an attempt, and gives up within the budget
    assert time.monotonic() - started <= 6.5
    assert len(fake.requests) >= 2


def test_a_refusals_category_is_kept(fake: FakeAnthropic) -> None:
    # Given a refusal with stop_details
    fake.enqueue(message_reply([text_block("I can't help with that.")], "refusal",
                               stop_details={"type": "refusal", "category": "cyber", "explanation": None}))
    # When it is converted, Then the category travels with the response
    response = _model(fake).create(_request())
    assert response.stop_reason == "refusal"
    assert response.stop_details == {"type": "refusal", "category": "cyber", "explanation": None}


@pytest.mark.parametrize(("status", "named"), [(429, ModelThrottled), (529, ModelThrottled), (500, ModelUnavailable),
                                               (400, ModelRequestError)])
def test_a_streamed_call_raises_the_named_error_of_its_status(fake: FakeAnthropic, status: int,
                                                               named: type[Exception]) -> None:
    # Given the API answering a streamed call with an error in its documented shape
    # (https://platform.claude.com/docs/en/api/errors), and no retry left
    enable_streaming(fake)
    fake.enqueue(error_reply(status, "scripted"))
    # When the summary's final call streams, Then the error is the project's, naming the API and the status
    with pytest.raises(named, match=f"Claude API .*HTTP {status}"):
        _model(fake, max_retries=0).stream(_request(), lambda text: None)


def test_a_streamed_call_to_no_server_is_unavailable() -> None:
    # Given an address where nothing listens
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = ClaudeModel(TEST_KEY, MODEL_ID, base_url=f"http://127.0.0.1:{port}", max_retries=0, timeout=2.0)
    # Then streaming raises ModelUnavailable, naming the API
    with pytest.raises(ModelUnavailable, match="Claude API unreachable"):
        model.stream(_request(), lambda text: None)
