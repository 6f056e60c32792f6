"""Every job that calls Claude, end to end, against the strict fakes, for every row of the capability table.

The strict fakes (:mod:`tests.fakes.strict_claude`, ``StrictBatches``, ``StrictBedrock``) refuse
what the documented contract refuses, for the row's model (:mod:`tests.fakes.claude_contract`),
and answer with thinking blocks and usage as the model would; a brain
(:mod:`tests.contract.support`) plays Claude from the prompt. Each test asserts that the job
succeeded *and* that the fake refused nothing: ``fake.rejected`` is empty.

Jobs: extraction with ``search_chunks`` (one session, the real harness), bulk rounds through
Message Batches, summaries (map, reduce, streamed final; the CLI), triage, and a multi-session
run whose prompt cache must be read. Anthropic rows run against the strict Messages fake (bulk:
the strict Batches fake), Bedrock rows against the strict Bedrock fake: extraction and triage on
every row, summaries on the rows of the Messages-API endpoint (the SDK's mantle client finds the
fake through ``ANTHROPIC_BEDROCK_MANTLE_BASE_URL``; InvokeModel's event-stream encoding is not
faked, so Haiku 4.5's streamed final is not run). Bulk is Anthropic-only (Message Batches).

Tests marked :data:`tests.contract.support.pending` need issue 25's product changes (H1, H2);
flip :data:`~tests.contract.support.AWAITING_ISSUE_25` once they are merged. What fails before
them: Bedrock extraction calls InvokeModel for rows whose endpoint is the Messages API (H1);
summaries and triage force ``tool_choice`` (H2); the lenient re-check finds the same. Extraction
and bulk rounds on the Anthropic rows already keep the contract (thinking blocks are kept whole
since the capability-table commit) and run unmarked.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from longdoc import wiring
from longdoc.adapters.batches import AnthropicBatches
from longdoc.adapters.bulk_store import SqliteBulkStore
from longdoc.adapters.claude import ClaudeModel
from longdoc.bulk.driver import run_rounds
from longdoc.bulk.plan import BulkLimits
from longdoc.bulk.steps import BulkDeps, create_bulk
from longdoc.cli import main
from longdoc.config import function_settings
from longdoc.core.models_catalogue import DEFAULT_MODELS, ModelSpec, rows
from longdoc.extract.catalogue import load_catalogue
from longdoc.extract.runs import start_run
from longdoc.extract.session import Deps, run_session
from longdoc.triage.service import TriageDeps, TriageRequest, run_triage
from tests.contract.support import ExtractBrain, _request, follow_up, pending, triage_brain
from tests.fakes.anthropic_server import FakeAnthropic, enable_streaming, text_block
from tests.fakes.batches_server import StrictBatches
from tests.fakes.bedrock_server import MESSAGES_PATHS, StrictBedrock
from tests.fakes.claude_contract import check_request
from tests.fakes.strict_claude import StrictClaude
from tests.functional.summary_support import ClaudeShaped, add_policy, claude_home
from tests.functional.test_triage_claude import CLAIM
from tests.unit.triage_set import load_policy_set

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

TYPES = ["Governing Law", "Insurance"]
FACTS = {"claim_amount": "$247.83", "customer_id": "cust_4711"}
ANTHROPIC = rows("anthropic")
BEDROCK = rows("bedrock")
_ids = itertools.count()


def row_id(row: ModelSpec) -> str:
    return row.id


def refusals(*fakes: Any) -> list[str]:
    """What the strict fakes refused, one line each (empty when the product kept every rule)."""
    return [f"{r.surface}: {r.error.status} {r.error.message}" for fake in fakes for r in fake.rejected]


def _extract_env(monkeypatch: pytest.MonkeyPatch, model: ClaudeModel) -> None:
    monkeypatch.setattr(wiring, "model", lambda: model)
    monkeypatch.setenv("LONGDOC_STRICT_TOOLS", "true")
    monkeypatch.setenv("LONGDOC_SEARCH_MIN_SCORE", "0")  # the brain's one search carries no clause type
    function_settings.cache_clear()


def _extract_session(doc: Any, model_id: str) -> tuple[Any, list[Any]]:
    run = start_run(wiring.state_store(), load_catalogue(), doc_id=doc.doc_id, clause_types=TYPES,
                    model_name=model_id, max_tokens=4096, top_k=4, facts=dict(FACTS))
    outcome = run_session(wiring.deps(), run.run_id)
    return outcome, wiring.state_store().list_extractions(run.run_id)


# --------------------------------------------------------------------------- extraction (search_chunks)


@pytest.mark.parametrize("row", ANTHROPIC, ids=row_id)
def test_extraction_with_search_keeps_the_contract_on_the_anthropic_api(aws_stack, ingested_contract, monkeypatch,
                                                                         row: ModelSpec) -> None:
    # Given the strict Messages fake for this row, and a brain that searches once then extracts
    brain = ExtractBrain()
    with StrictClaude(brain) as fake:
        _extract_env(monkeypatch, ClaudeModel("test-key-not-real", row.id, base_url=fake.base_url, max_retries=0))
        # When one extraction session runs
        outcome, stored = _extract_session(ingested_contract, row.id)
    # Then the fake refused nothing, and the session resolved every clause type after one search
    assert refusals(fake) == []
    assert outcome.status == "DONE" and brain.searches == 1 and outcome.search_calls >= 1
    assert sorted(e.clause_type for e in stored) == sorted(TYPES)


@pending
@pytest.mark.parametrize("row", BEDROCK, ids=row_id)
def test_extraction_with_search_keeps_the_contract_on_bedrock(aws_stack, ingested_contract, monkeypatch,
                                                               fresh_aws_session, row: ModelSpec) -> None:
    # Given the strict Bedrock fake for this row
    brain = ExtractBrain()
    with StrictBedrock(brain) as fake:
        _extract_env(monkeypatch, ClaudeModel(None, row.id, provider="bedrock", base_url=fake.base_url, max_retries=0))
        outcome, stored = _extract_session(ingested_contract, row.id)
    # Then nothing was refused, the job succeeded, and the row's endpoint was the one called
    assert refusals(fake) == [] and fake.bad_signatures == 0
    assert outcome.status == "DONE" and sorted(e.clause_type for e in stored) == sorted(TYPES)
    expected = MESSAGES_PATHS if row.endpoint == "messages" else tuple(f"/model/{p}/invoke" for p in row.ids())
    assert fake.paths and all(p in expected for p in fake.paths), fake.paths


# --------------------------------------------------------------------------- bulk rounds (Message Batches)


@pytest.mark.parametrize("row", ANTHROPIC, ids=row_id)
def test_bulk_rounds_keep_the_contract_in_every_batch_request(aws_stack, ingested_contract, tmp_path,
                                                              monkeypatch, row: ModelSpec) -> None:
    # Given the strict Batches fake (its own cache) and a strict Messages fake for any synchronous call
    brain = ExtractBrain()
    with StrictBatches(brain.batch_answer, polls_to_end=1) as batches, StrictClaude(brain) as messages:
        model = ClaudeModel("test-key-not-real", row.id, base_url=messages.base_url, max_retries=0)
        _extract_env(monkeypatch, model)
        base = wiring.deps()
        deps = BulkDeps(extract=Deps(state=base.state, blobs=base.blobs, embedder=base.embedder, index=base.index,
                                     model=model, catalogue=base.catalogue),
                        batches=AnthropicBatches("test-key-not-real", base_url=batches.url, max_retries=0),
                        store=SqliteBulkStore(tmp_path / "bulk.sqlite"), limits=BulkLimits(poll_first=0))
        bulk_id = f"bulk{next(_ids)}"
        runs = [start_run(base.state, load_catalogue(), doc_id=ingested_contract.doc_id, clause_types=TYPES,
                          model_name=row.id, max_tokens=4096, top_k=4, run_id=f"run-{bulk_id}-{i}")
                for i in range(2)]
        create_bulk(deps, bulk_id, [(r.run_id, r.doc_id) for r in runs], TYPES)
        # When the rounds run to the end (search, answers, end of turn: several rounds)
        out = run_rounds(deps, bulk_id, sleep=lambda s: None)
    # Then no request of any round was refused, and both runs succeeded
    assert refusals(batches, messages) == []
    assert out["done"] == 2 and out["failed"] == 0 and out["rounds"] >= 2
    assert all(base.state.get_run(r.run_id).status == "SUCCEEDED" for r in runs)


# --------------------------------------------------------------------------- summaries (map, reduce, streamed final)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A local LONGDOC_HOME with Claude chosen (a fake key); sizes small enough to map and reduce."""
    yield claude_home(tmp_path, monkeypatch, summary_reduce_input_tokens="500")
    wiring.reset()


