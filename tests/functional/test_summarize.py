"""Summaries with Claude's wire protocol: the real ``anthropic`` SDK against the loopback fake, streaming included.

Each test runs ``longdoc summarize`` as a user would (the CLI, the local engine running the
real ``statemachine/summarize.asl.json``, the real handler) on a generated policy whose
sections each sit on their own page. The fake's answers come from
:class:`tests.functional.summary_support.ClaudeShaped`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from longdoc import wiring
from longdoc.adapters.blob import LocalBlobStore
from longdoc.cli import main
from longdoc.summarize import store
from tests.fakes.anthropic_server import FakeAnthropic, enable_streaming, error_reply, message_reply, tool_use_block
from tests.functional.summary_support import ClaudeShaped, add_policy, claude_home, section_amount

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

WRONG = "$999.99"


def _messages(fake: Any) -> list[Any]:
    """The Messages calls the fake received (token counting, which sizes the map groups once per
    document with a key, is left out)."""
    return fake.calls("POST", "/v1/messages")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh local LONGDOC_HOME; Claude chosen (a fake key), sizes small enough to map a few pages."""
    yield claude_home(tmp_path, monkeypatch, claude_model="claude-sonnet-5-5")
    wiring.reset()


def fake_claude(monkeypatch: pytest.MonkeyPatch, shaped: ClaudeShaped) -> FakeAnthropic:
    fake = enable_streaming(FakeAnthropic(responder=shaped))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    wiring.reset()
    return fake


