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
                "pending", "done", "failed", "summary", "primed", "priming_batch", "cache_hit_rate",
                "slices", "slice", "continue_as_new", "status", "reason"}
"""``status`` is the finished job's (SUCCEEDED, PARTIAL or FAILED) and ``reason`` one line of its counts."""


def tasks() -> dict[str, dict[str, Any]]:
    """Every Lambda task of the machine, the Map's slice task included (not ContinueAsNew)."""
    states = dict(ASL["States"])
    states.update(ASL["States"]["PrepareSlices"]["ItemProcessor"]["States"])
    return {name: state for name, state in states.items()
            if state["Type"] == "Task" and state["Resource"] == "arn:${Partition}:states:::lambda:invoke"}


def test_only_ids_and_counters_travel_between_states() -> None:
    for name, state in tasks().items():
        assert {k.removesuffix(".$") for k in state.get("ResultSelector", {})} <= SMALL_FIELDS, name
        assert state["Parameters"]["FunctionName"] == "${BulkFunctionArn}", name
        payload = state["Parameters"]["Payload"]
        assert {k.removesuffix(".$") for k in payload} <= {"action", "bulk_id", "round", "polls", "not_found",
                                                           "error", "entered", "slice", "started_round"}, name


def test_the_end_state_follows_the_job_status() -> None:
    # SUCCEEDED only when every document is done: PARTIAL ends in its own Succeed state, FAILED (none
    # done) fails the execution with BulkJobFailed and the counts as its cause
    states = ASL["States"]
    choice = states["JobStatus"]
    assert choice["Type"] == "Choice"
    assert [(c["Variable"], c["StringEquals"], c["Next"]) for c in choice["Choices"]] == [
        ("$.status", "SUCCEEDED", "Done"), ("$.status", "PARTIAL", "DonePartial")]
    assert choice["Default"] == "NoDocumentDone"
    assert states["Done"]["Type"] == states["DonePartial"]["Type"] == "Succeed"
    assert {k: states["NoDocumentDone"][k] for k in ("Type", "Error", "CausePath")} == {
        "Type": "Fail", "Error": "BulkJobFailed", "CausePath": "$.reason"}
    assert states["Finish"]["ResultSelector"]["status.$"] == "$.Payload.status"


def test_rounds_loop_prepare_submit_wait_poll_harvest() -> None:
    states = ASL["States"]
    # issue 26: the job's runs are created by the machine's first state, then the rounds begin
    assert ASL["StartAt"] == "CreateRuns" and states["CreateRuns"]["Next"] == "Prepare"
    # issue 26: Prepare plans slices, an inline Map builds them, Prepared closes the round
    assert states["Prepare"]["Next"] == "PrepareSlices"
    assert states["PrepareSlices"]["Next"] == "Prepared" and states["Prepared"]["Next"] == "HasRequests"
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
    assert states["NextRound"]["Choices"][1] == {"Variable": "$.pending", "NumericGreaterThan": 0, "Next": "Prepare"}
    assert states["NextRound"]["Choices"][0]["Next"] == "ContinueAsNew"
    assert states["NextRound"]["Default"] == "Finish" and states["Finish"]["Next"] == "JobStatus"


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
        if name in ("Prime", "PollPriming", "Submit", "Poll", "Harvest", "PrepareSlice"):  # Batches API, token counts
            api = next(r for r in state["Retry"] if r["ErrorEquals"] == ["ModelThrottled", "ModelUnavailable"])
            assert {k: v for k, v in api.items() if k != "ErrorEquals"} == {
                "IntervalSeconds": 10, "MaxAttempts": 5, "BackoffRate": 2, "MaxDelaySeconds": 300,
                "JitterStrategy": "FULL"}, name
        if name not in ("RecordFailure", "PrepareSlice"):  # the slice's errors are caught by its Map
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


