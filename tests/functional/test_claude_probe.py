"""Issue 12's SDK-level failures, through the real ``anthropic`` SDK and the loopback fake.

4. a tool call longer than ``max_tokens`` gets more room (escalation), and the bounds agree;
5. the prompt cache is read from the second call on (the fake computes cache reads from the
   request's ``cache_control`` breakpoints), reported per run and as a metric;
7. a refusal is recorded per clause type with its category, the rest go on in fresh sessions;
8. with too little time left for a call, the session checkpoints instead of calling.

The handlers run in-process on moto (``aws_stack``); see :mod:`tests.functional.test_claude_loop`.
"""

from __future__ import annotations

import json
import math
import time
from typing import Any

import pytest

from longdoc import wiring
from longdoc.adapters.baseline import OfflineBaselineModel
from longdoc.extract.catalogue import load_catalogue
from longdoc.extract.prompt import parse_prompt, prompt_text
from longdoc.extract.runs import run_result, start_run
from longdoc.extract.session import SessionOptions, run_session
from longdoc.local.engine import LocalContext
from longdoc.local.lambda_runtime import load_handler
from longdoc.observability import metrics
from tests.fakes.anthropic_server import PromptCache, Reply, message_reply, text_block, usage_json
from tests.functional.test_claude_loop import FACTS, MODEL_ID, Scripted, _request, new_run, run_machine

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]


# The `fake` and `claude` fixtures are tests/functional/conftest.py's (shared with test_claude_loop).


def _asked(body: dict[str, Any]) -> list[str]:
    """The clause types a request's task asks for."""
    return [d["name"] for d in parse_prompt(prompt_text(body["messages"][0]["content"]))[2]]


# --------------------------------------------------------------------------- 4. max_tokens escalation


def baseline_api(body: dict[str, Any]) -> Reply:
    """The offline baseline answering with the request's own max_tokens: a call that does not fit is cut."""
    answer = OfflineBaselineModel(threshold=6.0).create(_request(body))
    return message_reply([b.model_dump() for b in answer.content], answer.stop_reason,
                         usage_json(answer.usage.input_tokens, answer.usage.output_tokens))


def test_a_tool_call_longer_than_max_tokens_is_given_more_room(claude, fake, ingested_contract) -> None:
    # Given a 200-token output cap, and clause types whose calls take up to ~230 tokens each
    fake.responder = baseline_api
    types = ["Governing Law", "Insurance", "Audit Rights", "Anti-Assignment"]
    run = start_run(wiring.state_store(), load_catalogue(), doc_id=ingested_contract.doc_id, clause_types=types,
                    model_name=MODEL_ID, max_tokens=200, top_k=4, facts=dict(FACTS))
    # When the state machine runs
    result = run_machine(run)
    # Then it succeeds: a cut call was asked again with twice the room, and the room was kept
    assert result.status == "SUCCEEDED", result.cause
    caps = [r.body["max_tokens"] for r in fake.requests]
    assert caps[0] == 200 and 400 in caps and caps == sorted(caps)
    cut = [i for i, r in enumerate(fake.requests) if r.body["max_tokens"] == 200]
    assert len(cut) == 1  # not the same request three times over
    final = run_result(wiring.state_store(), run.run_id)
    assert final["max_tokens"] >= 400 and sorted(e["clause_type"] for e in final["extractions"]) == sorted(types)


def test_max_tokens_bounds_are_the_settings_bounds_everywhere() -> None:
    from pydantic import ValidationError

    from longdoc.cli import build_parser
    from longdoc.config import ExtractionSettings
    from longdoc.extract.runs import MAX_TOKENS_BOUNDS, RunRequest

    # Given the settings' bounds for max_tokens
    assert MAX_TOKENS_BOUNDS == (64, 64000)
    parser = build_parser()
    argv = ["extract", "doc", "--clause-types", "Governing Law", "--max-tokens"]
    # Then the CLI refuses 1 and 64001 (it accepted 1 before) and takes 64 and 64000
    for bad in ("1", "63", "64001"):
        with pytest.raises(SystemExit):
            parser.parse_args([*argv, bad])
    assert [parser.parse_args([*argv, ok]).max_tokens for ok in ("64", "64000")] == [64, 64000]
    # And a run request (the API's body, the CLI's request) refuses them too, as the settings do
    for bad in (1, 64001):
        with pytest.raises(ValidationError):
            RunRequest(doc_id="d", clause_types=["Governing Law"], max_tokens=bad)
        with pytest.raises(ValidationError):
            ExtractionSettings(max_tokens=bad)


# --------------------------------------------------------------------------- 5. prompt caching


def two_calls_per_session(session: int, call: int, blocks: list[dict[str, Any]]) -> Reply:
    """Each session answers one clause type per call, two calls, then ends its turn."""
    if call < 2 and blocks:
        return message_reply(blocks[:1], "tool_use")
    return message_reply([text_block("done")], "end_turn")


