"""The prompt layout that caches (issue 25, item 7), on the wire: the real ``anthropic`` SDK against the
loopback Messages fake, three sessions of one run.

Session N+1's first request must repeat session N's prefix byte for byte up to the chunk breakpoint
(tools + system + the stable CASE_FACTS + the run's chunk context), so Anthropic's prompt cache
(https://platform.claude.com/docs/en/build-with-claude/prompt-caching: a read needs an identical
prefix up to a ``cache_control`` breakpoint) serves it; CASE_FACTS's exact values stay verbatim in
every request, ahead of the chunks.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import pytest

from longdoc import wiring
from longdoc.adapters.claude import ClaudeModel
from longdoc.config import function_settings
from longdoc.extract.prompt import parse_prompt, prompt_text
from longdoc.extract.session import SessionOptions, run_session
from tests.fakes.anthropic_server import FakeAnthropic, PromptCache
from tests.functional.test_claude_loop import FACTS, MODEL_ID, Scripted, new_run, one_per_session

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

THREE = ["Governing Law", "Insurance", "Audit Rights"]


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(cache=PromptCache(min_tokens=512)) as server:
        yield server


@pytest.fixture
def claude(aws_stack, fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> Iterator[ClaudeModel]:
    """``wiring.model()`` is Claude (real SDK) talking to the caching fake (512-token minimum, Sonnet 5.5)."""
    model = ClaudeModel("test-key-not-real", MODEL_ID, base_url=fake.base_url, max_retries=2)
    monkeypatch.setattr(wiring, "model", lambda: model)
    function_settings.cache_clear()
    yield model
    function_settings.cache_clear()


def _tokens(blocks: list[dict[str, Any]]) -> int:
    """Tokens of blocks as the caching fake counts them (:class:`~tests.fakes.anthropic_server.PromptCache`)."""
    return sum(math.ceil(len(json.dumps({k: v for k, v in b.items() if k != "cache_control"}, sort_keys=True,
                                        ensure_ascii=False)) / 4) for b in blocks)


def _chunk_prefix(body: dict[str, Any]) -> str:
    """What a request sends up to and including its chunk breakpoint (tools, system, first user block)."""
    return json.dumps([body["tools"], body["system"], body["messages"][0]["content"][0]], ensure_ascii=False)


def test_session_two_repeats_session_ones_prefix_up_to_the_chunk_breakpoint(claude, fake, ingested_contract) -> None:
    # Given a run of three clause types with pinned exact values, and a model that resolves one per
    # session (each session ends on max_tokens inside a second, cut-off call)
    fake.responder = Scripted(one_per_session(["max_tokens"]))
    run = new_run(ingested_contract, THREE)
    options = SessionOptions(search_min_score=0)
    # When three sessions run
    outcomes = [run_session(wiring.deps(), run.run_id, options) for _ in range(3)]
    assert [o.status for o in outcomes] == ["CONTINUE", "CONTINUE", "DONE"]
    bodies = [r.body for r in fake.requests]
    firsts = [b for b in bodies if len(b["messages"]) == 1]
    assert len(firsts) == 3
    # Then every session's first request repeats session 1's prefix byte for byte up to the chunk
    # breakpoint: tools, system, and the user block of the stable CASE_FACTS and the chunks
    stable = firsts[0]["messages"][0]["content"][0]
    assert stable["cache_control"] == {"type": "ephemeral"}
    assert _chunk_prefix(firsts[1]) == _chunk_prefix(firsts[0]) == _chunk_prefix(firsts[2])
    # And what changed between sessions (pending, resolved, decisions) is after that breakpoint
    facts = [parse_prompt(prompt_text(b["messages"][0]["content"]))[0] for b in firsts]
    assert [len(f["pending"]) for f in facts] == [3, 2, 1]
    assert "\"pending\":" not in stable["text"] and "\"resolved\":" not in stable["text"]
    # And session 2's first call reads that whole prefix from the cache, written by session 1
    usage = [c.usage for c in wiring.state_store().load_checkpoint(run.run_id).calls]
    second = next(u for u, b in zip(usage, bodies, strict=True) if b is firsts[1])
    prefix = _tokens([*firsts[0]["tools"], *firsts[0]["system"], stable])
    assert prefix >= 512 and second.cache_read_input_tokens == prefix
    assert usage[0].cache_creation_input_tokens >= prefix
    # And no request carries more than the 4 breakpoints the API allows
    for body in bodies:
        marks = [b for b in [*body["tools"], *body["system"], *(c for m in body["messages"]
                 if isinstance(m["content"], list) for c in m["content"])] if "cache_control" in b]
        assert len(marks) <= 4
    # And CASE_FACTS's exact values are in every request, verbatim, ahead of the chunks
    for body in bodies:
        text = prompt_text(body["messages"][0]["content"])
        head = text[: text.index("<retrieved_chunks-")].encode("utf-8")
        for key, value in FACTS.items():
            assert f'"{key}": "{value}"'.encode() in head
