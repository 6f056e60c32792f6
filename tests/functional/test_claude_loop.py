"""The extraction loop with Claude's wire protocol: the real ``anthropic`` SDK against the loopback fake.

The handlers run in-process under the local Step Functions engine (the real ASL file) with
moto DynamoDB and S3 (``aws_stack``); the model is :class:`ClaudeModel` pointed at
:class:`tests.fakes.anthropic_server.FakeAnthropic`. The fake's answers are computed by
:class:`Scripted`: the offline baseline decides *what* to extract from the prompt it is sent
(so quotes are real text of the CUAD contract), the script decides *how* each reply ends
(stop reason, cut-off tool call, refusal, errors). Every request is recorded, so tests
assert on what each session's prompt contained.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from longdoc.config import function_settings

from longdoc import wiring
from longdoc.adapters.baseline import OfflineBaselineModel
from longdoc.local.lambda_runtime import load_handler
from longdoc.extract.catalogue import load_catalogue
from longdoc.extract.prompt import EXTRACT_TOOL, NOT_FOUND_TOOL, prompt_text
from longdoc.extract.runs import run_result, start_run
from longdoc.extract.session import SessionOptions, run_session
from longdoc.extract.payloads import ExecutionInput
from longdoc.core.errors import CheckpointConflict
from longdoc.local.engine import LocalContext, LocalStepFunctions
from longdoc.core.models import DocumentRecord
from longdoc.core.messages import Message, ModelRequest
from tests.fakes.anthropic_server import FakeAnthropic, Reply, error_reply, message_reply, text_block, usage_json
from tests.functional.conftest import CLAUDE_MODEL_ID

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

REPO = Path(__file__).resolve().parents[2]
ASL = REPO / "statemachine" / "extract.asl.json"
MODEL_ID = CLAUDE_MODEL_ID
FACTS = {"claim_amount": "$247.83", "customer_id": "cust_4711"}
# Sessions run directly: the scripted model never searches (see the ``claude`` fixture)
NO_EVIDENCE_RULE = SessionOptions(search_min_score=0)
TWELVE = ["Governing Law", "Termination For Convenience", "Cap On Liability", "Insurance", "Audit Rights",
          "Warranty Duration", "Anti-Assignment", "Agreement Date", "Expiration Date", "Renewal Term",
          "Notice Period To Terminate Renewal", "License Grant"]


def _request(body: dict[str, Any]) -> ModelRequest:
    return ModelRequest(system=body.get("system", []), tools=body["tools"], max_tokens=body["max_tokens"],
                        messages=[Message(**m) for m in body["messages"]])


class Scripted:
    """Computes each reply: ``plan(session, call, blocks) -> Reply`` given the baseline's tool calls.

    ``session`` counts requests whose conversation has one message (a fresh session),
    ``call`` the calls within it (0-based); ``blocks`` are the baseline's ``tool_use`` blocks
    for the pending clause types, as Messages API JSON.
    """

    def __init__(self, plan: Callable[[int, int, list[dict[str, Any]]], Reply]):
        self.plan = plan
        self.baseline = OfflineBaselineModel(threshold=6.0, search=False)  # lenient: most come back found
        self.session = 0
        self.call = 0
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        with self.lock:
            if len(body["messages"]) == 1:
                self.session += 1
                self.call = 0
            else:
                self.call += 1
            session, call = self.session, self.call
        answer = self.baseline.create(_request({**body, "max_tokens": 64000}))
        blocks = [b.model_dump() for b in answer.content if b.type == "tool_use"]
        return self.plan(session, call, blocks)


def one_per_session(stop_cycle: list[str]) -> Callable[[int, int, list[dict[str, Any]]], Reply]:
    """Each session answers one clause type, then ends the way ``stop_cycle`` says (cycled per session).

    ``max_tokens`` / ``model_context_window_exceeded`` end inside a second, cut-off tool call;
    ``end_turn`` ends silently early; ``pause_turn`` pauses once, then answers on the next call.
    """
    def plan(session: int, call: int, blocks: list[dict[str, Any]]) -> Reply:
        stop = stop_cycle[(session - 1) % len(stop_cycle)]
        if stop == "pause_turn" and call == 0:
            # a paused turn of a thinking model starts with its thinking block (sent back as is)
            return message_reply([{"type": "thinking", "thinking": "", "signature": "sig-pause"},
                                  text_block("Working through the chunks.")], "pause_turn")
        if call > (1 if stop == "pause_turn" else 0):
            return message_reply([text_block("done")], "end_turn")
        content = blocks[:1]
        if stop in ("max_tokens", "model_context_window_exceeded"):
            if len(blocks) > 1:
                # cut inside its first field: no field is complete, so the input fails the tool's
                # schema (a record_not_found cut after its clause_type would be a complete call)
                cut = {**blocks[1], "input": {}}
                content = [*content, cut]
            else:
                stop = "tool_use"  # nothing left to cut off
        if stop == "pause_turn":
            stop = "tool_use"
        return message_reply(content, stop, usage_json(1200, 90, cache_creation_input_tokens=0,
                                                       cache_read_input_tokens=700))
    return plan


# The `fake` and `claude` fixtures are tests/functional/conftest.py's (shared with test_claude_probe).


def new_run(doc: DocumentRecord, clause_types: list[str], top_k: int = 4):
    return start_run(wiring.state_store(), load_catalogue(), doc_id=doc.doc_id, clause_types=clause_types,
                     model_name=MODEL_ID, max_tokens=1024, top_k=top_k, facts=dict(FACTS))


def first_input(run, max_iterations: int, per_execution: int) -> dict[str, Any]:
    """The input of the run's first execution, as :func:`longdoc.extract.runs.start_extraction` builds it."""
    return ExecutionInput.first(run.run_id, run.doc_id, max_iterations=max_iterations,
                                iterations_per_execution=per_execution).model_dump()


