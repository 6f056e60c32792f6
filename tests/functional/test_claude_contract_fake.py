"""The strict Claude fakes refuse what the documented contract refuses, through the real ``anthropic`` SDK.

Each rule of :mod:`tests.fakes.claude_contract` is exercised by a violating request sent with
the SDK (2.x, API version 2026-10-21) to :class:`tests.fakes.strict_claude.StrictClaude`, which
must answer the documented status, error type and message; a good request passes. Then the
thinking round-trip (echo unchanged passes; altered, dropped, moved to another model or another
conversation fails), thinking tokens against ``max_tokens``, the cache accounting (a read only
after a write of the identical prefix, over the row's minimum, within its TTL, Messages and
Batches apart), and the Batches and Bedrock strict fakes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from tests.fakes.anthropic_server import enable_streaming, message_reply, text_block, tool_use_block
from tests.fakes.batches_server import StrictBatches
from tests.fakes.bedrock_server import StrictBedrock
from tests.fakes.claude_contract import check_request
from tests.fakes.strict_claude import StrictClaude

SONNET = "claude-sonnet-5-5"
TOOLS = [{"name": "lookup", "description": "Look a word up.", "input_schema": {"type": "object",
                                                                            "properties": {"q": {"type": "string"}}}}]
HI = [{"role": "user", "content": "hello"}]
OPUS_DISABLED = ('"thinking.type.disabled" is not supported for this model. Use "thinking.type.adaptive" and '
                 '"output_config.effort" to control thinking behavior.')


class Clock:
    """A settable clock (seconds) for cache lifetimes."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def fake(clock: Clock) -> Iterator[StrictClaude]:
    """A strict Messages fake whose brain calls the lookup tool once, then answers in text."""
    def brain(body: dict[str, Any]) -> Any:
        last = body["messages"][-1]["content"]
        if isinstance(last, list) and any(b.get("type") == "tool_result" for b in last):
            return message_reply([text_block("done")], "end_turn")
        if body.get("tools"):
            return message_reply([tool_use_block("lookup", {"q": "x"}, "toolu_1")], "tool_use")
        return message_reply([text_block("hi there")], "end_turn")
    with StrictClaude(brain, clock=clock) as server:
        yield server


def client(fake: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="test-key-not-real", base_url=fake.base_url, max_retries=0, timeout=30.0)


def send(fake: StrictClaude, model: str = SONNET, max_tokens: int = 1000, messages: Any = None,
         **extra: Any) -> Any:
    """``messages.create`` with the fields the SDK types do not name passed as ``extra_body``."""
    return client(fake).messages.create(model=model, max_tokens=max_tokens, messages=messages or HI,
                                        extra_body=extra or None)


def turn(message: Any) -> list[dict[str, Any]]:
    """An SDK reply's content as the product sends it back."""
    return [b.model_dump(mode="json", exclude_none=True) for b in message.content]


