"""Requests built from the capability table (issue 25, items 1, 2 and 6): what ClaudeModel and
the Message Batches params send for each model row and job, what they refuse before sending,
Bedrock's Messages-API endpoint for the 5.x rows, a non-JSON HTTP 200 as a retryable error, and
cached token counts. Everything goes through the real ``anthropic`` SDK against loopback fakes."""

from __future__ import annotations

import json

import logging
import math
from collections.abc import Iterator
from typing import Any

import pytest

from longdoc.adapters.claude import BEDROCK_ANTHROPIC_VERSION, ClaudeModel
from longdoc.bulk.requests import batch_params
from longdoc.core import request_rules
from longdoc.core.errors import ModelRejectsRequest, ModelUnavailable
from longdoc.core.messages import Message, ModelRequest, TextBlock
from longdoc.core.models_catalogue import JOB_SETTINGS, call_settings, rows, spec_for
from tests.fakes.anthropic_server import FakeAnthropic, Reply, message_reply, text_block
from tests.fakes.bedrock_server import FakeBedrock
from tests.fakes.loopback import Fault, LoopbackFake, not_json

KEY = "test-key-not-real"
TOOLS = [{"name": "record_summary", "description": "Record the summary.",
          "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}}}]
SAMPLING = ("temperature", "top_p", "top_k")


def _user(text: str = "Summarise the contract.") -> Message:
    return Message(role="user", content=[{"type": "text", "text": text}])


def _request(job: str = "extract", **fields: Any) -> ModelRequest:
    base: dict[str, Any] = {"system": [{"type": "text", "text": "You summarise contracts."}], "tools": TOOLS,
                            "messages": [_user()], "max_tokens": 600, "job": job}
    return ModelRequest(**{**base, **fields})


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(responder=lambda body: message_reply([text_block("ok")])) as server:
        yield server


def _model(fake: FakeAnthropic, model: str) -> ClaudeModel:
    return ClaudeModel(KEY, model, base_url=fake.base_url, max_retries=0, timeout=10.0)


@pytest.mark.parametrize("job", sorted(JOB_SETTINGS))
@pytest.mark.parametrize("model", [r.id for r in rows("anthropic")])
def test_every_row_and_job_sends_the_tables_thinking_and_effort_and_no_sampling(
        fake: FakeAnthropic, model: str, job: str) -> None:
    # Given a model row of the table and a job
    expected = call_settings(spec_for(model, "anthropic"), job)
    # When a request for that job is sent
    _model(fake, model).create(_request(job))
    # Then the body carries exactly the table's thinking and output_config, tool_choice auto,
    # and no sampling parameter
    [sent] = fake.requests
    body = sent.body
    assert body.get("thinking") == expected.get("thinking")
    assert body.get("output_config") == expected.get("output_config")
    assert body["tool_choice"] == {"type": "auto"}
    assert not set(SAMPLING) & set(body)


def test_sonnet_5_5_extract_and_map_settings_are_the_documented_values(fake: FakeAnthropic) -> None:
    # Given the default model
    model = _model(fake, "claude-sonnet-5-5")
    # When an extraction call and a summary map call are sent
    model.create(_request("extract"))
    model.create(_request("summarize_map"))
    model.create(_request("triage"))
    # Then extraction runs adaptive thinking at medium effort; the map step and triage (whose
    # answer budget is 160 tokens) the lowest thinking the model accepts (between_tools, S55-NEW)
    # at low effort
    first, second, third = (r.body for r in fake.requests)
    assert (first["thinking"], first["output_config"]) == ({"type": "adaptive"}, {"effort": "medium"})
    assert (second["thinking"], second["output_config"]) == ({"type": "between_tools"}, {"effort": "low"})
    assert (third["thinking"], third["output_config"]) == ({"type": "between_tools"}, {"effort": "low"})


def test_haiku_4_5_gets_no_thinking_and_no_effort(fake: FakeAnthropic) -> None:
    # Given the previous-generation Haiku (extended thinking only, no effort levels)
    # When an extraction call is sent
    _model(fake, "claude-haiku-4-5-20251001").create(_request())
    # Then the body has neither field (the model's own default: no thinking)
    body = fake.requests[0].body
    assert "thinking" not in body and "output_config" not in body


@pytest.mark.parametrize("choice", [{"type": "any"}, {"type": "tool", "name": "record_summary"}])
@pytest.mark.parametrize("model", [r.id for r in rows("anthropic") if not r.spec.forced_tool_choice])
def test_a_forced_tool_choice_is_refused_before_sending(fake: FakeAnthropic, model: str,
                                                        choice: dict[str, Any]) -> None:
    # Given a model whose row rejects forced tool choice
    # When a request forcing a tool is made
    with pytest.raises(ModelRejectsRequest) as raised:
        _model(fake, model).create(_request(tool_choice=choice))
    # Then nothing was sent, and the error names the model, the rule and its source
    assert fake.requests == []
    message = str(raised.value)
    assert model in message and "forced_tool_choice=false" in message and "source:" in message
    assert isinstance(raised.value, ValueError)


def test_a_forced_tool_choice_is_sent_where_the_row_allows_it(fake: FakeAnthropic) -> None:
    # Given Haiku 4.5, which accepts a forced tool choice (its thinking is off by default)
    choice = {"type": "tool", "name": "record_summary"}
    # When a request forcing the tool is made, Then it is sent as given
    _model(fake, "claude-haiku-4-5").create(_request(tool_choice=choice))
    assert fake.requests[0].body["tool_choice"] == choice


def test_a_prefill_is_refused_and_a_paused_turn_is_not(fake: FakeAnthropic) -> None:
    # Given a conversation ending on an assistant text turn (a prefill), and one ending on an
    # assistant turn that starts with its thinking block (a paused turn sent back)
    prefill = [_user(), Message(role="assistant", content=[{"type": "text", "text": "{\"text\": \""}])]
    paused = [_user(), Message(role="assistant", content=[
        {"type": "thinking", "thinking": "", "signature": "sig-1"}, {"type": "text", "text": "Part one."}])]
    model = _model(fake, "claude-sonnet-5-5")
    # When both are sent
    with pytest.raises(ModelRejectsRequest, match=r"claude-sonnet-5-5 rejects an assistant prefill.*prefill=false"):
        model.create(_request(messages=prefill))
    model.create(_request(messages=paused))
    # Then only the paused turn reached the API, unchanged
    [sent] = fake.requests
    assert sent.body["messages"][-1] == paused[-1].model_dump()


def test_a_prefill_is_sent_where_the_row_allows_it(fake: FakeAnthropic) -> None:
    # Given Haiku 4.5 (prefill accepted), When a prefilled request is made, Then it is sent
    prefill = [_user(), Message(role="assistant", content=[{"type": "text", "text": "{"}])]
    _model(fake, "claude-haiku-4-5").create(_request(messages=prefill))
    assert fake.requests[0].body["messages"][-1]["role"] == "assistant"


def test_an_unknown_model_gets_the_api_defaults_and_one_warning(
        fake: FakeAnthropic, caplog: pytest.LogCaptureFixture) -> None:
    # Given a model id that is not in the table
    request_rules._warned_unknown.discard(("claude-future-9", "anthropic"))
    model = _model(fake, "claude-future-9")
    # When two requests are sent (one forcing a tool: the table cannot say it is rejected)
    with caplog.at_level(logging.WARNING, logger="longdoc.core.request_rules"):
        model.create(_request())
        model.create(_request(tool_choice={"type": "any"}))
    # Then neither carries thinking or effort, and the id was warned about once
    assert all("thinking" not in r.body and "output_config" not in r.body for r in fake.requests)
    assert [r.message for r in caplog.records].count(caplog.records[0].message) == 1
    assert "claude-future-9" in caplog.records[0].message and len(caplog.records) == 1


def test_a_streamed_request_follows_the_same_rules(fake: FakeAnthropic) -> None:
    # Given the default model, When a streamed call forces a tool, Then it is refused unsent
    with pytest.raises(ModelRejectsRequest):
        _model(fake, "claude-sonnet-5-5").stream(_request("summarize_final", tool_choice={"type": "any"}),
                                                 lambda text: None)
    assert fake.requests == []


# --- Message Batches params --------------------------------------------------------------


def test_batch_params_carry_the_tables_fields_and_refuse_what_the_model_rejects() -> None:
    # Given a bulk extraction request for the default model
    request = _request("extract")
    # When its batch params are built
    params = batch_params("claude-sonnet-5-5", request)
    # Then they carry the same thinking and effort as a Messages call, and no sampling parameter
    assert (params["thinking"], params["output_config"]) == ({"type": "adaptive"}, {"effort": "medium"})
    assert not set(SAMPLING) & set(params)
    # And a request forcing a tool, or ending on a prefill, is refused before any batch exists
    with pytest.raises(ModelRejectsRequest, match="forced tool_choice"):
        batch_params("claude-sonnet-5-5", _request(tool_choice={"type": "any"}))
    with pytest.raises(ModelRejectsRequest, match="prefill"):
        batch_params("claude-sonnet-5-5", _request(messages=[_user(), Message(role="assistant", content="{")]))


def test_batch_params_for_the_offline_baseline_carry_no_model_fields(caplog: pytest.LogCaptureFixture) -> None:
    # Given the offline baseline's name (local bulk runs), When params are built
    with caplog.at_level(logging.WARNING, logger="longdoc.core.request_rules"):
        params = batch_params("offline-extractive-baseline-v1", _request())
    # Then there is no thinking or effort and no warning (the demo's output is unchanged)
    assert "thinking" not in params and "output_config" not in params and caplog.records == []


# --- A non-JSON HTTP 200 -----------------------------------------------------------------


class _Gateway(LoopbackFake):
    """A gateway that answers every request with the injected faults (here: 200s that are not JSON)."""

    def route(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, Any]:
        return 500, {"message": "no fault injected"}


SSE = ('event: message_start\ndata: {"type": "message_start", "message": {"id": "msg_1", "type": "message", '
       '"role": "assistant", "content": [], "model": "claude-sonnet-5-5"}}\n\n')


@pytest.mark.parametrize(("fault", "content_type", "start"), [
    (Fault(status=200, raw=SSE.encode(), headers={"content-type": "text/event-stream"}), "text/event-stream",
     "event: message_start"),
    (not_json(200, "<html>proxy login</html>"), "text/html", "<html>proxy login"),
])
def test_a_200_that_is_not_json_is_retryable_model_unavailable(fault: Fault, content_type: str, start: str) -> None:
    # Given a gateway answering a Messages call with HTTP 200 and an SSE stream or an HTML page
    with _Gateway() as gateway:
        gateway.inject(fault)
        model = ClaudeModel(KEY, "claude-sonnet-5-5", base_url=gateway.url, max_retries=0, timeout=10.0)
        # When the model is called
        with pytest.raises(ModelUnavailable) as raised:
            model.create(_request())
    # Then the error is the retryable ModelUnavailable naming the content type and the first bytes
    # (before: AttributeError "'str' object has no attribute 'content'")
    assert content_type in str(raised.value) and start in str(raised.value)


def test_a_200_that_is_not_json_within_a_time_budget_is_model_unavailable() -> None:
    # Given the same gateway, and a call with a time budget (claude_budget's path)
    with _Gateway() as gateway:
        gateway.inject(not_json(200, "<html>maintenance</html>"))
        model = ClaudeModel(KEY, "claude-sonnet-5-5", base_url=gateway.url, max_retries=0, timeout=10.0)
        # When it is called, Then it fails as ModelUnavailable too
        with pytest.raises(ModelUnavailable, match="text/html"):
            model.create(_request(timeout_seconds=5))


def test_a_batch_answer_that_is_not_json_is_model_unavailable() -> None:
    # Given a gateway answering a batch create with an HTML page
    from longdoc.adapters.batches import AnthropicBatches

    with _Gateway() as gateway:
        gateway.inject(not_json(200, "<html>proxy login</html>"))
        # When a batch is created, Then it fails as ModelUnavailable (not AttributeError)
        with pytest.raises(ModelUnavailable, match="proxy login"):
            AnthropicBatches(KEY, base_url=gateway.url, max_retries=0).create([])


# --- Token counting ----------------------------------------------------------------------


class _Counting(FakeAnthropic):
    """The Messages fake plus ``POST /v1/messages/count_tokens``, counting 1 token per 3.1
    characters of the request's JSON (a stand-in: the real tokenizer is not public)."""

    down = False

    def _scripted(self, request: Any) -> Reply:
        if request.method == "POST" and request.path == "/v1/messages/count_tokens" and self.down:
            return Reply(status=500, body={"type": "error", "error": {"type": "api_error", "message": "down"}})
        if request.method == "POST" and request.path == "/v1/messages/count_tokens":
            return Reply(body={"input_tokens": math.ceil(len(request.raw) / 3.1)})
        return super()._scripted(request)


def test_token_counts_are_cached_by_request_hash() -> None:
    # Given a model with the count endpoint behind it
    with _Counting() as fake:
        model = _model(fake, "claude-sonnet-5-5")
        # When the same request is counted twice, and a different one once
        first = model.count_tokens(_request())
        again = model.count_tokens(_request())
        other = model.count_tokens(_request(messages=[_user("A different question, longer than the first.")]))
    # Then the second count made no HTTP call, the body was the request without max_tokens (same
    # thinking and effort as create), and a different request was counted anew
    calls = fake.calls("POST", "/v1/messages/count_tokens")
    assert first == again and other > first and len(calls) == 2
    assert "max_tokens" not in calls[0].body and calls[0].body["thinking"] == {"type": "adaptive"}


def test_token_counting_follows_the_request_rules() -> None:
    # Given the default model, When a forced-tool request is counted, Then it is refused unsent
    with _Counting() as fake:
        with pytest.raises(ModelRejectsRequest):
            _model(fake, "claude-sonnet-5-5").count_tokens(_request(tool_choice={"type": "any"}))
        assert fake.requests == []


# --- Bedrock: the Messages-API endpoint for the 5.x rows ---------------------------------


@pytest.fixture
def bedrock(fake_aws_env: None) -> Iterator[FakeBedrock]:
    from anthropic.lib.aws import _auth

    _auth._get_session.cache_clear()
    with FakeBedrock(responder=lambda body: message_reply([text_block("ok")])) as server:
        yield server
    _auth._get_session.cache_clear()


def test_a_bedrock_5_5_row_goes_to_the_messages_endpoint_signed_for_bedrock_mantle(bedrock: FakeBedrock) -> None:
    # Given Sonnet 5.5's Bedrock inference profile (a row with endpoint "messages")
    model_id = "global.anthropic.claude-sonnet-5-5"
    model = ClaudeModel(None, model_id, provider="bedrock", base_url=bedrock.mantle_url, max_retries=0, timeout=10.0)
    # When it is called
    response = model.create(_request("triage"))
    # Then the request went to /anthropic/v1/messages, SigV4-signed for bedrock-mantle (the fake
    # verified it), its body names the model and carries the table's fields, no InvokeModel
    # anthropic_version in the body
    [sent] = bedrock.requests
    assert model.endpoint == "messages" and sent.path == "/anthropic/v1/messages"
    assert bedrock.bad_signatures == 0 and bedrock.invoked_models == [model_id]
    assert "/bedrock-mantle/aws4_request" in sent.headers["authorization"]
    assert sent.body["model"] == model_id and "anthropic_version" not in sent.body
    assert (sent.body["thinking"], sent.body["output_config"]) == ({"type": "between_tools"}, {"effort": "low"})
    assert response.content == [TextBlock(text="ok")]


def test_a_legacy_bedrock_row_still_goes_to_invoke_model(bedrock: FakeBedrock) -> None:
    # Given Haiku 4.5's ARN-versioned profile (a row with endpoint "invoke")
    model_id = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
    model = ClaudeModel(None, model_id, provider="bedrock", base_url=bedrock.base_url, max_retries=0, timeout=10.0)
    # When it is called
    model.create(_request())
    # Then it is an InvokeModel call with Bedrock's anthropic_version, signed for bedrock
    [sent] = bedrock.requests
    assert model.endpoint == "invoke" and sent.path == f"/model/{model_id}/invoke"
    assert sent.body["anthropic_version"] == BEDROCK_ANTHROPIC_VERSION and bedrock.bad_signatures == 0
    assert "/bedrock/aws4_request" in sent.headers["authorization"]


def test_the_text_counter_counts_once_per_text_and_falls_back_to_the_estimate() -> None:
    # Given Claude's token counter over the count endpoint
    from longdoc.adapters.claude_count import ClaudeTokenCounter
    from longdoc.core.tokens import estimate_tokens

    text = "The Supplier shall maintain insurance of not less than $5,000,000 per claim. " * 20
    with _Counting() as fake:
        counter = ClaudeTokenCounter(_model(fake, "claude-sonnet-5-5"))
        # When the same text is counted twice
        first, again = counter.count_text(text), counter.count_text(text)
        calls = len(fake.calls("POST", "/v1/messages/count_tokens"))
        # And the endpoint then fails for a new text
        fake.down = True
        fallback = counter.count_text(text + " Another clause.")
    # Then one HTTP call served both counts, and the failure gave the calibrated estimate
    assert first == again > 0 and calls == 1
    assert fallback == estimate_tokens(text + " Another clause.", "claude-sonnet-5-5")


def test_a_200_that_is_not_json_is_retried_and_the_next_answer_used() -> None:
    # Given a gateway that answers the first Messages call with an SSE stream (HTTP 200,
    # text/event-stream), then with the API's JSON message
    answer = json.dumps(message_reply([text_block("done")], model="claude-sonnet-5-5").body).encode()
    with _Gateway() as gateway:
        gateway.inject(Fault(status=200, raw=SSE.encode(), headers={"content-type": "text/event-stream"}),
                       Fault(status=200, raw=answer, headers={"content-type": "application/json"}))
        model = ClaudeModel(KEY, "claude-sonnet-5-5", base_url=gateway.url, max_retries=2, timeout=10.0)
        # When the model is called once
        response = model.create(_request())
        calls = gateway.calls("POST", "/v1/messages")
    # Then the non-JSON 200 was retried like a 5xx (the SDK retries no 200) and the second
    # answer came back: two requests, one answer
    assert [b.text for b in response.content if b.type == "text"] == ["done"]
    assert len(calls) == 2
