"""Claude on Amazon Bedrock: ClaudeModel(provider="bedrock") through the real ``anthropic`` SDK's
``AnthropicBedrock`` client against :class:`tests.fakes.bedrock_server.FakeBedrock`, a loopback
fake of the Bedrock runtime InvokeModel endpoint that verifies each request's SigV4 signature.

Covers one call (request shape, caching marks, conversion), throttling (SDK retries, then
ModelThrottled) and Bedrock's other error names, and a whole run under the local Step Functions
engine whose sessions end on ``max_tokens`` and resume from their checkpoints.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from longdoc import wiring
from longdoc.config import function_settings
from longdoc.adapters.claude import BEDROCK_ANTHROPIC_VERSION, ClaudeModel
from longdoc.core.errors import ModelRequestError, ModelThrottled, ModelUnavailable
from longdoc.core.messages import Message, ModelRequest, ToolUseBlock
from longdoc.extract.catalogue import load_catalogue
from longdoc.core.cost import estimate_cost, load_prices
from longdoc.extract.session import run_result, start_run
from tests.fakes.anthropic_server import message_reply, text_block, tool_use_block, usage_json
from tests.fakes.bedrock_server import FakeBedrock, bedrock_error

BEDROCK_MODEL = "us.anthropic.claude-haiku-4-5-20251001-v1:0"  # the table's InvokeModel row (endpoint "invoke")
SYSTEM = [
    {"type": "text", "text": "You extract clauses and cite them."},
    {"type": "text", "text": "Clause catalogue: governing_law.", "cache_control": {"type": "ephemeral"}},
]
TOOLS = [{"name": "record_extraction", "description": "Record one clause.",
          "input_schema": {"type": "object", "properties": {"quote": {"type": "string"}}, "required": ["quote"]},
          "cache_control": {"type": "ephemeral"}}]


@pytest.fixture(autouse=True)
def fresh_sdk_credentials() -> Iterator[None]:
    """The SDK caches its boto3 session (and so its credentials): start and end each test without it."""
    from anthropic.lib.aws import _auth

    _auth._get_session.cache_clear()
    yield
    _auth._get_session.cache_clear()


@pytest.fixture
def bedrock(fake_aws_env: None) -> Iterator[FakeBedrock]:
    with FakeBedrock() as server:
        yield server


def _model(fake: FakeBedrock, max_retries: int = 1) -> ClaudeModel:
    return ClaudeModel(None, BEDROCK_MODEL, provider="bedrock", base_url=fake.base_url, max_retries=max_retries,
                       timeout=10.0)


def _request() -> ModelRequest:
    return ModelRequest(system=SYSTEM, tools=TOOLS, max_tokens=512,
                        messages=[Message(role="user", content=[{"type": "text", "text": "Find governing_law."}])])


def test_signed_invoke_carries_the_messages_body_and_converts_the_reply(bedrock: FakeBedrock) -> None:
    # Given a Bedrock reply with a tool call and cache usage
    bedrock.enqueue(message_reply([text_block("Found it."), tool_use_block("record_extraction", {"quote": "Delaware"},
                                                                           id="toolu_b1")],
                                  "tool_use", usage_json(1500, 40, cache_creation_input_tokens=0,
                                                         cache_read_input_tokens=1200)))
    model = _model(bedrock)
    # When the model is called
    response = model.create(_request())
    # Then the request went to the model's InvokeModel path, SigV4-signed for "bedrock" with the
    # environment's credentials (the fake verified the signature), its body is the Messages API
    # body without "model" and with Bedrock's anthropic_version, cache marks intact
    [request] = bedrock.requests
    assert request.path == f"/model/{BEDROCK_MODEL}/invoke"
    assert bedrock.bad_signatures == 0 and bedrock.invoked_models == [BEDROCK_MODEL]
    assert request.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=testing/")
    assert "x-api-key" not in request.headers
    body = request.body
    assert "model" not in body
    assert body["anthropic_version"] == BEDROCK_ANTHROPIC_VERSION == "bedrock-2023-05-31"
    assert body["system"] == SYSTEM and body["tools"] == TOOLS and body["max_tokens"] == 512
    # And the reply converts exactly as from the Anthropic API, naming the provider and model
    assert (model.provider, model.name) == ("bedrock", BEDROCK_MODEL)
    assert response.stop_reason == "tool_use" and response.model == BEDROCK_MODEL
    assert response.content[1] == ToolUseBlock(id="toolu_b1", name="record_extraction", input={"quote": "Delaware"})
    assert response.usage.cache_read_input_tokens == 1200
    assert "bedrock" in repr(model) and "testing" not in repr(model)


def test_an_unsigned_or_wrongly_signed_request_is_refused(fake_aws_env: None) -> None:
    # Given a fake that expects a different secret key than the SDK signs with
    with FakeBedrock(secret_key="another-fake-secret") as fake:
        fake.enqueue(message_reply([text_block("never sent")]))
        # When the model is called, Then the signature check fails (HTTP 403) as a request error
        with pytest.raises(ModelRequestError, match="403 InvalidSignatureException"):
            _model(fake).create(_request())
        assert fake.bad_signatures == 1 and fake.invoked_models == []


def test_throttling_is_retried_by_the_sdk_then_succeeds(bedrock: FakeBedrock) -> None:
    # Given one ThrottlingException (429), then a reply
    bedrock.enqueue(bedrock_error(429, "ThrottlingException", "Too many requests", retry_after_ms=1),
                    message_reply([text_block("ok")]))
    # When the model is called with one SDK retry
    response = _model(bedrock, max_retries=1).create(_request())
    # Then the SDK retried once, re-signed, and the call succeeded
    assert response.stop_reason == "end_turn"
    assert [r.answered for r in bedrock.requests] == [429, 200]
    assert bedrock.bad_signatures == 0


@pytest.mark.parametrize(("status", "error_type", "expected"), [
    (429, "ThrottlingException", ModelThrottled),
    (429, "ModelNotReadyException", ModelThrottled),
    (424, "ModelErrorException", ModelUnavailable),
    (503, "ServiceUnavailableException", ModelUnavailable),
    (400, "ValidationException", ModelRequestError),
    (403, "AccessDeniedException", ModelRequestError),
])
def test_bedrock_errors_map_to_the_state_machine_error_names(
    bedrock: FakeBedrock, status: int, error_type: str, expected: type[Exception]
) -> None:
    # Given an error that persists through the SDK's retries
    bedrock.responder = lambda body: bedrock_error(status, error_type, f"{error_type} from the fake", retry_after_ms=1)
    # When the model is called, Then the error maps by Bedrock's error name and carries it
    with pytest.raises(expected, match=error_type):
        _model(bedrock, max_retries=1).create(_request())


def test_bedrock_model_ids_have_prices_like_their_anthropic_models() -> None:
    # Given the capability table's prices
    prices = load_prices()
    usage = message_reply([]).body["usage"]
    from longdoc.core.messages import Usage

    # Then the Bedrock ids of a model (in-Region and cross-Region profiles) cost what the model costs
    for anthropic_id, bedrock_ids in {
        "claude-sonnet-5-5": ("global.anthropic.claude-sonnet-5-5", "us.anthropic.claude-sonnet-5-5",
                              "anthropic.claude-sonnet-5-5"),
        "claude-haiku-4-5": ("anthropic.claude-haiku-4-5-20251001-v1:0", BEDROCK_MODEL,
                             "eu.anthropic.claude-haiku-4-5-20251001-v1:0",
                             "global.anthropic.claude-haiku-4-5-20251001-v1:0"),
    }.items():
        anthropic = estimate_cost(Usage(**usage), anthropic_id, prices)
        for model in bedrock_ids:
            assert estimate_cost(Usage(**usage), model, prices) == anthropic is not None


@pytest.mark.slow
def test_max_tokens_sessions_resume_from_checkpoints_through_bedrock(
    aws_stack, ingested_contract, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the extract path wired to Claude on Bedrock (the fake), and a model that answers one
    # clause type per session and ends every session on max_tokens inside a cut-off second call
    from tests.functional.test_claude_loop import Scripted, one_per_session, run_machine

    with FakeBedrock() as fake:
        model = ClaudeModel(None, BEDROCK_MODEL, provider="bedrock", base_url=fake.base_url, max_retries=2)
        monkeypatch.setattr(wiring, "model", lambda: model)
        monkeypatch.setenv("LONGDOC_SEARCH_MIN_SCORE", "0")  # the scripted model never searches (test_claude_search)
        function_settings.cache_clear()
        fake.responder = Scripted(one_per_session(["max_tokens"]))
        clause_types = ["Governing Law", "Insurance", "Audit Rights"]
        run = start_run(wiring.state_store(), load_catalogue(), doc_id=ingested_contract.doc_id,
                        clause_types=clause_types, model_name=BEDROCK_MODEL, max_tokens=1024, top_k=4, facts={})
        # When the real state machine runs the extraction
        result = run_machine(run)
        # Then it succeeds after one session per clause type (each resumed from the checkpoint),
        # every request was a signed InvokeModel of the configured model, the cut-off calls were
        # never executed, and the result is priced from the Bedrock id's row
        assert result.status == "SUCCEEDED", result.cause
        final = run_result(wiring.state_store(), run.run_id)
        assert final["sessions"] == 3
        assert set(fake.invoked_models) == {BEDROCK_MODEL} and fake.bad_signatures == 0
        assert sorted(e.clause_type for e in wiring.state_store().list_extractions(run.run_id)) == sorted(clause_types)
        assert all(r.body["anthropic_version"] == BEDROCK_ANTHROPIC_VERSION for r in fake.requests)
        assert final["cost_usd"] is not None and float(final["cost_usd"]) > 0
        assert (final["model"], final["provider"]) == (BEDROCK_MODEL, "bedrock")


def test_strict_tools_are_never_sent_to_bedrock(fake_aws_env: None) -> None:
    # Given the strict Bedrock fake (it refuses "strict" on a tool: BEDROCK page, structured outputs not
    # supported) and a request whose tools are the strict extraction tools
    from longdoc.extract.tools import tool_definitions
    from tests.fakes.bedrock_server import StrictBedrock

    tools = tool_definitions(strict=True)
    assert all(t.get("strict") is True for t in tools)
    with StrictBedrock(responder=lambda body: message_reply([text_block("ok")])) as fake:
        model = ClaudeModel(None, "anthropic.claude-sonnet-5-5", provider="bedrock", base_url=fake.mantle_url,
                            max_retries=0, timeout=10.0)
        # When the model is called
        model.create(ModelRequest(system=[], tools=tools, max_tokens=1000, job="extract",
                                  messages=[Message(role="user", content=[{"type": "text", "text": "hi"}])]))
    # Then the request reached the model with every tool but none carrying "strict", and nothing was refused
    sent = fake.requests[-1].body["tools"]
    assert [t["name"] for t in sent] == [t["name"] for t in tools]
    assert not [t for t in sent if "strict" in t] and fake.contract.rejected == []