def answered(turn_: list[dict[str, Any]], tool_id: str = "toolu_1") -> list[dict[str, Any]]:
    """The conversation after one tool call: the assistant turn and its tool result."""
    return [*HI, {"role": "assistant", "content": turn_},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": "found"}]}]


TOOL_TURN = [{"type": "tool_use", "id": "toolu_9", "name": "lookup", "input": {"q": "x"}}]

VIOLATIONS = [
    ("unknown model", dict(model="claude-nope"), 404, "not_found_error", "model: claude-nope"),
    ("max_tokens over the limit", dict(max_tokens=200_000), 400, "invalid_request_error",
     f"max_tokens: 200000 > 128000, which is the maximum allowed number of output tokens for {SONNET}"),
    ("forced tool choice any", dict(tools=TOOLS, tool_choice={"type": "any"}), 400, "invalid_request_error",
     'tool_choice.type: "any" (forced tool use) is not supported for this model'),
    ("forced tool choice tool", dict(tools=TOOLS, tool_choice={"type": "tool", "name": "lookup"}), 400,
     "invalid_request_error", 'tool_choice.type: "tool" (forced tool use) is not supported'),
    ("forced tool with thinking", dict(model="claude-haiku-4-5", max_tokens=4000, tools=TOOLS,
                                       tool_choice={"type": "any"}, thinking={"type": "enabled", "budget_tokens": 2000}),
     400, "invalid_request_error", "Thinking may not be enabled when tool_choice forces tool use."),
    ("disabled on Opus 5.5", dict(model="claude-opus-5-5", thinking={"type": "disabled"}), 400,
     "invalid_request_error", OPUS_DISABLED),
    ("disabled on Sonnet 5.5", dict(thinking={"type": "disabled"}), 400, "invalid_request_error",
     'Use "thinking.type.between_tools" for the lowest setting.'),
    ("enabled on Sonnet 5.5", dict(thinking={"type": "enabled", "budget_tokens": 2000}), 400,
     "invalid_request_error", '"thinking.type.enabled" is not supported for this model'),
    ("adaptive on Haiku 4.5", dict(model="claude-haiku-4-5", thinking={"type": "adaptive"}), 400,
     "invalid_request_error", '"thinking.type.adaptive" is not supported for this model'),
    ("budget with adaptive", dict(thinking={"type": "adaptive", "budget_tokens": 2000}), 400,
     "invalid_request_error", "thinking.adaptive.budget_tokens: Extra inputs are not permitted"),
    ("between_tools at xhigh", dict(thinking={"type": "between_tools"}, output_config={"effort": "xhigh"}), 400,
     "invalid_request_error", '"xhigh" is not supported with "thinking.type.between_tools"'),
    ("effort on Haiku 4.5", dict(model="claude-haiku-4-5", output_config={"effort": "low"}), 400,
     "invalid_request_error", "output_config.effort: effort is not supported for this model"),
    ("unknown effort", dict(output_config={"effort": "huge"}), 400, "invalid_request_error",
     "output_config.effort: Input should be"),
    ("temperature", dict(temperature=0.0), 400, "invalid_request_error", "temperature: Extra inputs are not permitted"),
    ("top_p", dict(top_p=0.9), 400, "invalid_request_error", "top_p: Extra inputs are not permitted"),
    ("top_k", dict(top_k=5), 400, "invalid_request_error", "top_k: Extra inputs are not permitted"),
    ("prefill", dict(messages=[*HI, {"role": "assistant", "content": "The answer is"}]), 400,
     "invalid_request_error", "does not support assistant message prefill"),
    ("first turn assistant", dict(messages=[{"role": "assistant", "content": "hi"}, *HI]), 400,
     "invalid_request_error", 'messages.0.role: the first message must use the "user" role'),
    ("roles not alternating", dict(messages=[*HI, *HI]), 400, "invalid_request_error",
     "messages.1.role: roles must alternate"),
    ("tool_use without tool_result", dict(messages=[*HI, {"role": "assistant", "content": TOOL_TURN},
                                                    {"role": "user", "content": "go on"}]), 400,
     "invalid_request_error", "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: "
     "toolu_9. Each `tool_use` block must have a corresponding `tool_result` block in the next message."),
    ("tool_result for no tool_use", dict(thinking={"type": "between_tools"}, messages=[
        *HI, {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "?"}]}]), 400,
     "invalid_request_error", "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_x"),
    ("final assistant turn without thinking", dict(messages=answered(TOOL_TURN, "toolu_9")), 400,
     "invalid_request_error", "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
     "`tool_use`. When `thinking` is enabled, a final `assistant` message must start with a thinking block"),
    ("forged thinking block", dict(messages=answered([{"type": "thinking", "thinking": "", "signature": "Zm9yZ2Vk"},
                                                      *TOOL_TURN], "toolu_9")), 400,
     "invalid_request_error", "messages.1.content.0: Invalid `signature` in `thinking` block"),
    ("document from the assistant", dict(messages=[*HI, {"role": "assistant", "content": [
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "x"}}]}, *HI]), 400,
     "invalid_request_error", "messages.1.content.0: `document` blocks are not accepted in `assistant` messages"),
    ("citations on user text", dict(messages=[{"role": "user", "content": [{"type": "text", "text": "x", "citations": [
        {"type": "char_location", "cited_text": "x", "document_index": 0, "start_char_index": 0,
         "end_char_index": 1}]}]}]), 400, "invalid_request_error",
     "messages.0.content.0: `citations` on `text` blocks of `user` messages are not accepted"),
    ("five cache breakpoints", dict(system=[{"type": "text", "text": f"s{n}", "cache_control": {"type": "ephemeral"}}
                                            for n in range(5)]), 400, "invalid_request_error",
     "A maximum of 4 blocks with cache_control may be provided. Found 5."),
]


