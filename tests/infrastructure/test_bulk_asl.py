"""Static checks of ``statemachine/bulk.asl.json`` and of the template resources that deploy it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from longdoc.bulk.plan import EVENTS_PER_POLL, HISTORY_EVENT_LIMIT, BulkLimits, events_per_round
from tests.infrastructure.cfn import load_template

REPO = Path(__file__).resolve().parents[2]
ASL = json.loads((REPO / "statemachine" / "bulk.asl.json").read_text(encoding="utf-8"))
SMALL_FIELDS = {"bulk_id", "round", "batches", "requests", "polls", "not_found", "wait_seconds", "ended",
                "pending", "done", "failed", "summary", "primed", "priming_batch", "cache_hit_rate"}


def tasks() -> dict[str, dict[str, Any]]:
    return {name: state for name, state in ASL["States"].items() if state["Type"] == "Task"}


def test_only_ids_and_counters_travel_between_states() -> None:
    for name, state in tasks().items():
        assert {k.removesuffix(".$") for k in state.get("ResultSelector", {})} <= SMALL_FIELDS, name
        assert state["Parameters"]["FunctionName"] == "${BulkFunctionArn}", name
        payload = state["Parameters"]["Payload"]
        assert {k.removesuffix(".$") for k in payload} <= {"action", "bulk_id", "round", "polls", "not_found",
                                                           "error", "entered"}, name


def test_rounds_loop_prepare_submit_wait_poll_harvest() -> None:
    states = ASL["States"]
    # issue 26: the job's runs are created by the machine's first state, then the rounds begin
    assert ASL["StartAt"] == "CreateRuns" and states["CreateRuns"]["Next"] == "Prepare"
    assert states["Prepare"]["Next"] == "HasRequests"
    assert states["HasRequests"]["Choices"][0]["Next"] == "Prime" and states["HasRequests"]["Default"] == "Harvest"
    # issue 25: a one-request priming batch goes out first, and the round's batch only once it has ended
    assert states["Prime"]["Parameters"]["Payload"]["action"] == "prime" and states["Prime"]["Next"] == "Primed"
    assert states["Primed"]["Choices"] == [{"Variable": "$.primed", "BooleanEquals": True, "Next": "WaitForPriming"}]
    assert states["Primed"]["Default"] == "Submit"
    assert states["WaitForPriming"] == {**states["WaitForPriming"], "Type": "Wait", "SecondsPath": "$.wait_seconds",
                                        "Next": "PollPriming"}
    assert states["PollPriming"]["Parameters"]["Payload"]["action"] == "poll_prime"
    assert states["PollPriming"]["Next"] == "PrimingEnded"
    assert states["PrimingEnded"]["Choices"] == [{"Variable": "$.ended", "BooleanEquals": True, "Next": "Submit"}]
    assert states["PrimingEnded"]["Default"] == "WaitForPriming"
    assert states["Submit"]["Next"] == "WaitForBatches"
    # the growing interval comes from the previous step's output (Submit, then each Poll)
    assert states["WaitForBatches"] == {**states["WaitForBatches"], "Type": "Wait", "SecondsPath": "$.wait_seconds",
                                        "Next": "Poll"}
    assert states["Poll"]["Next"] == "Ended"
    assert states["Ended"]["Choices"] == [{"Variable": "$.ended", "BooleanEquals": True, "Next": "Harvest"}]
    assert states["Ended"]["Default"] == "WaitForBatches"
    assert states["Harvest"]["Next"] == "NextRound"
    assert states["NextRound"]["Choices"] == [{"Variable": "$.pending", "NumericGreaterThan": 0, "Next": "Prepare"}]
    assert states["NextRound"]["Default"] == "Finish" and states["Finish"]["Next"] == "Done"


def test_a_poll_cycle_is_the_events_the_arithmetic_counts() -> None:
    # One poll cycle is Wait (2 events) + the Poll task (5) + the Ended choice (2): EVENTS_PER_POLL,
    # so a 24-hour batch on the default schedule stays under 1/8 of the 25,000-event history
    cycle = [ASL["States"][n]["Type"] for n in ("WaitForBatches", "Poll", "Ended")]
    assert cycle == ["Wait", "Task", "Choice"] and EVENTS_PER_POLL == 2 + 5 + 2
    assert events_per_round(BulkLimits()) < HISTORY_EVENT_LIMIT // 8


def test_every_step_retries_lambda_errors_and_is_caught() -> None:
    for name, state in tasks().items():
        errors = {e for r in state["Retry"] for e in r["ErrorEquals"]}
        assert "Lambda.TooManyRequestsException" in errors, name
        if name in ("Prime", "PollPriming", "Submit", "Poll", "Harvest"):  # they call the Batches API
            api = next(r for r in state["Retry"] if r["ErrorEquals"] == ["ModelThrottled", "ModelUnavailable"])
            assert {k: v for k, v in api.items() if k != "ErrorEquals"} == {
                "IntervalSeconds": 10, "MaxAttempts": 5, "BackoffRate": 2, "MaxDelaySeconds": 300,
                "JitterStrategy": "FULL"}, name
        if name != "RecordFailure":
            assert state["Catch"] == [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error",
                                       "Next": "RecordFailure"}], name
    # RecordFailure fails the execution; entered again by a redrive it lets the round go on
    failure = ASL["States"]["RecordFailure"]
    # (through CreateRuns, which does nothing once the job item exists: a failed CreateRuns is redriven too)
    assert failure["Next"] == "CreateRuns" and "Catch" not in failure
    assert failure["Parameters"]["Payload"]["entered.$"] == "$$.State.EnteredTime"


def test_the_template_deploys_the_machine_with_every_placeholder_filled() -> None:
    resources = load_template()["Resources"]
    machine = resources["BulkStateMachine"]["Properties"]
    placeholders = set(re.findall(r"\$\{(\w+)\}", json.dumps(ASL)))
    assert machine["DefinitionUri"] == "statemachine/bulk.asl.json" and machine["Type"] == "STANDARD"
    assert set(machine["DefinitionSubstitutions"]) == placeholders == {"BulkFunctionArn", "Partition"}
    assert machine["DefinitionSubstitutions"]["BulkFunctionArn"] == {"Fn::GetAtt": ["BulkFunction", "Arn"]}
    assert machine["Logging"]["IncludeExecutionData"] is False and machine["Tracing"] == {"Enabled": True}
    templates = [p for p in machine["Policies"] if "Statement" not in p]
    assert templates == [{"LambdaInvokePolicy": {"FunctionName": {"Ref": "BulkFunction"}}}]
    function = resources["BulkFunction"]["Properties"]
    assert function["CodeUri"] == "functions/bulk/" and function["Role"] == {"Fn::GetAtt": ["BulkRole", "Arn"]}
    assert (REPO / "functions" / "bulk" / "requirements.txt").is_file()
    events = resources["ApiFunction"]["Properties"]["Events"]
    assert {(e["Properties"]["Path"], e["Properties"]["Method"]) for e in events.values()} >= {
        ("/bulk-extractions", "post"), ("/bulk-extractions/{bulk_id}", "get")}


def test_submit_retries_an_unlisted_batch_past_the_settle_time() -> None:
    # Given the retrier of BatchNotListedYet (an interrupted Submit whose batch the list does not show yet)
    retry = next(r for r in ASL["States"]["Submit"]["Retry"] if r["ErrorEquals"] == ["BatchNotListedYet"])
    # Then its waits add up past the default settle time before the last attempt, after which Submit creates
    waits = [retry["IntervalSeconds"] * retry["BackoffRate"] ** n for n in range(retry["MaxAttempts"])]
    assert sum(waits[:-1]) > BulkLimits().list_settle_seconds


def _section(path: Path, heading: str) -> str:
    text = path.read_text(encoding="utf-8")
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start:end if end > 0 else None]


def test_the_readme_and_the_runbook_say_how_to_watch_and_redrive_a_bulk_run() -> None:
    # Given the README's bulk section and the runbook's bulk section
    readme = _section(REPO / "README.md", "## Bulk extraction")
    runbook = _section(REPO / "docs" / "operations.md", "## A stuck or failed bulk run")
    # Then both say where the execution is in the Step Functions console and how to redrive it
    for text in (readme, runbook):
        assert "BulkStateMachineArn" in text and "Executions" in text, text[:80]
        assert "**Redrive**" in text and "aws stepfunctions redrive-execution" in text, text[:80]
    # And the runbook names every error of ours that the machine retries (what the history shows)
    ours = {e for state in tasks().values() for r in state.get("Retry", []) for e in r["ErrorEquals"]
            if not e.startswith(("Lambda.", "States."))}
    assert ours and all(error in runbook for error in ours), ours
