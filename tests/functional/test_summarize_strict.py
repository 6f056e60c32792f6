"""Summaries against the strict Claude fake: thinking never replayed behind a changed prefix, the
static prefix read from cache, a failure told in one sentence.

``longdoc summarize`` runs as a user would (CLI, local engine, the real state machine and
handler, the real SDK) against :class:`tests.fakes.strict_claude.StrictClaude`, which signs
every thinking block over its prefix (tools, system, earlier messages) and refuses a replay
behind a changed one, and whose cache reads only byte-identical prefixes written earlier.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from longdoc import wiring
from longdoc.cli import main
from tests.fakes.anthropic_server import enable_streaming, error_reply, message_reply, text_block, usage_json
from tests.fakes.strict_claude import StrictClaude
from tests.functional.summary_support import ClaudeShaped, add_policy, claude_home

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

WRONG = "- The deductible is $999.99 per claim. [1]"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A local LONGDOC_HOME, Claude chosen (Sonnet 5.5, a fake key), groups small enough to map and reduce,
    one map call at a time (so the cache order is the call order)."""
    yield claude_home(tmp_path, monkeypatch, claude_model="claude-sonnet-5-5", summary_map_concurrency="1")
    wiring.reset()


def strict(monkeypatch: pytest.MonkeyPatch, shaped: Any) -> StrictClaude:
    fake = enable_streaming(StrictClaude(shaped))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    wiring.reset()
    return fake


