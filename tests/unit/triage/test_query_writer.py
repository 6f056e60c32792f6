"""The optional query writer (issue 31 item 2): prompt and tool shape, the per-claim cache, the fallback."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from longdoc.core.errors import ModelUnavailable
from longdoc.core.messages import ModelRequest, ModelResponse, TextBlock, ToolUseBlock, Usage
from longdoc.triage.claim import Claim
from longdoc.triage.clauses import Clause
from longdoc.triage.collections import load_collection
from longdoc.triage.evaluate import evaluate, render
from longdoc.triage.query_writer import MAX_WORDS, TOOL_NAME, cache_key, queries_with_writer
from longdoc.triage.ranking import offline_queries
from longdoc.triage.service import TriageDeps, TriageRequest, parse_claim, pool, ranked_clauses
from longdoc.triage.terms import resolve
from tests.unit.triage_set import load_file, load_policy_set

SET = "dev-policy-set"
CLAIM = {"claim_id": "q2", "loss_date": "2023-05-02", "line_of_business": "home",
         "description": "Stuff gone from the house being built",
         "adjuster_note": "Someone took copper pipes and tools from the new house we are still building."}
GOOD = {"peril_phrasing": "theft or attempted theft",
        "property_phrasing": "materials and supplies for use in the construction of a dwelling",
        "condition_phrasing": None,
        "exclusion_phrasing": "theft of property in or from a dwelling under construction"}


class StubModel:
    """A Model port that answers from a script and records every request."""

    name = "claude-sonnet-5-5"

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.requests: list[ModelRequest] = []

    def create(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


def called(tool_input: dict[str, Any], name: str = TOOL_NAME, stop: str = "tool_use") -> ModelResponse:
    return ModelResponse(id="msg_1", model="claude-sonnet-5-5", content=[ToolUseBlock(id="tu_1", name=name,
                                                                                     input=tool_input)],
                         stop_reason=stop, usage=Usage(input_tokens=10, output_tokens=5))


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, Claim, list[Clause]]:
    blobs, state = load_policy_set(tmp_path_factory.mktemp("set"))
    claim = parse_claim(TriageRequest(collection=SET, claim=CLAIM))
    clauses = pool(blobs, resolve(SET, load_collection(state, SET), "home", "2023-05-02"))
    return blobs, state, claim, clauses


def test_the_request_shows_the_fenced_claim_and_the_wordings_vocabulary_through_one_tool(home) -> None:
    # Given a model that answers write_queries with the wording's phrasing
    blobs, _, claim, clauses = home
    model = StubModel(called(GOOD))
    # When the queries are written for a claim told in plain words
    queries = queries_with_writer(model, blobs, claim, clauses)
    # Then exactly one request went out, job triage, tool_choice auto (the default model rejects a forced one)
    (request,) = model.requests
    assert (request.job, request.tool_choice, request.max_tokens) == ("triage", {"type": "auto"}, 1024)
    (tool,) = request.tools
    schema = tool["input_schema"]
    assert tool["name"] == "write_queries" and schema["additionalProperties"] is False
    assert schema["required"] == ["peril_phrasing", "property_phrasing", "condition_phrasing", "exclusion_phrasing"]
    assert schema["properties"]["exclusion_phrasing"]["type"] == ["string", "null"]
    assert schema["properties"]["peril_phrasing"]["type"] == "string"
    # And the user turn fences the claim as data and lists the wording's headings and defined terms
    user = request.messages[0].content
    assert isinstance(user, str) and "<claim-" in user and "copper pipes" in user
    assert "5 Exclusions > 5.7 Theft during construction" in user and "Defined terms: Flood;" in user
    assert "Answer with one call of the write_queries tool" in request.system[0]["text"]
    # And the offline queries come first, unchanged, then the model's, named and weighted
    offline = offline_queries(clauses, claim)
    assert queries[:len(offline)] == offline
    assert [(q.name, q.text, q.weight) for q in queries[len(offline):]] == [
        ("model peril", "theft or attempted theft", 1.0),
        ("model property", "materials and supplies for use in the construction of a dwelling", 0.5),
        ("model exclusion", "theft of property in or from a dwelling under construction", 0.5)]


def test_a_second_triage_of_the_same_claim_makes_no_request(home, tmp_path: Path) -> None:
    _, _, claim, clauses = home
    blobs, _ = load_policy_set(tmp_path / "set")  # the same documents, nothing cached yet
    # Given a claim whose phrasings were written once
    model = StubModel(called(GOOD), called({**GOOD, "peril_phrasing": "fire"}))
    first = queries_with_writer(model, blobs, claim, clauses)
    # When the same claim is triaged again against the same documents
    second = queries_with_writer(model, blobs, claim, clauses)
    # Then no second request: the phrasings came from the cache at the documented key
    assert len(model.requests) == 1 and first == second
    key = cache_key("claude-sonnet-5-5", claim, clauses)
    assert key.startswith("triage/query-writer/claude-sonnet-5-5/") and key.endswith(".json")
    assert json.loads(blobs.get(key))["phrasings"] == GOOD
    # And another claim text is asked anew
    other = Claim(fields=dict(claim.fields), note=claim.note + " The site was locked.")
    queries_with_writer(model, blobs, other, clauses)
    assert len(model.requests) == 2


@pytest.mark.parametrize("reply", [
    ModelResponse(id="m", model="x", content=[TextBlock(text="theft")], stop_reason="end_turn", usage=Usage()),
    called({**GOOD, "peril_phrasing": " ".join(["theft"] * (MAX_WORDS + 1))}),
    called({k: v for k, v in GOOD.items() if k != "property_phrasing"}),
    called({**GOOD, "decision": "covered"}),
    called(GOOD, stop="max_tokens"),
    called(GOOD, name="record_triage"),
    ModelUnavailable("API unavailable after 2 retries"),
], ids=["no-tool-use", "over-30-words", "missing-field", "extra-field", "cut", "other-tool", "api-error"])
def test_bad_output_falls_back_to_the_offline_queries_and_is_not_cached(home, tmp_path: Path, caplog,
                                                                        reply: Any) -> None:
    _, _, claim, clauses = home
    # Given a first answer that is bad (or an API error), then a good one
    blobs = type(home[0])(tmp_path / "bucket")
    model = StubModel(reply, called(GOOD))
    # When the model fails or answers without a valid write_queries call
    with caplog.at_level(logging.WARNING, logger="longdoc.triage.query_writer"):
        queries = queries_with_writer(model, blobs, claim, clauses)
    # Then the offline queries alone, one warning, nothing cached
    assert queries == offline_queries(clauses, claim)
    assert any("offline queries only" in r.getMessage() for r in caplog.records)
    assert not blobs.exists(cache_key(model.name, claim, clauses))
    # And the next triage asks again (the failure was not cached) and gets the model's queries
    again = queries_with_writer(model, blobs, claim, clauses)
    assert len(model.requests) == 2 and again[-1].name == "model exclusion"


def test_the_setting_on_without_a_model_is_skipped_with_one_log_line(home, caplog) -> None:
    # Given the setting on but no model (the offline baseline), When a claim is ranked
    blobs, state, claim, _ = home
    with caplog.at_level(logging.INFO, logger="longdoc.triage.query_writer"):
        ranked = ranked_clauses(TriageDeps(state, blobs, query_writer=True),
                                resolve(SET, load_collection(state, SET), "home", "2023-05-02"), claim)
    # Then the offline queries only, and one log line saying why
    assert [q.name for q in ranked.queries] == ["loss", "event"]
    assert [r.getMessage() for r in caplog.records if "query writer" in r.getMessage()] == [
        "query writer: LONGDOC_TRIAGE_QUERY_WRITER=model but no model is configured (offline baseline): skipped, "
        "offline queries only"]


def test_the_model_queries_move_the_deciding_clause_into_the_top_three_and_explain_names_them(home) -> None:
    blobs, state, claim, _ = home
    resolution = resolve(SET, load_collection(state, SET), "home", "2023-05-02")
    # Given a claim in plain words whose deciding clause the offline queries miss
    offline = ranked_clauses(TriageDeps(state, blobs), resolution, claim)
    # When the writer's phrasings join the ranking
    written = ranked_clauses(TriageDeps(state, blobs, model=StubModel(called(GOOD)), query_writer=True),
                             resolution, claim)
    # Then 5.7 (theft during construction) is out of the offline top 5 and first with the writer
    assert "5.7" not in [c.clause_id for c in offline.clauses[:5]]
    # (the definition 2.4 sits under "2 Definitions", weighted down like any definitions unit)
    assert [c.clause_id for c in written.clauses[:3]] == ["5.7", "4.3", "5.10"]
    # And --explain's reasons name the model queries that found it
    assert written.reasons[written.clauses[0].key] == ["model peril#2", "model property#1", "model exclusion#1"]


def test_eval_with_the_query_writer_reports_the_writer_columns(tmp_path: Path) -> None:
    # Given one gold claim whose deciding clause only the writer's queries find
    blobs, state = load_policy_set(tmp_path / "set")
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"id": "q2", "kind": "paraphrase", "claim": CLAIM, "gold_doc": "homeowners-wording-2023",
                                "gold": ["5.7"]}) + "\n")
    deps = TriageDeps(state, blobs, model=StubModel(called(GOOD)))
    # When eval runs with --query-writer, Then the writer's columns sit beside today's ranking
    report = evaluate(gold, SET, deps, query_writer=True)
    assert (report["overall"]["recall@3"], report["overall"]["writer_recall@3"]) == (0.0, 1.0)
    assert report["query_writer"] == "claude-sonnet-5-5" and report["claims"][0]["writer_top3"][0] == "5.7"
    table = render(report).splitlines()
    assert table[1].split()[-4:] == ["WRITER", "R@1", "WRITER", "R@3"] and table[2].split()[-2:] == ["1.000", "1.000"]
    # And without the flag the report is as before
    assert "writer_recall@3" not in evaluate(gold, SET, TriageDeps(state, blobs))["overall"]


def test_a_policy_without_definitions_still_gets_its_headings(tmp_path: Path) -> None:
    # Given a wording with no definitions section
    blobs, state = load_policy_set(tmp_path / "set")
    travel = tmp_path / "mini.md"
    travel.write_text("# Mini Wording\n\n## 1 Baggage\n\nWe pay for baggage lost by a carrier during the journey.\n")
    load_file(blobs, state, travel, {"collection": "mini", "line_of_business": "travel", "effective_from": "2022-01-01"})
    clauses = pool(blobs, resolve("mini", load_collection(state, "mini"), "travel", "2023-01-01"))
    model = StubModel(called(GOOD))
    # When its phrasings are asked for, Then the prompt says so and still lists the headings
    queries_with_writer(model, blobs, Claim(fields={}, note="My suitcase never arrived."), clauses)
    user = model.requests[0].messages[0].content
    assert isinstance(user, str) and "Defined terms: (none)" in user and "1 Baggage" in user


def test_eval_triage_takes_the_query_writer_flag() -> None:
    # Given the CLI's parser, When eval triage is given --query-writer, Then the flag is read (off by default)
    from longdoc.cli import build_parser

    base = ["eval", "triage", "--gold", "g.jsonl", "--collection", SET]
    assert build_parser().parse_args([*base, "--query-writer"]).query_writer is True
    assert build_parser().parse_args(base).query_writer is False