def test_the_prompt_cache_is_read_from_the_second_call_on(claude, fake, ingested_contract) -> None:
    # Given an API whose usage is computed from the request's cache breakpoints (1,024-token minimum)
    fake.cache = PromptCache(min_tokens=1024)
    fake.responder = Scripted(two_calls_per_session)
    run = new_run(ingested_contract, ["Governing Law", "Insurance", "Audit Rights", "Anti-Assignment"])
    # When the state machine runs two sessions (three calls, then two)
    result = run_machine(run)
    assert result.status == "SUCCEEDED", result.cause
    final = run_result(wiring.state_store(), run.run_id)
    reads = [c["usage"]["cache_read_input_tokens"] for c in final["calls"]]
    # Then the first call writes the cache and every later call reads it (before: prefix ~820 tokens,
    # no breakpoint after the chunks, so nothing was ever read)
    assert len(reads) == 5 and reads[0] == 0 and all(r > 0 for r in reads[1:])
    assert final["calls"][0]["usage"]["cache_creation_input_tokens"] > 0
    # And later calls of a session read the chunk context too, not only the static prefix, and so
    # does the next session's first call: its stable CASE_FACTS and chunks are the same bytes (issue 25)
    static = sum(math.ceil(len(json.dumps({k: v for k, v in b.items() if k != "cache_control"}, sort_keys=True,
                                          ensure_ascii=False)) / 4)
                 for b in [*fake.requests[0].body["tools"], *fake.requests[0].body["system"]])
    assert reads[1] == reads[2] == reads[3] == reads[4] > static
    # And the run reports its cache reads
    assert final["cache"] == {"read_input_tokens": sum(reads), "creation_input_tokens":
                              final["usage"]["cache_creation_input_tokens"], "calls_reading": 4, "calls": 5}
    # And the tools and the system prompt are byte-identical in every request
    assert len({json.dumps(r.body["tools"]) for r in fake.requests}) == 1
    assert len({json.dumps(r.body["system"]) for r in fake.requests}) == 1


def test_cache_reads_are_a_metric(claude, fake, ingested_contract, emf_documents, capsys, monkeypatch) -> None:
    # Given metrics on and the caching fake
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "longdoc")
    metrics.clear_metrics()
    fake.cache = PromptCache(min_tokens=1024)
    fake.responder = Scripted(two_calls_per_session)
    run = new_run(ingested_contract, ["Governing Law", "Insurance", "Audit Rights"])
    event = {"action": "session", "run_id": run.run_id, "doc_id": run.doc_id, "iteration": 0, "max_iterations": 10}
    # When one session runs in the handler
    load_handler("extract").handler(event, LocalContext(function_name="extract", timeout_seconds=900))
    # Then it emits CacheReadInputTokens: the tokens its later calls read from the cache
    docs = [doc["CacheReadInputTokens"] for doc in emf_documents(capsys.readouterr().out)
            if "CacheReadInputTokens" in doc]
    values = [v for doc in docs for v in (doc if isinstance(doc, list) else [doc])]
    assert values and values[-1] > 0, values


# --------------------------------------------------------------------------- 7. refusals per clause type


def refuse_cap_on_liability(session: int, call: int, blocks: list[dict[str, Any]], body: dict[str, Any]) -> Reply:
    """Answers clause types in task order, but refuses ("cyber") on reaching Cap On Liability."""
    for block in blocks:
        if block["input"]["clause_type"] == "Cap On Liability":
            break
        if call == 0:
            return message_reply([block], "tool_use")
    return message_reply([text_block("I can't help with that.")], "refusal",
                         stop_details={"type": "refusal", "category": "cyber", "explanation": None})


def test_a_refusal_fails_only_the_clause_type_it_concerns(claude, fake, ingested_contract) -> None:
    # Given a model that refuses whenever it reaches Cap On Liability
    inner = Scripted(lambda s, c, b: message_reply([], "end_turn"))
    def responder(body: dict[str, Any]) -> Reply:
        inner(body)  # counts sessions and calls
        answer = OfflineBaselineModel(threshold=6.0, search=False).create(_request({**body, "max_tokens": 64000}))
        blocks = [b.model_dump() for b in answer.content if b.type == "tool_use"]
        return refuse_cap_on_liability(inner.session, inner.call, blocks, body)
    fake.responder = responder
    run = new_run(ingested_contract, ["Governing Law", "Cap On Liability", "Insurance"])
    # When the state machine runs
    result = run_machine(run)
    # Then the run fails with ModelRefused naming only Cap On Liability and its category
    assert result.status == "FAILED"
    stored = wiring.state_store().get_run(run.run_id)
    assert stored.error == "ModelRefused" and "Cap On Liability (cyber)" in stored.cause
    # And the other clause types were answered, in fresh sessions, and kept
    final = run_result(wiring.state_store(), run.run_id)
    assert sorted(e["clause_type"] for e in final["extractions"]) == ["Governing Law", "Insurance"]
    assert final["refusals"]["Cap On Liability"]["category"] == "cyber"
    assert final["refusals"]["Cap On Liability"]["final"] is True
    # And the refused clause type was deferred, then asked alone once before it failed
    asked = [_asked(r.body) for r in fake.requests if len(r.body["messages"]) == 1]
    assert asked[0] == ["Governing Law", "Cap On Liability", "Insurance"]
    assert asked[1] == ["Insurance"] and asked[-1] == ["Cap On Liability"] and len(asked) == 3


# --------------------------------------------------------------------------- 8. no call without time for it


def test_with_too_little_time_for_a_call_the_session_checkpoints(claude, fake, ingested_contract) -> None:
    # Given 0.5 s before the call deadline, under the 1 s an attempt needs
    fake.responder = Scripted(two_calls_per_session)
    run = new_run(ingested_contract, ["Governing Law"])
    options = SessionOptions(call_deadline=time.monotonic() + 0.5, search_min_score=0)
    # When a session runs, Then it makes no call and checkpoints, for the next session to retry
    outcome = run_session(wiring.deps(), run.run_id, options)
    assert (outcome.status, outcome.stop_reason, outcome.checkpoint_version) == ("CONTINUE", "time_limit", 1)
    assert fake.requests == []