def summarize(capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any] | None, str]:
    code = main(["summarize", "policy", "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def messages_calls(fake: StrictClaude) -> list[dict[str, Any]]:
    return [r.body for r in fake.calls("POST", "/v1/messages")]


def _final_with_a_wrong_line(kind: str, body: dict[str, Any], content: list[dict[str, Any]]) -> Any:
    if kind == "final":
        return [text_block(content[0]["text"] + "\n" + WRONG)]
    return content


def test_the_final_correction_never_replays_thinking_behind_the_added_tool(home, monkeypatch, capsys) -> None:
    # Given a final synthesis (streamed, no tools, thinking on: Sonnet 5.5 runs adaptive) with one
    # statement whose amount its section does not state
    add_policy(home, sections=8)
    with strict(monkeypatch, ClaudeShaped(_final_with_a_wrong_line)) as fake:
        # When the policy is summarised
        code, result, err = summarize(capsys)
        bodies = messages_calls(fake)
        rejected = list(fake.rejected)
    # Then the strict fake refused nothing (a thinking block replayed behind the added tool would be a 400)
    assert rejected == [] and code == 0 and result is not None, err
    final = next(b for b in bodies if b.get("stream"))
    correction = next(b for b in bodies if len(b["messages"]) == 3 and "TASK (final)" in str(b["messages"][0]))
    assert final.get("tools") in (None, []) and [t["name"] for t in correction["tools"]] == ["record_summary"]
    # And the correction's assistant turn is the final's visible text only, no thinking block
    assistant = correction["messages"][1]
    assert assistant["role"] == "assistant"
    said = assistant["content"] if isinstance(assistant["content"], str) else "".join(
        b.get("text", "") for b in assistant["content"])
    assert WRONG in said and "thinking" not in json.dumps(assistant)
    assert "$999.99" in correction["messages"][2]["content"]
    # And the wrong statement was withdrawn (the baseline brain withdraws), reported, never verified
    assert [d["text"] for d in result["dropped"]] == [WRONG[2:].rsplit(" [", 1)[0]]
    assert all("$999.99" not in s["text"] for s in result["statements"])
    assert result["correction_calls"] == 1


def test_a_multi_group_summary_reads_its_static_prefix_from_cache_from_the_second_map_call(home, monkeypatch,
                                                                                           capsys) -> None:
    # Given the strict fake's cache (reads only a byte-identical prefix written earlier, over 512 tokens)
    add_policy(home, sections=8)
    with strict(monkeypatch, ClaudeShaped()) as fake:
        # When an eight-section policy is summarised (several map calls, reduce, final)
        code, result, err = summarize(capsys)
        stats = fake.cache_stats()
        bodies = messages_calls(fake)
    assert code == 0 and result is not None and fake.rejected == [], err
    # Then every map and reduce call marks the last tool and the system block (2 of the 4 breakpoints)
    for body in bodies:
        marks = [b for b in [*(body.get("tools") or []), *body["system"]] if "cache_control" in b]
        assert len(marks) == (2 if body.get("tools") else 1)
    kinds = ["final" if b.get("stream") else "reduce" if "TASK (reduce)" in str(b["messages"][0]) else "map"
             for b in bodies]
    records = stats["requests"]
    assert len(records) == len(bodies) and kinds.count("map") >= 3
    # And the first map call writes the prefix, every later map and reduce call reads it
    assert records[0].read == 0 and records[0].written_5m > 0
    tool_calls = [r for r, k in zip(records, kinds, strict=True) if k != "final"]
    assert all(r.read >= records[0].written_5m for r in tool_calls[1:])
    # And the summary's reported usage says so (what the fake billed as cache reads)
    assert result["usage"]["cache_read_input_tokens"] == stats["read"] > 0
    share = stats["read"] / stats["input"]
    print(f"summary of 8 sections: {len(bodies)} calls ({kinds.count('map')} map), read from cache "
          f"{stats['read']}/{stats['input']} = {share:.1%}")


def _reject_map_two(kind: str, body: dict[str, Any], content: list[dict[str, Any]]) -> Any:
    if kind == "map" and "section: 3 |" in body["messages"][0]["content"]:
        return error_reply(400, "messages.0.content: scripted rejection")
    return content


def test_a_failed_summary_is_told_in_one_sentence_without_the_lambda_payload(home, monkeypatch, capsys) -> None:
    # Given a map request the API rejects (a 400: ModelRequestError, not retried)
    add_policy(home, sections=8)
    with strict(monkeypatch, ClaudeShaped(_reject_map_two)):
        # When the policy is summarised
        code, _, err = summarize(capsys)
    # Then the CLI prints one line: the error's name and message, then how to resume; no JSON, no stack trace
    assert code == 1
    line = err.strip()
    assert len(line.splitlines()) == 1
    assert re.fullmatch(r"longdoc: summary sum-[0-9a-f]{20} failed: ModelRequestError: .*scripted rejection.*"
                        r"; next: run the same command again to resume \(finished groups are kept\)", line), line
    assert not any(s in line for s in ("errorType", "stackTrace", "{", "Traceback"))


HALF = "The Insured Person must notify Us of any claim within but the"


def _cut_first_map() -> Any:
    """Tamper: the first map call stops on max_tokens inside its record_summary call (a half statement last)."""
    state = {"done": False}

    def tamper(kind: str, body: dict[str, Any], content: list[dict[str, Any]]) -> Any:
        if kind == "map" and not state["done"]:
            state["done"] = True
            block = next(b for b in content if b["type"] == "tool_use")
            block["input"]["statements"].append({"text": HALF, "sections": ["1"]})
            return message_reply(content, "max_tokens", usage_json(100, body["max_tokens"]))
        return content

    return tamper


def test_a_map_call_cut_by_max_tokens_is_asked_again_with_more_room_and_never_stored(home, monkeypatch,
                                                                                     capsys) -> None:
    # Given a first map reply that stopped on max_tokens inside its record_summary call
    add_policy(home, sections=8)
    with strict(monkeypatch, ClaudeShaped(_cut_first_map())) as fake:
        # When the policy is summarised
        code, result, err = summarize(capsys)
        bodies = messages_calls(fake)
        rejected = list(fake.rejected)
    assert rejected == [] and code == 0 and result is not None, err
    # Then the cut call was asked again: the same request with twice the output cap
    first, again = bodies[0], bodies[1]
    assert again["messages"] == first["messages"] and again["max_tokens"] == 2 * first["max_tokens"]
    # And its half statement was never stored, verified or printed
    assert all(HALF not in s["text"] for s in result["statements"]) and HALF not in result["text"]
    stored = [p.read_text() for p in (home / "bucket" / "summaries").rglob("map/*.json")]
    assert stored and all(HALF not in text for text in stored)