def test_the_bulk_page_and_the_runbook_say_how_to_watch_and_redrive_a_bulk_run() -> None:
    # Given the user guide's bulk page and the runbook's bulk section
    readme = _section(REPO / "docs" / "bulk.md", "## Bulk extraction")
    runbook = _section(REPO / "docs" / "operations.md", "## A stuck or failed bulk run")
    # Then both say where the execution is in the Step Functions console and how to redrive it
    for text in (readme, runbook):
        assert "BulkStateMachineArn" in text and "Executions" in text, text[:80]
        assert "**Redrive**" in text and "aws stepfunctions redrive-execution" in text, text[:80]
    # And the runbook names every error of ours that the machine retries (what the history shows)
    ours = {e for state in tasks().values() for r in state.get("Retry", []) for e in r["ErrorEquals"]
            if not e.startswith(("Lambda.", "States."))}
    assert ours and all(error in runbook for error in ours), ours


# --- issue 26: Prepare in slices, retries, the history cap -----------------------------------------


def test_prepare_runs_slices_in_an_inline_map_whose_children_return_counts_only() -> None:
    # Given the PrepareSlices Map
    smap = ASL["States"]["PrepareSlices"]
    # Then it iterates the slice numbers Prepare returned, each child gets ids only, at most 10 at once
    assert smap["Type"] == "Map" and smap["ItemsPath"] == "$.slices"
    assert smap["ItemProcessor"]["ProcessorConfig"] == {"Mode": "INLINE"}
    assert smap["ItemSelector"] == {"bulk_id.$": "$.bulk_id", "round.$": "$.round", "slice.$": "$$.Map.Item.Value"}
    assert 1 <= smap["MaxConcurrency"] <= 10
    # And the children's results are dropped (the payload stays the round's ids, far below 256 KB)
    assert smap["ResultPath"] is None
    child = smap["ItemProcessor"]["States"]["PrepareSlice"]
    assert child["Parameters"]["Payload"]["action"] == "prepare_slice" and child["End"] is True
    assert set(child["ResultSelector"]) == {"slice.$", "requests.$", "batches.$"}
    assert smap["Catch"] == [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "RecordFailure"}]


def _retrier(state: dict[str, Any], error: str) -> dict[str, Any]:
    return next(r for r in state["Retry"] if error in r["ErrorEquals"])


def test_a_timed_out_slice_harvest_or_plan_is_retried_with_backoff() -> None:
    # Given the steps that resume from what they stored (Prepare, each slice, Prepared, Harvest) and the
    # idempotent ones (Submit, Poll, Prime, PollPriming, Finish: their Comment says why a retry is safe)
    states = {**ASL["States"], **ASL["States"]["PrepareSlices"]["ItemProcessor"]["States"]}
    for name in ("Prepare", "PrepareSlice", "Prepared", "Harvest", "Submit", "Poll", "Prime", "PollPriming", "Finish"):
        # Then a Lambda timeout (Sandbox.Timedout) and a state timeout are retried, with growing waits
        for error in ("Sandbox.Timedout", "States.Timeout"):
            retry = _retrier(states[name], error)
            assert retry["MaxAttempts"] >= 2 and retry["BackoffRate"] > 1 and retry["IntervalSeconds"] >= 1, name
        # And each says why a retry is safe
        assert "Sandbox.Timedout" in states[name]["Comment"] or name in ("Prepare", "PrepareSlice", "Prepared",
                                                                         "Harvest"), name
    # And the slices and Harvest retry the product's transient retrieval and model errors (core/errors.py)
    for name in ("PrepareSlice", "Harvest"):
        for error in ("EmbeddingUnavailable", "RerankUnavailable", "IndexUnavailable", "ModelThrottled",
                      "ModelUnavailable"):
            retry = _retrier(states[name], error)
            assert retry["BackoffRate"] >= 2 and retry["MaxAttempts"] >= 3 and retry.get("MaxDelaySeconds"), (name, error)


def test_those_retried_errors_are_the_products_own_names() -> None:
    # Given every retried error name that is not AWS's
    from longdoc.core import errors

    states = {**ASL["States"], **ASL["States"]["PrepareSlices"]["ItemProcessor"]["States"]}
    ours = {e for s in states.values() for r in s.get("Retry", []) for e in r["ErrorEquals"]
            if not e.startswith(("Lambda.", "States.", "Sandbox.", "StepFunctions."))}
    # Then each is an error class of core/errors.py (Step Functions matches the class name)
    assert ours and all(isinstance(getattr(errors, e, None), type) for e in ours), ours