def _summarize(home: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any, model_id: str,
               fake: FakeAnthropic) -> tuple[int, dict[str, Any] | None]:
    add_policy(home, sections=8)
    monkeypatch.setenv("LONGDOC_CLAUDE_MODEL", model_id)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    wiring.reset()
    code = main(["summarize", "policy", "--json"])
    out, _ = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None)


@pending
@pytest.mark.parametrize("row", ANTHROPIC, ids=row_id)
def test_summaries_keep_the_contract_in_map_reduce_and_the_streamed_final(home, monkeypatch, capsys,
                                                                          row: ModelSpec) -> None:
    # Given the strict Messages fake (streaming on) and a brain that summarises from the prompt
    shaped = ClaudeShaped()
    with enable_streaming(StrictClaude(shaped)) as fake:
        # When an eight-section policy is summarised (map, reduce, streamed final)
        code, result = _summarize(home, monkeypatch, capsys, row.id, fake)
    # Then nothing was refused and the summary came out of all three stages, the final streamed
    assert refusals(fake) == []
    assert code == 0 and result is not None and result["text"].strip()
    assert {"map", "reduce", "final"} <= set(shaped.kinds)
    assert any(r.body.get("stream") for r in fake.requests)


# --------------------------------------------------------------------------- triage


def _triage(tmp_path: Path, model: ClaudeModel) -> dict[str, Any]:
    blobs, state = load_policy_set(tmp_path / "set")
    return run_triage(TriageRequest(collection="dev-policy-set", claim=CLAIM), TriageDeps(state, blobs, model=model))