@pytest.mark.parametrize(("fields", "status", "kind", "text"), [v[1:] for v in VIOLATIONS],
                         ids=[v[0] for v in VIOLATIONS])
def test_each_documented_violation_gets_its_documented_error(fake: StrictClaude, fields: dict[str, Any], status: int,
                                                             kind: str, text: str) -> None:
    # Given a request that breaks one documented rule
    model, max_tokens, messages = fields.pop("model", SONNET), fields.pop("max_tokens", 1000), fields.pop("messages", HI)
    # When the real SDK sends it
    with pytest.raises(anthropic.APIStatusError) as caught:
        send(fake, model, max_tokens, messages, **fields)
    # Then the fake answers the documented status, error type and message, in the errors page's shape
    assert caught.value.status_code == status
    body = caught.value.body
    assert isinstance(body, dict) and body["type"] == "error" and body["request_id"].startswith("req_")
    assert body["error"]["type"] == kind and text in body["error"]["message"]
    # And the refusal is recorded, with the request it refused
    assert len(fake.rejected) == 1 and fake.rejected[0].error.status == status


def test_a_good_request_passes_and_a_thinking_reply_is_signed(fake: StrictClaude) -> None:
    # When a request that keeps every rule is sent (thinking absent: Sonnet 5.5 runs adaptive)
    reply = send(fake, tools=TOOLS, output_config={"effort": "medium"})
    # Then it passes, and the reply starts with a thinking block (empty text: display omitted by default)
    blocks = turn(reply)
    assert [b["type"] for b in blocks] == ["thinking", "tool_use"] and blocks[0]["thinking"] == ""
    assert blocks[0]["signature"] and not fake.rejected
    # And thinking spent 64 output tokens, the tool call the rest
    assert reply.usage.output_tokens > 64
    # And a model without thinking by default (Haiku 4.5) answers without a thinking block
    assert [b["type"] for b in turn(send(fake, "claude-haiku-4-5", tools=TOOLS))] == ["tool_use"]


def test_an_echo_unchanged_passes_and_an_altered_dropped_or_moved_one_fails(fake: StrictClaude) -> None:
    # Given a first turn that called a tool, with its thinking block
    first = turn(send(fake, tools=TOOLS))
    # When the turn goes back unchanged with the tool result, then it passes
    assert send(fake, tools=TOOLS, messages=answered(first)).stop_reason == "end_turn"
    # But an altered thinking text, a dropped block, or the echo sent to another model or conversation fails
    altered = [{**first[0], "thinking": "edited"}, first[1]]
    cases = {"altered": (SONNET, answered(altered), "Invalid `signature`"),
             "dropped": (SONNET, answered(first[1:]), "Expected `thinking` or `redacted_thinking`"),
             "other model": ("claude-opus-5-5", answered(first), "Invalid `signature`"),
             "other conversation": (SONNET, [{"role": "user", "content": "another question"}, *answered(first)[1:]],
                                    "Invalid `signature`")}
    for name, (model, messages, text) in cases.items():
        with pytest.raises(anthropic.BadRequestError) as caught:
            send(fake, model, messages=messages, tools=TOOLS)
        assert text in caught.value.body["error"]["message"], name
    assert len(fake.rejected) == 4


