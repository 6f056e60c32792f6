"""Bulk extraction through the Message Batches API: the real ``anthropic`` SDK against a loopback
fake of ``/v1/messages/batches`` (:mod:`tests.fakes.batches_server`), answers computed by the
offline baseline from the prompt each request carries, stores on moto (``aws_stack``)."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from longdoc import wiring
from longdoc.adapters.baseline import OfflineBaselineModel
from longdoc.adapters.batches import AnthropicBatches
from longdoc.adapters.bulk_store import SqliteBulkStore
from longdoc.bulk.driver import run_rounds
from longdoc.bulk.plan import BulkLimits, custom_id, events_per_round, split, CUSTOM_ID, HISTORY_EVENT_LIMIT
from longdoc.bulk.requests import model_request
from longdoc.bulk.steps import BulkDeps, create_bulk, harvest, poll, prepare, submit
from longdoc.core.models import DocumentRecord
from longdoc.extract.catalogue import load_catalogue
from longdoc.extract.runs import start_run
from longdoc.extract.prompt import EXTRACT_TOOL, NOT_FOUND_TOOL, SEARCH_TOOL, parse_prompt
from longdoc.extract.session import Deps, SessionOptions, run_session
from tests.fakes.anthropic_server import tool_use_block
from tests.fakes.batches_server import FakeBatches, errored

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

TYPES = ["Governing Law", "Insurance", "Audit Rights", "Anti-Assignment", "Agreement Date", "Expiration Date"]
_ids = itertools.count()


def _answer(params: dict[str, Any]) -> dict[str, Any]:
    response = OfflineBaselineModel().create(model_request(params))
    return {"type": "message", "role": "assistant", "stop_sequence": None, **response.model_dump(
        exclude={"stop_details"})}


@pytest.fixture
def fake():
    with FakeBatches(_answer) as server:
        yield server


def _deps(fake: FakeBatches, tmp_path: Path, **limits: int) -> BulkDeps:
    extract = wiring.deps()
    extract = Deps(state=extract.state, blobs=extract.blobs, embedder=extract.embedder, index=extract.index,
                   model=OfflineBaselineModel(), catalogue=extract.catalogue)
    return BulkDeps(extract=extract, batches=AnthropicBatches("test-key-not-real", base_url=fake.url, max_retries=0),
                    store=SqliteBulkStore(tmp_path / "bulk.sqlite"), limits=BulkLimits(poll_first=0, **limits))


def _bulk(deps: BulkDeps, doc: DocumentRecord, copies: int, max_tokens: int = 4096) -> tuple[str, list[str]]:
    bulk_id = f"bulk{next(_ids)}"
    runs = [start_run(deps.extract.state, load_catalogue(), doc_id=doc.doc_id, clause_types=TYPES,
                      model_name="offline-extractive-baseline-v1", max_tokens=max_tokens, top_k=4,
                      run_id=f"run-{bulk_id}-{i}") for i in range(copies)]
    create_bulk(deps, bulk_id, [(r.run_id, r.doc_id) for r in runs], TYPES)
    return bulk_id, [r.run_id for r in runs]


def _found(deps: BulkDeps, run_id: str) -> list[tuple[str, str, str]]:
    return sorted((e.clause_type, e.status, e.citations[0].quote if e.citations else "")
                  for e in deps.extract.state.list_extractions(run_id))


def test_custom_ids_split_and_poll_arithmetic() -> None:
    # custom_id fits the API's pattern, even for long or odd run ids
    assert custom_id("run-abc", 3).startswith("run-abc-") and custom_id("run-abc", 3).endswith("-r3")
    assert CUSTOM_ID.match(custom_id("run/" + "x" * 80, 12))
    # the split honours the request count and the byte limit
    reqs = [{"custom_id": f"c{i}", "params": {"t": "x" * 100}} for i in range(10)]
    assert [len(b) for b in split(reqs, BulkLimits(max_requests=4))] == [4, 4, 2]
    assert [len(b) for b in split(reqs, BulkLimits(max_bytes=500))] == [3, 3, 3, 1]
    # a 24-hour batch on the default schedule: waits 30+60+120+240 s (4 polls, 450 s), then
    # ceil((86,400 - 450) / 300) = 287 polls at the 300 s cap: 291 polls x 9 events + 17 for the
    # round's Prepare/Submit/Harvest/Choice = 2,636 events, under 1/8 of the 25,000-event history
    limits = BulkLimits()
    assert events_per_round(limits) == 291 * 9 + 17 == 2636 < HISTORY_EVENT_LIMIT // 8


def test_all_four_result_types_shuffled_in_one_batch(aws_stack, ingested_contract, fake, tmp_path) -> None:
    deps = _deps(fake, tmp_path, max_retries=1)
    bulk_id, runs = _bulk(deps, ingested_contract, 4)
    fake.outcomes = {custom_id(runs[1], 0): errored("invalid_request_error", "prompt is too long"),
                     custom_id(runs[2], 0): {"type": "canceled"}, custom_id(runs[3], 0): {"type": "expired"},
                     custom_id(runs[3], 1): {"type": "expired"}}
    out = run_rounds(deps, bulk_id, sleep=lambda s: None)
    state = deps.extract.state
    assert state.get_run(runs[0]).status == "SUCCEEDED"
    bad = state.get_run(runs[1])
    assert bad.status == "FAILED" and "prompt is too long" in (bad.cause or "")
    assert state.get_run(runs[2]).status == "SUCCEEDED"  # canceled: resent next round
    # expired twice with max_retries=1: fails naming the reason
    assert state.get_run(runs[3]).status == "FAILED" and "expired" in (state.get_run(runs[3]).cause or "")
    assert out["done"] == 2 and out["failed"] == 2 and out["pending"] == 0
    # the resent request named the earlier failure in its message
    resent = [r for b in fake.batches.values() for r in b["requests"] if r["custom_id"] == custom_id(runs[2], 1)]
    assert "canceled" in str(resent[0]["params"]["messages"][0]["content"])


def test_three_rounds_end_with_the_sync_extractions(aws_stack, ingested_contract, fake, tmp_path) -> None:
    deps = _deps(fake, tmp_path)
    bulk_id, runs = _bulk(deps, ingested_contract, 1, max_tokens=64)
    out = run_rounds(deps, bulk_id, sleep=lambda s: None)
    assert out["done"] == 1 and out["rounds"] >= 3
    sync = start_run(deps.extract.state, load_catalogue(), doc_id=ingested_contract.doc_id, clause_types=TYPES,
                     model_name="offline-extractive-baseline-v1", max_tokens=64, top_k=4, run_id="run-sync")
    while run_session(deps.extract, sync.run_id).status != "DONE":
        pass
    assert _found(deps, runs[0]) == _found(deps, sync.run_id) and _found(deps, runs[0])


def test_404_after_create_retried_and_submit_retry_creates_no_second_batch(aws_stack, ingested_contract, fake,
                                                                          tmp_path) -> None:
    deps = _deps(fake, tmp_path, max_requests=1)
    bulk_id, runs = _bulk(deps, ingested_contract, 2)
    assert prepare(deps, bulk_id, 0)["batches"] == 2  # split by request count
    assert submit(deps, bulk_id, 0) == {"submitted": 2}
    assert submit(deps, bulk_id, 0) == {"submitted": 0} and fake.created() == 2  # a retried Submit
    fake.not_found_after_create = 0
    for b in fake.batches.values():
        b["hidden"] = 1  # the next retrieve of each batch 404s
    state = poll(deps, bulk_id, 0, 0)
    assert state["ended"] is False and state["not_found"] == 2
    assert poll(deps, bulk_id, 0, state["polls"], state["not_found"])["ended"] is True


def test_killed_harvest_rerun_loses_and_duplicates_nothing(aws_stack, ingested_contract, fake, tmp_path,
                                                           monkeypatch) -> None:
    deps = _deps(fake, tmp_path)
    bulk_id, runs = _bulk(deps, ingested_contract, 3)
    prepare(deps, bulk_id, 0)
    submit(deps, bulk_id, 0)
    assert poll(deps, bulk_id, 0, 0)["ended"]
    import longdoc.bulk.steps as steps

    real, calls = steps._harvest_one, []

    def dies_on_second(*args: Any) -> bool:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt("killed")
        return real(*args)

    monkeypatch.setattr(steps, "_harvest_one", dies_on_second)
    with pytest.raises(KeyboardInterrupt):
        harvest(deps, bulk_id, 0)
    monkeypatch.setattr(steps, "_harvest_one", real)
    harvest(deps, bulk_id, 0)
    before = {r: _found(deps, r) for r in runs}
    for r in runs:
        assert deps.extract.state.load_checkpoint(r).version == 1  # each applied exactly once
    out = run_rounds(deps, bulk_id, sleep=lambda s: None)
    assert out["done"] == 3
    assert all(before[r] and set(before[r]) <= set(_found(deps, r)) for r in runs)  # nothing lost
    assert len({tuple(_found(deps, r)) for r in runs}) == 1  # all three copies ended alike


# --------------------------------------------------------------------------- issue 20: the registry in batches

ROFR = "Rofr/Rofo/Rofn"
ROFR_QUERY = "right of first refusal; right of first offer"


def _message(content: list[dict[str, Any]], stop: str = "tool_use") -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "stop_sequence": None, "id": f"msg_{next(_ids)}",
            "model": "offline-extractive-baseline-v1", "content": content, "stop_reason": stop,
            "usage": {"input_tokens": 100, "output_tokens": 20}}


def _texts(params: dict[str, Any]) -> str:
    content = params["messages"][0]["content"]
    return content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)


def _searched(params: dict[str, Any]) -> list[dict[str, Any]]:
    return parse_prompt(_texts(params))[0].get("searched", [])


def _results(params: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``tool_result`` blocks of a request's conversation (what the harness answered in earlier rounds)."""
    return [b for m in params["messages"][1:] if isinstance(m["content"], list) for b in m["content"]
            if b.get("type") == "tool_result"]