@pending
@pytest.mark.parametrize("row", ANTHROPIC, ids=row_id)
def test_triage_keeps_the_contract_on_the_anthropic_api(tmp_path, row: ModelSpec) -> None:
    with StrictClaude(triage_brain) as fake:
        result = _triage(tmp_path, ClaudeModel("test-key-not-real", row.id, base_url=fake.base_url, max_retries=0))
    assert refusals(fake) == []
    assert (result["decision"], result["verified"]) == ("refer", True)


@pending
@pytest.mark.parametrize("row", BEDROCK, ids=row_id)
def test_triage_keeps_the_contract_on_bedrock(tmp_path, fresh_aws_session, row: ModelSpec) -> None:
    with StrictBedrock(triage_brain) as fake:
        result = _triage(tmp_path, ClaudeModel(None, row.id, provider="bedrock", base_url=fake.base_url,
                                               max_retries=0))
    assert refusals(fake) == []
    assert (result["decision"], result["verified"]) == ("refer", True)


# --------------------------------------------------------------------------- every recorded request, re-checked


@pending
def test_documented_400s_are_never_sent(aws_stack, ingested_contract, monkeypatch, tmp_path) -> None:
    # Given strict fakes on the default model (they issue signed thinking blocks, so the echoes
    # the product sends back can be checked too)
    model_id = DEFAULT_MODELS["anthropic"]
    with StrictClaude(ExtractBrain()) as extract_fake, StrictClaude(triage_brain) as triage_fake:
        _extract_env(monkeypatch, ClaudeModel("test-key-not-real", model_id, base_url=extract_fake.base_url,
                                              max_retries=0))
        # When extraction and triage run
        _extract_session(ingested_contract, model_id)
        _triage(tmp_path, ClaudeModel("test-key-not-real", model_id, base_url=triage_fake.base_url, max_retries=0))
    # Then the fakes refused nothing, and re-checking every recorded request against every
    # documented rule (the thinking signatures the fake issued included) finds no refusal
    refused = []
    for fake in (extract_fake, triage_fake):
        for request in fake.calls("POST", "/v1/messages"):
            error = check_request(request.body, surface="messages",
                                  api_version=request.headers.get("anthropic-version", ""),
                                  signatures=fake.contract.book)
            if error is not None:
                refused.append(f"{error.status} {error.message}")
    assert len(extract_fake.requests) >= 2 and triage_fake.requests
    assert extract_fake.rejected == [] and triage_fake.rejected == []
    assert refused == []


# --------------------------------------------------------------------------- the prompt cache is read