def test_thinking_spends_max_tokens_and_a_small_cap_stops_inside_thinking(clock: Clock) -> None:
    # Given a fake whose thinking costs 100 tokens
    with StrictClaude(lambda body: message_reply([tool_use_block("lookup", {"q": "x" * 60}, "toolu_1")], "tool_use"),
                      thinking_tokens=100, clock=clock) as fake:
        # When max_tokens leaves no room after thinking
        small = send(fake, max_tokens=80, tools=TOOLS)
        # Then the reply holds only the thinking block and stops on max_tokens, all 80 tokens spent
        assert [b["type"] for b in turn(small)] == ["thinking"] and small.stop_reason == "max_tokens"
        assert small.usage.output_tokens == 80
        # When the cap leaves room for thinking but not the whole tool call, the call is cut
        cut = send(fake, max_tokens=110, tools=TOOLS)
        assert [b["type"] for b in turn(cut)] == ["thinking"] and cut.stop_reason == "max_tokens"
        # When there is room, thinking and the call both come back
        full = send(fake, max_tokens=2000, tools=TOOLS)
        assert [b["type"] for b in turn(full)] == ["thinking", "tool_use"] and full.stop_reason == "tool_use"


def test_streaming_sends_the_thinking_block_with_its_signature(fake: StrictClaude) -> None:
    enable_streaming(fake)
    with client(fake).messages.stream(model=SONNET, max_tokens=1000, messages=HI) as events:
        message = events.get_final_message()
    assert [b.type for b in message.content] == ["thinking", "text"] and message.content[0].signature
    assert "content_block_start" in fake.sent_events and not fake.rejected
    # and the streamed block echoes like any other (no tool, so the next user turn just goes on)
    follow = [*HI, {"role": "assistant", "content": turn(message)}, {"role": "user", "content": "and?"}]
    assert send(fake, messages=follow).stop_reason == "end_turn"


def test_a_thinking_block_replayed_behind_changed_tools_or_system_fails(fake: StrictClaude) -> None:
    # PRES (https://platform.claude.com/docs/en/build-with-claude/preserved-thinking): a returned
    # thinking block is checked against the prefix before it, top-level system, tools and earlier
    # messages; a changed prefix makes it invalid (a 400 by default for accounts from 31 Aug 2026).
    # Given a text answer with its thinking block, to a request with no tools and one system prompt
    system = [{"type": "text", "text": "You summarise."}]
    first = turn(send(fake, system=system))
    assert [b["type"] for b in first] == ["thinking", "text"]
    follow = [*HI, {"role": "assistant", "content": first}, {"role": "user", "content": "fix line 2"}]
    # When it is replayed behind the same prefix, then it passes
    assert send(fake, messages=follow, system=system).stop_reason == "end_turn"
    # But behind added tools, or a changed system prompt, it fails on its signature
    for name, changed in {"tools added": dict(system=system, tools=TOOLS),
                          "system changed": dict(system=[{"type": "text", "text": "You summarise briefly."}])}.items():
        with pytest.raises(anthropic.BadRequestError) as caught:
            send(fake, messages=follow, **changed)
        assert "messages.1.content.0: Invalid `signature` in `thinking` block" in caught.value.body["error"]["message"], name
    # And the text alone (no thinking block: a turn without tool calls need not carry it) passes with the tools
    text_only = [*HI, {"role": "assistant", "content": first[1:]}, {"role": "user", "content": "fix line 2"}]
    assert send(fake, messages=text_only, system=system, tools=TOOLS).stop_reason is not None
    assert len(fake.rejected) == 2