def run_machine(run, *, max_iterations: int = 40, per_execution: int = 500, machine: LocalStepFunctions | None = None):
    handler = load_handler("extract").handler
    with (machine or LocalStepFunctions(ASL, {"ExtractFunctionArn": handler})) as sfn:
        return sfn.wait(sfn.start_execution(run.run_id, first_input(run, max_iterations, per_execution)))


def session_prompts(fake: FakeAnthropic) -> list[str]:
    """The user prompt of each fresh session, in order."""
    return [prompt_text(r.body["messages"][0]["content"]) for r in fake.requests if len(r.body["messages"]) == 1]


# --------------------------------------------------------------------------- exact facts over many resumes


def test_ten_resumes_keep_exact_values_byte_identical_in_every_prompt_and_the_result(
    claude, fake, ingested_contract
) -> None:
    # Given twelve clause types and a model that answers one per session, ending each session
    # on max_tokens (cut-off call), a silent early end_turn, a full context window or a pause
    fake.responder = Scripted(one_per_session(["max_tokens", "end_turn", "model_context_window_exceeded",
                                               "pause_turn"]))
    run = new_run(ingested_contract, TWELVE)

    # When the real state machine runs the extraction
    result = run_machine(run)

    # Then it succeeds after twelve sessions, i.e. eleven resumes from checkpoints
    assert result.status == "SUCCEEDED", result.cause
    final = run_result(wiring.state_store(), run.run_id)
    assert final["sessions"] == 12 and final["status"] == "SUCCEEDED"
    prompts = session_prompts(fake)
    assert len(prompts) == 12
    # And every session's prompt starts with CASE_FACTS holding the exact values, byte for byte
    for prompt in prompts:
        assert re.match(r"<CASE_FACTS-[0-9a-f]{12}>\n", prompt)
        block = prompt[: prompt.index("</CASE_FACTS-")].encode("utf-8")
        assert b'"claim_amount": "$247.83"' in block and b'"customer_id": "cust_4711"' in block
    # And the final result carries them unchanged
    assert final["case_facts"]["exact_values"]["claim_amount"] == "$247.83"
    assert final["case_facts"]["exact_values"]["customer_id"] == "cust_4711"
    # And each later session lists fewer pending clause types: nothing is asked twice
    pending = [json.loads(re.search(r"<CASE_FACTS_PROGRESS-(\w+)>\n(.*?)\n</CASE_FACTS_PROGRESS-\1>", p, re.S).group(2))[
        "pending"] for p in prompts]
    assert [len(p) for p in pending] == list(range(12, 0, -1))
    # And every clause type is resolved exactly once, each found one with a verified citation
    extractions = wiring.state_store().list_extractions(run.run_id)
    assert sorted(e.clause_type for e in extractions) == sorted(TWELVE)
    assert all(e.citations for e in extractions if e.status == "found")
    # And the static prefix is cache-marked in every request: the system block and the last tool only
    for request in fake.requests:
        assert request.body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        assert [("cache_control" in t) for t in request.body["tools"]] == [False, False, True]
        assert all(t["strict"] is True for t in request.body["tools"])
        assert request.body["tool_choice"] == {"type": "auto"}
    # And usage is recorded per call, with a cost estimate from the price table
    assert len(final["calls"]) == len(fake.requests)
    assert final["usage"]["cache_read_input_tokens"] == sum(c["usage"]["cache_read_input_tokens"] for c in final["calls"]) >= 700 * 12
    assert final["cost_usd"] is not None and float(final["cost_usd"]) > 0