class OnePerSession(ExtractBrain):
    """Plays a model that records one pending clause type per session, then ends its turn: a run
    takes as many sessions as it has clause types, each a fresh conversation (no search)."""

    def content(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
        if any(m.get("role") == "assistant" for m in body.get("messages") or []):
            more = follow_up(body)  # e.g. the search the harness asks for before a not-found
            return (more, "tool_use") if more else ([text_block("Recorded; the rest in the next session.")], "end_turn")
        answer = self.baseline.create(_request(body))
        first = [b.model_dump() for b in answer.content if b.type == "tool_use"][:1]
        return (first, "tool_use") if first else ([text_block("Nothing to record.")], "end_turn")


CACHE_TYPES = ["Governing Law", "Insurance", "Audit Rights", "Non-Compete", "Expiration Date"]


@pytest.mark.parametrize("row", [r for r in ANTHROPIC if r.spec.generation == "current"], ids=row_id)
def test_seventy_percent_of_a_multi_session_runs_input_is_read_from_cache(aws_stack, ingested_contract,
                                                                          monkeypatch, row: ModelSpec) -> None:
    # Given the strict Messages fake (its cache reads only byte-identical prefixes written earlier,
    # over the row's minimum) and a model that resolves one clause type per session
    with StrictClaude(OnePerSession()) as fake:
        _extract_env(monkeypatch, ClaudeModel("test-key-not-real", row.id, base_url=fake.base_url, max_retries=0))
        run = start_run(wiring.state_store(), load_catalogue(), doc_id=ingested_contract.doc_id,
                        clause_types=CACHE_TYPES, model_name=row.id, max_tokens=4096, top_k=4, facts=dict(FACTS))
        # When the run goes session after session until it is done
        outcomes = [run_session(wiring.deps(), run.run_id)]
        while outcomes[-1].status == "CONTINUE" and len(outcomes) < 12:
            outcomes.append(run_session(wiring.deps(), run.run_id))
        stats = fake.cache_stats()
    # Then it took one session per clause type, nothing was refused, and after the run's first
    # call at least 70% of the input tokens were read from cache (the reference figure)
    assert outcomes[-1].status == "DONE" and len(outcomes) >= 4
    assert refusals(fake) == []
    later = stats["requests"][1:]
    read = sum(r.read for r in later)
    total = sum(r.read + r.written_5m + r.written_1h + r.uncached for r in later)
    print(f"{row.id}: {len(outcomes)} sessions, {len(later) + 1} calls, read after the first call {read}/{total}"
          f" = {read / total:.1%} (whole run {stats['read_share']:.1%})")
    assert total > 0 and read / total >= 0.70, f"{read}/{total} = {read / total:.1%}"
    # and the user's exact values were in every request, verbatim, ahead of the chunks
    for request in fake.calls("POST", "/v1/messages"):
        first_text = request.body["messages"][0]["content"][0]["text"]
        assert '"$247.83"' in first_text and first_text.index('"$247.83"') < first_text.index("<chunk-")


# --------------------------------------------------------------------------- summaries on Bedrock


@pytest.mark.parametrize("row", [r for r in BEDROCK if r.endpoint == "messages"], ids=row_id)
def test_summaries_keep_the_contract_on_bedrocks_messages_endpoint(home, monkeypatch, capsys, fresh_aws_session,
                                                                   row: ModelSpec) -> None:
    # Given the strict Bedrock fake (streaming on) as the Messages-API Bedrock endpoint, which the
    # SDK's mantle client finds through ANTHROPIC_BEDROCK_MANTLE_BASE_URL, and a summarising brain
    shaped = ClaudeShaped()
    # local mode runs the summary state machine under moto, whose mock sets its own fake AWS keys
    # (moto.core.models: FOOBARKEY / FOOBARSECRET); the model is composed before that sandbox with the
    # environment's own credentials and region (issue 28), so the fake accepts only those
    with enable_streaming(StrictBedrock(shaped)) as fake:
        add_policy(home, sections=8)
        monkeypatch.setenv("LONGDOC_MODEL_PROVIDER", "bedrock")
        monkeypatch.setenv("LONGDOC_CLAUDE_MODEL", row.id)
        monkeypatch.setenv("ANTHROPIC_BEDROCK_MANTLE_BASE_URL", fake.mantle_url)
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        wiring.reset()
        # When an eight-section policy is summarised (map, reduce, streamed final)
        code = main(["summarize", "policy", "--json"])
        out, err = capsys.readouterr()
    # Then nothing was refused or badly signed, and the summary came out of all three stages
    assert refusals(fake) == [] and fake.bad_signatures == 0
    assert code == 0, err
    assert json.loads(out)["text"].strip()
    assert {"map", "reduce", "final"} <= set(shaped.kinds)
    assert fake.paths and all(p.startswith(MESSAGES_PATHS) for p in fake.paths), fake.paths