def big_system(words: int = 600, ttl: str | None = None) -> list[dict[str, Any]]:
    """One system block of ``words`` words with a cache breakpoint (about 1.6 tokens a word here)."""
    mark = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    return [{"type": "text", "text": " ".join(f"rule{n}" for n in range(words)), "cache_control": mark}]


def test_a_cache_read_only_after_a_write_of_the_identical_prefix_over_the_minimum(fake: StrictClaude,
                                                                                  clock: Clock) -> None:
    # Given a system prompt over Sonnet 5.5's 512-token minimum, marked for caching
    system = big_system()
    # When it is sent twice
    first, second = send(fake, system=system), send(fake, system=system)
    # Then the first writes it (5-minute TTL) and the second reads exactly what was written
    assert first.usage.cache_read_input_tokens == 0 and first.usage.cache_creation_input_tokens >= 512
    assert first.usage.cache_creation.ephemeral_5m_input_tokens == first.usage.cache_creation_input_tokens
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert second.usage.cache_creation_input_tokens == 0
    # And one changed character is a different prefix: written again, nothing read
    changed = [{**system[0], "text": system[0]["text"] + "!"}]
    assert send(fake, system=changed).usage.cache_read_input_tokens == 0
    # And after the 5-minute TTL the entry is gone
    clock.now += 301
    assert send(fake, system=system).usage.cache_read_input_tokens == 0
    # And a prefix under the minimum is neither written nor read
    short = big_system(words=50)
    assert [send(fake, system=short).usage.cache_creation_input_tokens for _ in range(2)] == [0, 0]
    assert send(fake, system=short).usage.cache_read_input_tokens == 0
    # And the totals give the share of input read from cache
    stats = fake.cache_stats()
    assert stats["read"] == second.usage.cache_read_input_tokens and len(stats["requests"]) == 7
    assert 0 < stats["read_share"] < 1 and stats["input"] == stats["read"] + stats["written"] + stats["uncached"]


def test_count_tokens_applies_the_same_rules_and_the_fake_tokenizer(fake: StrictClaude) -> None:
    counted = client(fake).messages.count_tokens(model=SONNET, messages=HI, system=big_system())
    sent = send(fake, system=big_system())
    assert counted.input_tokens == sent.usage.input_tokens + sent.usage.cache_creation_input_tokens
    with pytest.raises(anthropic.BadRequestError, match="forced tool use"):
        client(fake).messages.count_tokens(model=SONNET, messages=HI, tools=TOOLS, tool_choice={"type": "any"})


def batch_answer(params: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": [text_block("ok")], "stop_reason": "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}


def test_batch_requests_obey_the_rules_and_the_batch_cache_is_its_own(fake: StrictClaude) -> None:
    system = big_system(ttl="1h")
    params = {"model": SONNET, "max_tokens": 1000, "messages": HI, "system": system}
    # Given the prefix already written in the Messages cache
    send(fake, system=system)
    with StrictBatches(batch_answer) as batches:
        sdk = client(batches).messages.batches
        # When a batch holds one forced-tool request and two good ones sharing the prefix
        bad = {**params, "tools": TOOLS, "tool_choice": {"type": "any"}}
        first = sdk.create(requests=[{"custom_id": "bad", "params": bad}, {"custom_id": "a", "params": params},
                                     {"custom_id": "b", "params": params}])
        assert sdk.retrieve(first.id).processing_status == "ended"
        results = {r.custom_id: r.result for r in sdk.results(first.id)}
        # Then the bad one is an errored result with the documented error, the others succeeded
        assert results["bad"].type == "errored" and "forced tool use" in results["bad"].error.error.message
        assert results["a"].type == results["b"].type == "succeeded"
        # And neither read the Messages cache's write, nor each other's: both wrote at the 1-hour TTL
        for name in ("a", "b"):
            usage = results[name].message.usage
            assert usage.cache_read_input_tokens == 0 and usage.cache_creation.ephemeral_1h_input_tokens >= 512
        # When a second batch goes out after the first ended, it reads the prefix
        second = sdk.create(requests=[{"custom_id": "c", "params": params}])
        sdk.retrieve(second.id)
        [only] = list(sdk.results(second.id))
        assert only.result.message.usage.cache_read_input_tokens >= 512
        assert len(batches.rejected) == 1 and batches.rejected[0].surface == "batch"