def test_cut_off_tool_call_is_never_executed(claude, fake, ingested_contract) -> None:
    # Given a reply that stops on max_tokens inside its second tool call
    fake.responder = Scripted(one_per_session(["max_tokens"]))
    run = new_run(ingested_contract, ["Governing Law", "Insurance"])
    # When one session runs
    outcome = run_session(wiring.deps(), run.run_id, NO_EVIDENCE_RULE)
    # Then only the complete call is stored; the cut-off one is not, and the run continues
    assert (outcome.status, outcome.stop_reason, outcome.pending) == ("CONTINUE", "max_tokens", 1)
    assert [e.clause_type for e in wiring.state_store().list_extractions(run.run_id)] == ["Governing Law"]
    assert len(fake.requests) == 1
    # And the next session gets twice the room for the cut call
    assert outcome.max_tokens == 2048 == wiring.state_store().load_checkpoint(run.run_id).max_tokens


def test_stop_sequence_with_work_left_is_not_done(claude, fake, ingested_contract) -> None:
    # Given a model that answers one clause type, then stops on a stop sequence with one left
    def plan(session: int, call: int, blocks: list[dict[str, Any]]) -> Reply:
        if call == 0:
            return message_reply(blocks[:1], "tool_use")
        return message_reply([text_block("END")], "stop_sequence")
    fake.responder = Scripted(plan)
    run = new_run(ingested_contract, ["Governing Law", "Insurance"])
    # When two sessions run
    first = run_session(wiring.deps(), run.run_id, NO_EVIDENCE_RULE)
    second = run_session(wiring.deps(), run.run_id, NO_EVIDENCE_RULE)
    # Then the first is CONTINUE (stop_sequence is not done while work is left); the fresh
    # second session resolves the rest and the run is DONE
    assert (first.status, first.stop_reason, first.pending) == ("CONTINUE", "stop_sequence", 1)
    assert (second.status, second.pending) == ("DONE", 0)
    assert sorted(e.clause_type for e in wiring.state_store().list_extractions(run.run_id)) == [
        "Governing Law", "Insurance"]


# --------------------------------------------------------------------------- refusals, errors, no progress


def test_refusal_fails_the_run_with_the_refusal_recorded(claude, fake, ingested_contract) -> None:
    # Given a model that refuses
    fake.enqueue(message_reply([text_block("I can't help with that.")], "refusal"))
    run = new_run(ingested_contract, ["Governing Law"])
    # When the state machine runs
    result = run_machine(run)
    # Then the execution fails in RecordFailure with ExtractionFailed, and the run says why
    assert (result.status, result.error) == ("FAILED", "ExtractionFailed")
    stored = wiring.state_store().get_run(run.run_id)
    assert stored.status == "FAILED" and stored.error == "ModelRefused"
    assert "I can't help with that." in stored.cause
    assert stored.checkpoint_version == 2  # the refusing session's checkpoint, then the ended-run save