def summarize(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any] | None, str]:
    code = main(["summarize", *args, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def test_a_document_that_fits_is_one_streamed_call(home, monkeypatch, capsys) -> None:
    # Given a two-section policy (well under the one-call budget) and Claude behind the fake
    add_policy(home, sections=2)
    shaped = ClaudeShaped()
    with fake_claude(monkeypatch, shaped) as fake:
        # When it is summarised
        code, result, _ = summarize(capsys, "policy")
    # Then one request was made, streamed, and it held the whole document under section headers
    assert code == 0 and result is not None
    assert shaped.kinds == ["final"] and len(_messages(fake)) == 1
    # and the document was measured with the token-counting endpoint in one call
    assert len(fake.calls("POST", "/v1/messages/count_tokens")) == 1
    body = _messages(fake)[0].body
    assert body["stream"] is True
    assert "[doc: policy.pdf | section: 1 | page: 1]" in body["messages"][0]["content"]
    assert "[doc: policy.pdf | section: 2 | page: 2]" in body["messages"][0]["content"]
    assert (result["mode"], result["map_calls"], result["reduce_depth"], result["model_calls"]) == ("single", 0, 0, 1)
    assert result["model"] == "claude-sonnet-5-5" and result["baseline"] is False
    # And the usage is the fake's, priced
    assert result["usage"]["input_tokens"] > 0 and result["cost_usd"] is not None


def test_map_calls_equal_the_groups_and_the_final_call_streams(home, monkeypatch, capsys) -> None:
    # Given an eight-section policy, too long for one call, and a small reduce budget
    add_policy(home, sections=8)
    monkeypatch.setenv("LONGDOC_SUMMARY_REDUCE_INPUT_TOKENS", "500")
    shaped = ClaudeShaped()
    with fake_claude(monkeypatch, shaped) as fake:
        # When it is summarised with --stream
        code = main(["summarize", "policy", "--stream"])
        printed = capsys.readouterr().out
    assert code == 0
    blobs = LocalBlobStore(home / "bucket")
    summary_id = next(p.name for p in (home / "bucket" / "summaries").iterdir())
    plan = store.load_plan(blobs, summary_id)
    result = store.load_result(blobs, summary_id)
    assert result is not None
    # Then there was one map call per group, none more, and at least one reduce level
    assert plan.mode == "map" and len(plan.groups) >= 3
    assert shaped.kinds.count("map") == len(plan.groups) == result["map_calls"] == result["groups"]
    assert result["reduce_depth"] >= 1 and shaped.kinds.count("reduce") == result["reduce_calls"] >= 1
    assert result["model_calls"] == len(_messages(fake))
    # And the final call was streamed as SSE, several text deltas, printed as they arrived
    final = [r.body for r in _messages(fake) if r.body.get("stream")]
    assert len(final) == 1 and shaped.kinds[-1] == "final"
    assert fake.sent_events.count("content_block_delta") > 3
    assert result["text"].strip() and result["text"].strip() in printed
    assert printed.index(result["text"].strip()) < printed.index("verified statements")
    # And every statement is cited to a section and page that hold its amounts verbatim
    assert result["statements"]
    for statement in result["statements"]:
        for citation in statement["citations"]:
            assert citation["page"] == int(citation["section_id"])
    amounts = {v["value"] for v in result["exact_values"] if v["kind"] == "amount"}
    assert {section_amount(k) for k in range(1, 9)} <= amounts


def _wrong_number(fix: bool):
    """Tamper: the first map call adds a statement citing section 1 with an amount section 1 does not state."""
    state = {"done": False}

    def tamper(kind: str, body: dict[str, Any], content: list[dict[str, Any]]) -> Any:
        if kind == "map" and not state["done"] and "section: 1 |" in body["messages"][0]["content"]:
            state["done"] = True
            block = next(b for b in content if b["type"] == "tool_use")
            block["input"]["statements"].append({"text": f"The deductible is {WRONG} per claim.", "sections": ["1"]})
        if kind == "correction":
            text = (f"We will pay the Insured Person for medical expenses up to {section_amount(1)} per claim." if fix
                    else f"The deductible is {WRONG} per claim.")
            return [tool_use_block("record_summary", {"statements": [{"text": text, "sections": ["1"]}]})]
        return content

    return tamper


@pytest.mark.parametrize("fix", [True, False], ids=["corrected", "dropped"])
def test_a_statement_citing_a_section_without_its_number_is_corrected_or_dropped(home, monkeypatch, capsys,
                                                                                 fix: bool) -> None:
    # Given a map answer with a statement whose amount is not in the section it cites
    add_policy(home, sections=8)
    shaped = ClaudeShaped(_wrong_number(fix))
    with fake_claude(monkeypatch, shaped) as fake:
        code, result, _ = summarize(capsys, "policy")
    assert code == 0 and result is not None
    # Then it went back to the model once, with the reason, as a tool_result error
    corrections = [r.body for r in _messages(fake) if len(r.body["messages"]) > 1]
    assert len(corrections) == 1
    sent_back = corrections[0]["messages"][-1]["content"][0]
    assert sent_back["is_error"] is True and WRONG in sent_back["content"] and "verbatim" in sent_back["content"]
    assert result["correction_calls"] == 1
    # And the wrong amount is nowhere among the verified statements or values
    assert all(WRONG not in s["text"] for s in result["statements"])
    assert all(v["value"] != WRONG for v in result["exact_values"])
    blobs = LocalBlobStore(home / "bucket")
    partial = store.load_partial(blobs, store.map_key(result["summary_id"], 0))
    if fix:  # the corrected statement is stored, verified, with its page
        fixed = [s for s in partial.statements if section_amount(1) in s.text and "up to" in s.text]
        assert fixed and fixed[0].citations[0].page == 1 and result["dropped"] == []
    else:  # still failing: dropped and reported, never stored as verified
        assert [d["text"] for d in result["dropped"]] == [f"The deductible is {WRONG} per claim."]
        assert "still failing" in result["dropped"][0]["reason"]
        assert all(WRONG not in s.text for s in partial.statements)


def test_a_failed_run_resumes_without_redoing_finished_groups(home, monkeypatch, capsys) -> None:
    # Given a run whose third map request is rejected (the Map state fails, the run is recorded FAILED)
    add_policy(home, sections=8)
    monkeypatch.setenv("LONGDOC_SUMMARY_MAP_CONCURRENCY", "1")
    calls = {"map": 0}

    def reject_third_map(kind: str, body: dict[str, Any], content: list[dict[str, Any]]) -> Any:
        if kind == "map":
            calls["map"] += 1
            if calls["map"] == 3:
                return error_reply(400, "scripted rejection")
        return content

    with fake_claude(monkeypatch, ClaudeShaped(reject_third_map)):
        code, _, err = summarize(capsys, "policy")
    assert code == 1 and "failed" in err and "run the same command again to resume" in err
    assert len(err.strip().splitlines()) == 1
    blobs = LocalBlobStore(home / "bucket")
    summary_id = next(p.name for p in (home / "bucket" / "summaries").iterdir())
    assert store.load_record(blobs, summary_id).status == "FAILED"
    groups = len(store.load_plan(blobs, summary_id).groups)
    finished = [g for g in range(groups) if blobs.exists(store.map_key(summary_id, g))]
    assert len(finished) == 2
    # When the same command runs again
    shaped = ClaudeShaped()
    with fake_claude(monkeypatch, shaped):
        code, result, _ = summarize(capsys, "policy")
    # Then only the unfinished groups were mapped, and the result counts every group's map call
    assert code == 0 and result is not None and result["summary_id"] == summary_id
    assert shaped.kinds.count("map") == groups - len(finished)
    assert result["map_calls"] == groups
    assert store.load_record(blobs, summary_id).attempts == 2


THINK = {"type": "thinking", "thinking": "", "signature": "sig-1"}


def _no_tool_first(misses: int):
    """A responder: the first map call of section 1 answers in text (after thinking) ``misses`` times,
    then like the baseline; a re-ask is answered from its first message, as a fresh map call would be."""
    shaped = ClaudeShaped()
    state = {"missed": 0}

    def responder(body: dict[str, Any]) -> Any:
        text = body["messages"][0]["content"]
        if "TASK (map):" in text and "section: 1 |" in text and state["missed"] < misses:
            state["missed"] += 1
            return message_reply([THINK, {"type": "text", "text": "Here is my summary."}], "end_turn")
        if len(body["messages"]) == 3 and "No record_summary call came back" in str(body["messages"][2]["content"]):
            return shaped({**body, "messages": body["messages"][:1]})
        return shaped(body)

    return responder


def test_a_map_answer_without_the_tool_is_re_asked_once(home, monkeypatch, capsys) -> None:
    # Given a model whose first map answer of section 1 is text, not a record_summary call
    add_policy(home, sections=8)
    with fake_claude(monkeypatch, _no_tool_first(1)) as fake:
        # When the policy is summarised
        code, result, _ = summarize(capsys, "policy")
    assert code == 0 and result is not None
    # Then the re-ask carried that turn as received (thinking first, byte-identical) and asked for the tool
    reasks = [r.body for r in _messages(fake) if len(r.body["messages"]) == 3]
    assert len(reasks) == 1
    assistant, ask = reasks[0]["messages"][1], reasks[0]["messages"][2]
    assert assistant["content"] == [THINK, {"type": "text", "text": "Here is my summary."}]
    assert "record_summary" in ask["content"] and ask["role"] == "user"
    # And no request forced the tool, and the group's statements came from the re-ask
    assert all(r.body.get("tool_choice", {"type": "auto"}) == {"type": "auto"} for r in _messages(fake))
    assert any(c["section_id"] == "1" for s in result["statements"] for c in s["citations"])
    assert result["model_calls"] == len(_messages(fake))


def test_a_second_map_answer_without_the_tool_gives_a_partial_summary_naming_the_group(home, monkeypatch,
                                                                                       capsys) -> None:
    # Given a model that answers section 1's map call in text twice (the call and its re-ask)
    add_policy(home, sections=8)
    with fake_claude(monkeypatch, _no_tool_first(2)):
        # When the policy is summarised
        code, result, err = summarize(capsys, "policy")
    # Then the summary is partial, never silently whole: the group is named by section and page, with the error
    assert code == 0 and result is not None, err
    assert result["partial"] is True
    missing = result["coverage"]["groups_not_used"]
    assert [g["sections"][0] for g in missing] == ["1"] and missing[0]["page_start"] == 1
    assert "ModelAnswerMissing" in missing[0]["reason"] and "record_summary" in missing[0]["reason"]
    assert "1" in result["coverage"]["sections_not_summarised"] and 1 in result["coverage"]["pages_not_summarised"]
    assert result["coverage"]["groups_used"] == result["coverage"]["groups"] - 1
    assert all(c["section_id"] != "1" for s in result["statements"] for c in s["citations"])
    assert "partial summary" in err
