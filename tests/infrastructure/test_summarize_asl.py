"""Static checks of ``statemachine/summarize.asl.json`` and of the template snippet that deploys it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ASL = json.loads((REPO / "statemachine" / "summarize.asl.json").read_text(encoding="utf-8"))
SMALL_FIELDS = {"summary_id", "mode", "groups", "items", "map_concurrency", "level", "status", "partials",
                "statements", "dropped", "index", "cached"}


def tasks(states: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every Task state, those inside the Map's processor included."""
    out = {}
    for name, state in states.items():
        if state["Type"] == "Task":
            out[name] = state
        if state["Type"] == "Map":
            out.update(tasks(state["ItemProcessor"]["States"]))
    return out


def test_the_map_runs_groups_in_parallel_with_a_concurrency_cap_and_keeps_no_output() -> None:
    mapping = ASL["States"]["MapGroups"]
    assert mapping["ItemProcessor"]["ProcessorConfig"]["Mode"] == "INLINE"
    assert mapping["MaxConcurrencyPath"] == "$.map_concurrency" and mapping["ItemsPath"] == "$.items"
    assert mapping["ResultPath"] is None  # the iterations' outputs never accumulate in the state
    assert mapping["Catch"][0]["Next"] == "RecordFailure"


def test_only_ids_and_counters_travel_between_states() -> None:
    for name, state in tasks(ASL["States"]).items():
        assert {k.removesuffix(".$") for k in state.get("ResultSelector", {})} <= SMALL_FIELDS, name
        assert state["Parameters"]["FunctionName"] == "${SummarizeFunctionArn}", name


def test_model_calls_retry_throttling_and_every_step_is_caught() -> None:
    for name, state in tasks(ASL["States"]).items():
        errors = {e for r in state["Retry"] for e in r["ErrorEquals"]}
        assert "Lambda.TooManyRequestsException" in errors, name
        if name != "RecordFailure":
            assert {"ModelThrottled", "ModelUnavailable"} <= errors or name == "Plan", name
    for name in ("Plan", "Reduce", "Synthesize"):
        assert ASL["States"][name]["Catch"][0]["Next"] == "RecordFailure"


def test_a_document_that_fits_skips_map_and_reduce() -> None:
    route = ASL["States"]["Route"]
    assert route["Choices"] == [{"Variable": "$.mode", "StringEquals": "single", "Next": "Synthesize"}]
    assert route["Default"] == "MapGroups" and ASL["States"]["MapGroups"]["Next"] == "Reduce"


def test_the_template_snippet_names_every_resource_the_routes_and_machine_use() -> None:
    snippet = (REPO / "docs" / "summarize-template-snippet.yaml").read_text(encoding="utf-8")
    for needed in ("SummarizeFunction:", "SummarizeStateMachine:", "DefinitionUri: statemachine/summarize.asl.json",
                   "SummarizeFunctionArn:", "LONGDOC_SUMMARY_STATE_MACHINE_ARN", "Path: /summaries",
                   "Path: /summaries/{summary_id}", "CodeUri: functions/summarize/"):
        assert needed in snippet, needed
    placeholders = set(re.findall(r"\$\{(\w+)\}", json.dumps(ASL)))
    assert placeholders == {"SummarizeFunctionArn"}