def test_request_error_fails_the_run_with_its_message(claude, fake, ingested_contract) -> None:
    # Given the API rejecting the request (400)
    fake.enqueue(error_reply(400, "tools.0.strict: not supported for this model"))
    run = new_run(ingested_contract, ["Governing Law"])
    # When the state machine runs
    result = run_machine(run)
    # Then the run fails with ModelRequestError and the API's message, without retries of the 400
    assert result.status == "FAILED"
    stored = wiring.state_store().get_run(run.run_id)
    assert stored.error == "ModelRequestError"
    assert "tools.0.strict: not supported for this model" in stored.cause
    assert len(fake.requests) == 1


def test_throttling_is_retried_by_the_sdk_then_the_session_goes_on(claude, fake, ingested_contract) -> None:
    # Given a 429 and a 529 before the API answers
    fake.enqueue(error_reply(429, retry_after_ms=1), error_reply(529, retry_after_ms=1))
    fake.responder = Scripted(lambda s, c, blocks: message_reply(blocks, "tool_use") if c == 0
                              else message_reply([text_block("done")], "end_turn"))
    run = new_run(ingested_contract, ["Governing Law"])
    # When one session runs / Then it finishes after the SDK's own retries
    assert run_session(wiring.deps(), run.run_id, NO_EVIDENCE_RULE).status == "DONE"
    assert len(fake.requests) == 3


def test_sessions_without_progress_fail_with_no_progress(claude, fake, ingested_contract) -> None:
    # Given a model that always ends its turn without calling a tool
    fake.responder = lambda body: message_reply([text_block("I have nothing to add.")], "end_turn")
    run = new_run(ingested_contract, ["Governing Law", "Insurance"])
    # When the state machine runs
    result = run_machine(run)
    # Then the run fails with NoProgress after exactly three sessions, far before the iteration cap
    assert result.status == "FAILED"
    stored = wiring.state_store().get_run(run.run_id)
    assert stored.error == "NoProgress" and "Governing Law" in stored.cause
    assert len(session_prompts(fake)) == 3


# --------------------------------------------------------------------------- citations


def test_a_rejected_citation_goes_back_as_an_error_and_is_corrected(claude, fake, ingested_contract) -> None:
    # Given a model whose first call misquotes the chunk, and whose next call corrects it
    def plan(session: int, call: int, blocks: list[dict[str, Any]]) -> Reply:
        good = blocks[0]
        if call == 0:
            bad = json.loads(json.dumps(good))
            bad["input"]["citations"][0]["quote"] = "governed by the laws of Atlantis"
            bad["input"]["clause_text"] = "governed by the laws of Atlantis"
            return message_reply([bad], "tool_use")
        if call == 1:
            return message_reply([good], "tool_use")
        return message_reply([text_block("done")], "end_turn")
    fake.responder = Scripted(plan)
    run = new_run(ingested_contract, ["Governing Law"])
    # When one session runs
    outcome = run_session(wiring.deps(), run.run_id, NO_EVIDENCE_RULE)
    # Then the second request carries an is_error tool_result saying the quote is not verbatim
    [result_block] = fake.requests[1].body["messages"][2]["content"]
    assert result_block["type"] == "tool_result" and result_block["is_error"] is True
    assert "quote not found verbatim" in result_block["content"]
    # And the corrected call is stored, the rejection counted
    assert outcome.status == "DONE" and outcome.rejected_citations == 1
    [stored] = wiring.state_store().list_extractions(run.run_id)
    assert "Atlantis" not in stored.citations[0].quote
    assert run_result(wiring.state_store(), run.run_id)["rejected_citations"] == 1


def test_clause_text_unsupported_by_its_quote_is_rejected(claude, fake, ingested_contract) -> None:
    # Given a verbatim quote but a clause_text with an amount the quote does not state
    def plan(session: int, call: int, blocks: list[dict[str, Any]]) -> Reply:
        if call == 0:
            bad = json.loads(json.dumps(blocks[0]))
            bad["input"]["clause_text"] = bad["input"]["clause_text"] + " capped at $999,999"
            return message_reply([bad], "tool_use")
        return message_reply([text_block("stopping")], "end_turn")
    fake.responder = Scripted(plan)
    run = new_run(ingested_contract, ["Governing Law"])
    # When one session runs
    outcome = run_session(wiring.deps(), run.run_id, NO_EVIDENCE_RULE)
    # Then nothing is stored and the model is told which value lacks support
    assert wiring.state_store().list_extractions(run.run_id) == []
    assert outcome.status == "CONTINUE" and outcome.rejected_citations == 1
    feedback = fake.requests[1].body["messages"][2]["content"][0]
    assert feedback["is_error"] is True and "999,999" in feedback["content"]