def _searched_in_conversation(params: dict[str, Any]) -> bool:
    """Whether a ``search_chunks`` call of the conversation got a non-error answer."""
    calls = {b["id"] for m in params["messages"][1:] if isinstance(m["content"], list) for b in m["content"]
             if b.get("type") == "tool_use" and b.get("name") == SEARCH_TOOL}
    return any(r["tool_use_id"] in calls and not r.get("is_error") for r in _results(params))


def _gives_up_until_told(params: dict[str, Any]) -> dict[str, Any]:
    """A model that records ROFR not_found without looking; told (by the harness's tool_result, which
    travels to the next round) to search, it searches; with its search answered, it records
    not_found naming the query."""
    if _searched_in_conversation(params) or any(s["clause_type"] == ROFR for s in _searched(params)):
        return _message([tool_use_block(NOT_FOUND_TOOL, {"clause_type": ROFR, "reason": "searched",
                                                         "queries": [ROFR_QUERY]})])
    if any("rejected: the chunks retrieved" in str(r.get("content")) for r in _results(params)):
        return _message([tool_use_block(SEARCH_TOOL, {"query": ROFR_QUERY, "top_k": 3, "clause_type": ROFR})])
    return _message([tool_use_block(NOT_FOUND_TOOL, {"clause_type": ROFR, "reason": "not there"})])