def test_the_worst_history_of_an_execution_stays_under_25000_events() -> None:
    # Given the events of one worst round: 10,000 documents in slices, a priming batch and a batch of
    # 24 hours each, counted from the ASL's own states
    from longdoc.bulk.plan import (EVENTS_PER_CHOICE, EVENTS_PER_TASK, MAX_JOB_DOCUMENTS, ROUNDS_PER_EXECUTION,
                                   map_events, polls_within, worst_round_events)

    limits = BulkLimits()
    states = ASL["States"]
    once = ["Prepare", "PrepareSlices", "Prepared", "HasRequests", "Prime", "Primed", "Submit", "Harvest", "NextRound"]
    cycles = [("WaitForPriming", "PollPriming", "PrimingEnded"), ("WaitForBatches", "Poll", "Ended")]
    # (each state of the round is in the machine, and each poll cycle is a Wait, a Task and a Choice)
    assert all(n in states for n in once)
    assert all([states[n]["Type"] for n in c] == ["Wait", "Task", "Choice"] for c in cycles)
    slices = -(-MAX_JOB_DOCUMENTS // limits.slice_docs)
    by_type = {"Task": EVENTS_PER_TASK, "Choice": EVENTS_PER_CHOICE, "Wait": EVENTS_PER_CHOICE}
    counted = sum(map_events(slices) if states[n]["Type"] == "Map" else by_type[states[n]["Type"]] for n in once)
    counted += len(cycles) * polls_within(24 * 3600, limits) * EVENTS_PER_POLL
    assert counted == worst_round_events(limits)
    # When an execution runs ROUNDS_PER_EXECUTION such rounds, then continues as new (and the start,
    # ContinueAsNew and the final states)
    execution = ROUNDS_PER_EXECUTION * counted + 2 + EVENTS_PER_TASK + 2 * EVENTS_PER_TASK + 4
    # Then it stays under the quota with a quarter of it left for retries
    assert execution < HISTORY_EVENT_LIMIT * 3 // 4, execution
    # And a 12-round job, which one execution could not hold, continues as new to stay under it
    assert BulkLimits().max_rounds * counted > HISTORY_EVENT_LIMIT
    nxt = states["NextRound"]["Choices"][0]
    assert nxt["And"] == [{"Variable": "$.pending", "NumericGreaterThan": 0},
                          {"Variable": "$.continue_as_new", "BooleanEquals": True}]
    can = states["ContinueAsNew"]
    assert can["Resource"] == "arn:${Partition}:states:::states:startExecution" and can["Next"] == "ContinuedAsNew"
    assert can["Parameters"]["StateMachineArn.$"] == "$$.StateMachine.Id"
    assert set(can["Parameters"]["Input"]) >= {"bulk_id.$", "round.$"}
    assert states["Harvest"]["Parameters"]["Payload"]["started_round.$"] == "$$.Execution.Input.round"


def test_the_template_lets_the_machine_continue_as_new_and_alarms_on_failed_documents() -> None:
    resources = load_template()["Resources"]
    statements = [s for p in resources["BulkStateMachine"]["Properties"]["Policies"] if "Statement" in p
                  for s in p["Statement"]]
    start = next(s for s in statements if s.get("Action") == "states:StartExecution")
    assert "-bulk" in json.dumps(start["Resource"])
    # And a job whose documents fail is not silent: an alarm on the function's BulkDocumentsFailed metric
    alarm = resources["BulkDocumentsFailedAlarm"]["Properties"]
    assert alarm["MetricName"] == "BulkDocumentsFailed" and alarm["Threshold"] == 1
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert alarm["Namespace"] == {"Fn::Sub": "longdoc/${AWS::StackName}"}
    throttles = resources["BulkThrottlesAlarm"]["Properties"]
    assert throttles["MetricName"] == "Throttles" and throttles["Dimensions"][0]["Value"] == {"Ref": "BulkFunction"}