# --------------------------------------------------------------------------- several instances


def test_several_instances_page_through_retrieval_until_the_model_says_no_more(claude, fake, ingested_contract) -> None:
    # Given a model that records one instance, asks for more, records a second one from the
    # next page of chunks, then says there is no further instance
    def plan(session: int, call: int, blocks: list[dict[str, Any]]) -> Reply:
        if call == 0:
            first = blocks[0]
            return message_reply([{**first, "input": {**first["input"], "more_instances": True}}], "tool_use")
        if call == 1:
            page = fake.requests[-1].body["messages"][-1]["content"][0]["content"]
            chunk_id, text = re.search(r'<chunk-\w+ id="([^"]+)"[^>]*>\n(.*?)\n</chunk-\w+>', page, re.S).groups()
            sentence = next(s.strip() for s in re.split(r"(?<=[.;])\s+", text) if len(s.strip()) > 40)
            second = {"type": "tool_use", "id": "toolu_second", "name": EXTRACT_TOOL,
                      "input": {"clause_type": "Governing Law", "clause_text": sentence, "more_instances": True,
                                "citations": [{"chunk_id": chunk_id, "page": None, "quote": sentence}]}}
            return message_reply([second], "tool_use")
        if call == 2:
            return message_reply([{"type": "tool_use", "id": "toolu_close", "name": NOT_FOUND_TOOL,
                                   "input": {"clause_type": "Governing Law"}}], "tool_use")
        return message_reply([text_block("done")], "end_turn")
    fake.responder = Scripted(plan)
    run = new_run(ingested_contract, ["Governing Law"], top_k=2)
    # When one session runs
    outcome = run_session(wiring.deps(), run.run_id, NO_EVIDENCE_RULE)
    # Then two instances are stored under distinct keys, the last one closing the clause type
    stored = wiring.state_store().list_extractions(run.run_id)
    assert outcome.status == "DONE" and len(stored) == 2
    assert len({e.key for e in stored}) == 2 and [e.final for e in stored] == [False, True]
    facts = wiring.state_store().load_checkpoint(run.run_id).case_facts
    assert facts.retrieval_pages == {"Governing Law": 2}
    assert len(facts.resolved["Governing Law"].instances) == 2 and facts.extracted_count == 2
    # And the harness answered the request for more with the next page of chunks
    assert "next retrieved chunks for Governing Law" in fake.requests[1].body["messages"][2]["content"][0]["content"]


# --------------------------------------------------------------------------- time, races, redrive, continue-as-new


def test_remaining_time_margin_checkpoints_and_continues(claude, fake, ingested_contract, monkeypatch) -> None:
    # Given a Lambda with 24 s left, a 16 s margin (no new call after 8 s; a call under way may run
    # to 16 s), and a model that takes 9 s per reply: the first reply ends past the deadline whatever
    # the set-up costs on a loaded machine (up to 7 s), and before the call's own limit
    monkeypatch.setenv("LONGDOC_TIME_MARGIN_SECONDS", "16")
    function_settings.cache_clear()
    def plan(session: int, call: int, blocks: list[dict[str, Any]]) -> Reply:
        reply = message_reply(blocks[:1], "tool_use")
        return Reply(status=reply.status, body=reply.body, delay=9.0)
    fake.responder = Scripted(plan)
    run = new_run(ingested_contract, ["Governing Law", "Insurance"])
    event = {"action": "session", "run_id": run.run_id, "doc_id": run.doc_id, "iteration": 0, "max_iterations": 10}
    # When the handler runs
    out = load_handler("extract").handler(event, LocalContext(function_name="extract", timeout_seconds=24))
    # Then it stops before the next model call, with its progress checkpointed
    assert (out["status"], out["stop_reason"], out["pending"]) == ("CONTINUE", "time_limit", 1)
    assert len(fake.requests) == 1
    assert wiring.state_store().load_checkpoint(run.run_id).version == 1