def _rofr_bulk(deps: BulkDeps, doc: DocumentRecord) -> tuple[str, str]:
    """A bulk job of one run asking only for ROFR; ``(bulk_id, run_id)``."""
    bulk_id = f"bulk{next(_ids)}"
    run = start_run(deps.extract.state, load_catalogue(), doc_id=doc.doc_id, clause_types=[ROFR],
                    model_name="offline-extractive-baseline-v1", max_tokens=1024, top_k=2, run_id=f"run-{bulk_id}")
    create_bulk(deps, bulk_id, [(run.run_id, run.doc_id)], [ROFR])
    return bulk_id, run.run_id


def test_a_not_found_rejected_in_a_round_leads_to_a_search_in_the_next(aws_stack, ingested_contract,
                                                                      tmp_path) -> None:
    # Given a model that gives up without looking, and the evidence rule always asking for a search
    with FakeBatches(_gives_up_until_told) as fake:
        deps = replace(_deps(fake, tmp_path), options=SessionOptions(search_min_score=1.01))
        bulk_id, run_id = _rofr_bulk(deps, ingested_contract)
        # When the bulk job runs its rounds
        out = run_rounds(deps, bulk_id, sleep=lambda s: None)
        requests = [r["params"] for b in fake.batches.values() for r in b["requests"]]
    # Then round 0's not_found is rejected and that tool_result travels in round 1's request
    assert out["done"] == 1 and out["rounds"] == 3 and len(requests) == 3
    assert _results(requests[0]) == []
    [rejected] = _results(requests[1])
    assert rejected["is_error"] and "rejected: the chunks retrieved" in str(rejected["content"])
    # And round 1's search travels in round 2's request: its answer is the search's chunks
    answers = _results(requests[2])
    assert len(answers) == 2 and not answers[1].get("is_error") and answers[1]["tool_use_id"].startswith("toolu_")
    # And the not_found of round 2 is stored with its evidence
    [stored] = deps.extract.state.list_extractions(run_id)
    assert stored.status == "not_found" and stored.evidence is not None and stored.evidence.queries == [ROFR_QUERY]
    # And every round's request carried the same tool registry, search_chunks included
    assert all([t["name"] for t in r["tools"]] == [EXTRACT_TOOL, NOT_FOUND_TOOL, SEARCH_TOOL] for r in requests)
    # And Harvest checked citations against the chunks Prepare showed (kept on the cid item), not a new retrieval
    kept = deps.store.get(f"bulk#{bulk_id}", f"cid#{custom_id(run_id, 0)}")
    assert set(kept["shown"]) == {c[0] for c in parse_prompt(_texts(requests[0]))[1]}
    assert kept["scores"][ROFR] > 0


