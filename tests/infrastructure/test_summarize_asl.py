"""Static checks of ``statemachine/summarize.asl.json`` and of the template resources that deploy it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.infrastructure.cfn import load_template

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


def test_the_template_deploys_the_machine_with_every_placeholder_filled() -> None:
    # Given the template's summary state machine and the definition it deploys
    resources = load_template()["Resources"]
    machine = resources["SummarizeStateMachine"]["Properties"]
    placeholders = set(re.findall(r"\$\{(\w+)\}", json.dumps(ASL)))
    # Then the definition is this file, every placeholder is substituted (with the summarize
    # function), the function is built from functions/summarize/ with its own role, and the API
    # knows the machine it starts
    assert machine["DefinitionUri"] == "statemachine/summarize.asl.json"
    assert set(machine["DefinitionSubstitutions"]) == placeholders == {"SummarizeFunctionArn", "Partition"}
    assert machine["DefinitionSubstitutions"]["SummarizeFunctionArn"] == {"Fn::GetAtt": ["SummarizeFunction", "Arn"]}
    function = resources["SummarizeFunction"]["Properties"]
    assert function["CodeUri"] == "functions/summarize/"
    assert function["Role"] == {"Fn::GetAtt": ["SummarizeRole", "Arn"]}
    api_env = resources["ApiFunction"]["Properties"]["Environment"]["Variables"]
    assert api_env["LONGDOC_SUMMARY_STATE_MACHINE_ARN"] == {"Ref": "SummarizeStateMachine"}
    assert not (REPO / "docs" / "summarize-template-snippet.yaml").exists()  # merged, not kept beside it