def test_check_request_is_pure_and_agrees_with_the_server() -> None:
    body = {"model": SONNET, "max_tokens": 10, "messages": HI, "tool_choice": {"type": "any"}, "tools": TOOLS}
    error = check_request(body, surface="messages", api_version="2026-10-21")
    assert error is not None and error.status == 400 and "forced tool use" in error.message
    # sampling parameters are a 2026-10-21 rule: an older version (Bedrock InvokeModel's) passes them
    legacy = {"model": "us.anthropic.claude-haiku-4-5-20251001-v1:0", "max_tokens": 10, "messages": HI,
              "temperature": 0.0}
    assert check_request(legacy, surface="bedrock", api_version="bedrock-2023-05-31") is None
    assert check_request(legacy, surface="bedrock", api_version="2026-10-21") is not None


@pytest.fixture
def bedrock(fake_aws_env: None) -> Iterator[StrictBedrock]:
    from anthropic.lib.aws import _auth

    _auth._get_session.cache_clear()  # a session cached under moto would sign with moto's keys
    with StrictBedrock(lambda body: message_reply([text_block("ok")], "end_turn")) as server:
        yield server


def test_bedrock_holds_both_paths_to_the_rules_with_bedrocks_error_shape(bedrock: StrictBedrock) -> None:
    # Given the Messages-API path (bedrock-mantle, SigV4) and a forced tool choice on Sonnet 5.5
    mantle = anthropic.AnthropicBedrockMantle(aws_region="us-east-1", base_url=bedrock.base_url, max_retries=0)
    with pytest.raises(anthropic.BadRequestError) as caught:
        mantle.messages.create(model="global.anthropic.claude-sonnet-5-5", max_tokens=100, messages=HI, tools=TOOLS,
                               tool_choice={"type": "any"})
    # Then Bedrock's ValidationException answers, with the contract's message
    assert caught.value.response.headers["x-amzn-ErrorType"].startswith("ValidationException")
    assert "forced tool use" in caught.value.body["message"]
    # And a good request passes with a signed thinking block
    good = mantle.messages.create(model="global.anthropic.claude-sonnet-5-5", max_tokens=500, messages=HI)
    assert [b.type for b in good.content] == ["thinking", "text"]
    # And token counting on that endpoint answers with the fake tokenizer
    assert mantle.messages.count_tokens(model="global.anthropic.claude-sonnet-5-5", messages=HI).input_tokens > 0
    # And on InvokeModel, the legacy row (API version bedrock-2023-05-31) takes a forced tool choice
    invoke = anthropic.AnthropicBedrock(aws_region="us-east-1", base_url=bedrock.base_url, max_retries=0)
    legacy = invoke.messages.create(model="us.anthropic.claude-haiku-4-5-20251001-v1:0", max_tokens=100, messages=HI,
                                    tools=TOOLS, tool_choice={"type": "any"},
                                    extra_body={"anthropic_version": "bedrock-2023-05-31"})
    assert [b.type for b in legacy.content] == ["text"]
    # But an unknown model is ResourceNotFoundException 404
    with pytest.raises(anthropic.NotFoundError):
        invoke.messages.create(model="us.anthropic.claude-nope-v1:0", max_tokens=100, messages=HI,
                               extra_body={"anthropic_version": "bedrock-2023-05-31"})
    assert len(bedrock.rejected) == 2 and bedrock.bad_signatures == 0