def test_two_racing_invocations_exactly_one_checkpoint_wins(claude, fake, ingested_contract) -> None:
    # Given two invocations of the same session input, each getting a slow reply
    def plan(session: int, call: int, blocks: list[dict[str, Any]]) -> Reply:
        reply = message_reply(blocks[:1], "end_turn")
        return Reply(status=reply.status, body=reply.body, delay=0.5)
    fake.responder = Scripted(plan)
    run = new_run(ingested_contract, ["Governing Law", "Insurance"])
    deps = wiring.deps()
    outcomes: list[Any] = []
    def invoke() -> None:
        try:
            outcomes.append(run_session(deps, run.run_id, NO_EVIDENCE_RULE))
        except CheckpointConflict as exc:
            outcomes.append(exc)
    # When they run at the same time
    threads = [threading.Thread(target=invoke) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Then one saves checkpoint 1 and the other loses with CheckpointConflict
    assert sorted(type(o).__name__ for o in outcomes) == ["CheckpointConflict", "SessionOutcome"]
    assert wiring.state_store().load_checkpoint(run.run_id).version == 1
    # And the extraction both wrote is stored once
    assert [e.clause_type for e in wiring.state_store().list_extractions(run.run_id)] == ["Governing Law"]


def test_failed_run_is_redriven_and_finishes_from_its_checkpoint(claude, fake, ingested_contract) -> None:
    # Given a run whose second session hits a 400 from the API
    answers = Scripted(one_per_session(["max_tokens"]))
    broken = {"on": True}
    def responder(body: dict[str, Any]) -> Reply:
        if len(body["messages"]) == 1 and answers.session == 1 and broken["on"]:
            return error_reply(400, "scripted outage")
        return answers(body)
    fake.responder = responder
    run = new_run(ingested_contract, ["Governing Law", "Insurance", "Audit Rights"])
    handler = load_handler("extract").handler
    with LocalStepFunctions(ASL, {"ExtractFunctionArn": handler}) as sfn:
        first = sfn.wait(sfn.start_execution(run.run_id, first_input(run, 40, 500)))
        assert (first.status, first.error) == ("FAILED", "ExtractionFailed")
        failed = wiring.state_store().get_run(run.run_id)
        assert failed.status == "FAILED" and failed.error == "ModelRequestError"
        done_before = len(wiring.state_store().list_extractions(run.run_id))
        assert done_before == 1
        # When the cause is fixed and the execution is redriven
        broken["on"] = False
        second = sfn.wait(sfn.redrive(first.execution_arn))
    # Then the run resumes from its checkpoint and finishes, nothing repeated
    assert second.status == "SUCCEEDED", second.cause
    final = run_result(wiring.state_store(), run.run_id)
    assert final["status"] == "SUCCEEDED" and final["error"] is None
    assert sorted(e["clause_type"] for e in final["extractions"]) == ["Audit Rights", "Governing Law", "Insurance"]
    assert final["sessions"] == 3
    entered = [e["stateEnteredEventDetails"]["name"] for e in second.history if e["type"].endswith("StateEntered")]
    assert entered[0] == "RecordFailure" and entered[1] == "Extract"
    # And the checkpoint no longer expires (the run is live again until it ends, then expires)
    assert wiring.state_store().load_checkpoint(run.run_id).expires_at is not None


def test_continue_as_new_links_executions_of_one_run(claude, fake, ingested_contract) -> None:
    # Given five clause types answered one per session, and at most two sessions per execution
    fake.responder = Scripted(one_per_session(["max_tokens"]))
    run = new_run(ingested_contract, TWELVE[:5])
    # When the state machine runs
    result = run_machine(run, per_execution=2)
    # Then three executions ran in a chain: the run id, then -g2 and -g3, the last one succeeding
    assert result.status == "SUCCEEDED", result.cause
    names = [arn.rsplit(":", 1)[1] for arn in result.executions]
    assert names == [run.run_id, f"{run.run_id}-g2", f"{run.run_id}-g3"]
    # And the run records every execution that worked on it, and finished after five sessions
    stored = wiring.state_store().get_run(run.run_id)
    assert stored.executions == names and stored.status == "SUCCEEDED"
    assert run_result(wiring.state_store(), run.run_id)["sessions"] == 5
    # And each execution's history stays short
    assert all(e["type"] != "ExecutionFailed" for e in result.history)