def test_harvest_runs_no_retrieval_of_its_own(aws_stack, ingested_contract, tmp_path) -> None:
    # Given a round prepared and its batch ended, and the embedder counting its queries
    with FakeBatches(_gives_up_until_told) as fake:
        deps = _deps(fake, tmp_path)
        bulk_id, _ = _rofr_bulk(deps, ingested_contract)
        prepare(deps, bulk_id, 0)
        submit(deps, bulk_id, 0)
        assert poll(deps, bulk_id, 0, 0)["ended"]
        counted = CountingEmbedder(deps.extract.embedder)
        deps = replace(deps, extract=replace(deps.extract, embedder=counted))
        # When the round is harvested (the model gave up: a not_found, no search)
        harvest(deps, bulk_id, 0)
    # Then no query was embedded: the context and scores came from Prepare's cid item
    assert counted.queries == []


class CountingEmbedder:
    """Delegates to an embedder, keeping the texts of its ``embed_query`` calls."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.queries = inner, []

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return self.inner.embed_query(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_model_that_never_searches_is_stopped_by_the_progress_guard(aws_stack, ingested_contract,
                                                                     tmp_path) -> None:
    # Given a model that records not_found without evidence whatever it is told
    def stubborn(params: dict[str, Any]) -> dict[str, Any]:
        return _message([tool_use_block(NOT_FOUND_TOOL, {"clause_type": ROFR, "reason": "not there"})])
    with FakeBatches(stubborn) as fake:
        deps = replace(_deps(fake, tmp_path), options=SessionOptions(search_min_score=1.01))
        bulk_id, run_id = _rofr_bulk(deps, ingested_contract)
        # When the bulk job runs
        out = run_rounds(deps, bulk_id, sleep=lambda s: None)
    # Then the run fails with NoProgress after three rounds rejected alike, well before the round cap
    run = deps.extract.state.get_run(run_id)
    assert out["failed"] == 1 and run.status == "FAILED" and run.error == "NoProgress"
    assert out["rounds"] == 3 < deps.limits.max_rounds
    assert deps.extract.state.list_extractions(run_id) == []
