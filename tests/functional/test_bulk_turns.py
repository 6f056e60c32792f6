"""Tool results travel from one bulk round to the next: the real ``anthropic`` SDK against the loopback
Message Batches fake, a model that gets one quote wrong in its first turn and corrects it only when
the harness's ``tool_result`` ("quote not found verbatim") reaches it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from longdoc import wiring
from longdoc.adapters.baseline import OfflineBaselineModel
from longdoc.adapters.batches import AnthropicBatches
from longdoc.adapters.bulk_store import SqliteBulkStore
from longdoc.bulk.driver import run_rounds
from longdoc.bulk.plan import BulkLimits, custom_id
from longdoc.bulk.requests import model_request
from longdoc.bulk.steps import BulkDeps, create_bulk
from longdoc.bulk.turns import Continuation, continued_params
from longdoc.core.conversation import conversation_problems
from longdoc.extract.catalogue import load_catalogue
from longdoc.extract.runs import start_run
from longdoc.extract.session import Deps
from tests.fakes.batches_server import FakeBatches

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

TYPES = ["Governing Law", "Insurance", "Audit Rights", "Anti-Assignment"]
WRONG = "Governing Law"


def _told_not_verbatim(params: dict[str, Any]) -> bool:
    """Whether the conversation holds an error ``tool_result`` saying a quote is not verbatim."""
    return any(part.get("type") == "tool_result" and part.get("is_error") and "not found verbatim" in part["content"]
               for m in params["messages"] if isinstance(m["content"], list) for part in m["content"])


def _answer(params: dict[str, Any]) -> dict[str, Any]:
    """The baseline's answer, except that the Governing Law quote gets words the document lacks until
    the model has been told (in a tool_result) that it was not verbatim."""
    response = OfflineBaselineModel().create(model_request(params))
    if not _told_not_verbatim(params):
        for block in response.content:
            if block.type == "tool_use" and block.input.get("clause_type") == WRONG and "citations" in block.input:
                block.input["citations"][0]["quote"] += " as amended from time to time"
    return {"type": "message", "role": "assistant", "stop_sequence": None,
            **response.model_dump(exclude={"stop_details"})}


@pytest.fixture
def fake():
    with FakeBatches(_answer) as server:
        yield server


def _deps(fake: FakeBatches, tmp_path: Path) -> BulkDeps:
    extract = wiring.deps()
    extract = Deps(state=extract.state, blobs=extract.blobs, embedder=extract.embedder, index=extract.index,
                   model=OfflineBaselineModel(), catalogue=extract.catalogue)
    return BulkDeps(extract=extract, batches=AnthropicBatches("test-key-not-real", base_url=fake.url, max_retries=0),
                    store=SqliteBulkStore(tmp_path / "bulk.sqlite"), limits=BulkLimits(poll_first=0))


def _request(fake: FakeBatches, cid: str) -> dict[str, Any]:
    return next(r for b in fake.batches.values() for r in b["requests"] if r["custom_id"] == cid)["params"]


def test_a_quote_rejected_in_round_one_is_corrected_in_round_two_through_the_tool_result(
        aws_stack, ingested_contract, fake, tmp_path) -> None:
    # Given a bulk job of one run whose model misquotes Governing Law in its first turn
    deps = _deps(fake, tmp_path)
    run = start_run(deps.extract.state, load_catalogue(), doc_id=ingested_contract.doc_id, clause_types=TYPES,
                    model_name="offline-extractive-baseline-v1", max_tokens=4096, top_k=4, run_id="run-turns-0")
    create_bulk(deps, "bulk-turns", [(run.run_id, run.doc_id)], TYPES)
    # When the rounds run
    out = run_rounds(deps, "bulk-turns", sleep=lambda s: None)
    # Then the run is done in two rounds
    assert (out["done"], out["failed"], out["rounds"]) == (1, 0, 2)
    first, second = _request(fake, custom_id(run.run_id, 0)), _request(fake, custom_id(run.run_id, 1))
    # And the round-2 request is the round-1 request plus the assistant turn and its tool results
    assert second["messages"][0] == first["messages"][0] and len(second["messages"]) == 3
    assistant, results = second["messages"][1], second["messages"][2]
    assert assistant["role"] == "assistant" and {b["input"]["clause_type"] for b in assistant["content"]} == set(TYPES)
    bad = next(b for b in assistant["content"] if b["input"]["clause_type"] == WRONG)
    assert bad["input"]["citations"][0]["quote"].endswith("as amended from time to time")
    rejected = [r for r in results["content"] if r["tool_use_id"] == bad["id"]]
    assert results["role"] == "user" and len(results["content"]) == len(TYPES)
    assert rejected[0]["is_error"] is True and rejected[0]["content"].startswith("rejected: quote not found verbatim")
    # And the corrected quote was verified and stored, the others kept from round 1
    found = {e.clause_type: e for e in deps.extract.state.list_extractions(run.run_id)}
    assert set(found) == set(TYPES)
    quote = found[WRONG].citations[0].quote
    assert found[WRONG].status == "found" and "as amended from time to time" not in quote
    assert quote in bad["input"]["citations"][0]["quote"]
    checkpoint = deps.extract.state.load_checkpoint(run.run_id)
    assert checkpoint.rejected_citations == 1 and checkpoint.sessions == 2


def test_a_retried_continuation_names_the_failure_after_the_tool_results() -> None:
    # Given a conversation going on (its last message the tool results) whose request expired
    params = {"model": "m", "max_tokens": 64, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "chunks"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "rejected"}]}]}
    carried = Continuation(version=3, turns=1, params=params)
    # When the next request is built with the note and a grown output cap
    out = continued_params(carried, 128, "expired")
    # Then the note follows the tool results, the first message (the cached context) is unchanged
    assert out["max_tokens"] == 128 and out["messages"][0] == params["messages"][0]
    assert out["messages"][2]["content"][-1] == {"type": "text", "text": "Note: the previous request failed (expired)."}
    assert len(params["messages"][2]["content"]) == 1  # the carried params are not modified


THINK = {"type": "thinking", "thinking": "", "signature": "sig-round"}


def _thinking_answer(params: dict[str, Any]) -> dict[str, Any]:
    """:func:`_answer` with a thinking block first, as a current model with adaptive thinking replies."""
    answer = _answer(params)
    return {**answer, "content": [THINK, *answer["content"]]}


def test_thinking_blocks_travel_unchanged_from_one_round_to_the_next(aws_stack, ingested_contract, tmp_path) -> None:
    # Given a bulk job whose model thinks before its calls and misquotes Governing Law in round one
    with FakeBatches(_thinking_answer) as server:
        deps = _deps(server, tmp_path)
        run = start_run(deps.extract.state, load_catalogue(), doc_id=ingested_contract.doc_id, clause_types=TYPES,
                        model_name="offline-extractive-baseline-v1", max_tokens=4096, top_k=4, run_id="run-think-0")
        create_bulk(deps, "bulk-think", [(run.run_id, run.doc_id)], TYPES)
        # When the rounds run
        out = run_rounds(deps, "bulk-think", sleep=lambda s: None)
        second = _request(server, custom_id(run.run_id, 1))
    # Then the round-2 request's assistant turn opens with the round-1 thinking block, byte-identical
    assert (out["done"], out["failed"], out["rounds"]) == (1, 0, 2)
    assistant, results = second["messages"][1], second["messages"][2]
    assert assistant["role"] == "assistant" and assistant["content"][0] == THINK
    assert [b["type"] for b in assistant["content"]] == ["thinking"] + ["tool_use"] * len(TYPES)
    # And every call of that turn is answered first in the next user turn
    assert [r["tool_use_id"] for r in results["content"]] == [b["id"] for b in assistant["content"][1:]]
    assert conversation_problems(second["messages"]) == []
