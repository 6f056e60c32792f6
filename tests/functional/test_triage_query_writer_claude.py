"""The triage query writer through the real ``anthropic`` SDK against the strict Claude fake (issue 31 item 2).

The strict fake holds each request to the default model's row of the capability table (no forced
``tool_choice``, thinking and effort as the row accepts them); the brain answers ``write_queries``
with the wording's phrasing, and the ranking is compared with the offline one.
"""

from __future__ import annotations

from typing import Any

import pytest

from longdoc.adapters.claude import ClaudeModel
from longdoc.core.model_defaults import DEFAULT_MODELS
from longdoc.triage.collections import load_collection
from longdoc.triage.service import TriageDeps, TriageRequest, parse_claim, ranked_clauses
from longdoc.triage.terms import resolve
from tests.fakes.anthropic_server import error_reply, message_reply, tool_use_block
from tests.fakes.strict_claude import StrictClaude
from tests.unit.triage_set import load_policy_set

SET = "dev-policy-set"
CLAIM = {"claim_id": "q2", "loss_date": "2023-05-02", "line_of_business": "home",
         "description": "Stuff gone from the house being built",
         "adjuster_note": "Someone took copper pipes and tools from the new house we are still building."}
PHRASINGS = {"peril_phrasing": "theft or attempted theft",
             "property_phrasing": "materials and supplies for use in the construction of a dwelling",
             "condition_phrasing": None,
             "exclusion_phrasing": "theft of property in or from a dwelling under construction"}


def test_the_writer_request_is_accepted_under_the_default_model_and_moves_the_deciding_clause(
        tmp_path: Any) -> None:
    # Given the dev policy set and a claim told in plain words (theft from a house under construction)
    blobs, state = load_policy_set(tmp_path / "set")
    claim = parse_claim(TriageRequest(collection=SET, claim=CLAIM))
    resolution = resolve(SET, load_collection(state, SET), "home", "2023-05-02")
    offline = ranked_clauses(TriageDeps(state, blobs), resolution, claim)
    with StrictClaude() as fake:
        fake.enqueue(message_reply([tool_use_block("write_queries", PHRASINGS)], stop_reason="tool_use"))
        model = ClaudeModel("test-key-not-real", DEFAULT_MODELS["anthropic"], base_url=fake.base_url,
                            max_retries=0, timeout=10.0)
        deps = TriageDeps(state, blobs, model=model, query_writer=True)
        # When the claim is ranked with the query writer on, twice
        written = ranked_clauses(deps, resolution, claim)
        again = ranked_clauses(deps, resolution, claim)
        bodies = [r.body for r in fake.calls("POST", "/v1/messages")]
        rejected = list(fake.rejected)
    # Then the one request was accepted under claude-sonnet-5-5's rules (auto tool choice, triage's thinking)
    assert rejected == [] and len(bodies) == 1
    body = bodies[0]
    assert body["model"] == "claude-sonnet-5-5" and body["tool_choice"] == {"type": "auto"}
    assert [t["name"] for t in body["tools"]] == ["write_queries"]
    assert body["thinking"] == {"type": "between_tools"} and body["output_config"] == {"effort": "low"}
    # And the model's queries joined the offline ones and moved 5.7 (theft during construction) into the top 3
    assert [q.name for q in written.queries] == ["loss", "event", "model peril", "model property", "model exclusion"]
    assert "5.7" not in [c.clause_id for c in offline.clauses[:5]]
    assert [c.clause_id for c in written.clauses[:3]] == ["5.7", "4.3", "5.10"]  # 2.4 sits under "2 Definitions": weighted down
    assert written.reasons[written.clauses[0].key] == ["model peril#2", "model property#1", "model exclusion#1"]
    # And the second ranking came from the cache (no second request), the same order
    assert [c.key for c in again.clauses] == [c.key for c in written.clauses]


@pytest.mark.parametrize("status", [400, 529])
def test_an_api_error_leaves_the_offline_ranking(tmp_path: Any, status: int) -> None:
    # Given a model that answers the writer's request with an API error
    blobs, state = load_policy_set(tmp_path / "set")
    claim = parse_claim(TriageRequest(collection=SET, claim=CLAIM))
    resolution = resolve(SET, load_collection(state, SET), "home", "2023-05-02")
    offline = ranked_clauses(TriageDeps(state, blobs), resolution, claim)
    with StrictClaude() as fake:
        fake.enqueue(error_reply(status))
        model = ClaudeModel("test-key-not-real", "claude-sonnet-5-5", base_url=fake.base_url, max_retries=0,
                            timeout=10.0)
        # When the claim is ranked with the writer on
        ranked = ranked_clauses(TriageDeps(state, blobs, model=model, query_writer=True), resolution, claim)
    # Then triage did not fail: the offline queries and ranking, unchanged
    assert [q.name for q in ranked.queries] == ["loss", "event"]
    assert [c.key for c in ranked.clauses] == [c.key for c in offline.clauses]
