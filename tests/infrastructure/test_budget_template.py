"""Issue 26 in the template and the ASL: one Claude budget, no table Scan, partition-free ARNs, expiry."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.infrastructure.cfn import load_template

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template()


def test_no_arn_hard_codes_the_aws_partition() -> None:
    # Given the template and every state machine definition
    files = [REPO / "template.yaml", *sorted((REPO / "statemachine").glob("*.asl.json"))]
    # When they are searched for a literal "arn:aws:" (prose included)
    found = {f.name: n for f in files for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
             if "arn:aws:" in line}
    # Then there is none: ARNs use ${AWS::Partition} (template) or ${Partition} (ASL, substituted with it)
    assert found == {}
    for asl in (REPO / "statemachine").glob("*.asl.json"):
        resources = re.findall(r'"Resource": "([^"]+)"', asl.read_text(encoding="utf-8"))
        assert resources and all(r.startswith("arn:${Partition}:") for r in resources), asl.name
    machines = [r["Properties"] for r in load_template()["Resources"].values()
                if r["Type"] == "AWS::Serverless::StateMachine"]
    assert len(machines) == 3
    assert all(m["DefinitionSubstitutions"]["Partition"] == {"Ref": "AWS::Partition"} for m in machines)


def test_the_api_role_cannot_scan_the_table(template: dict[str, Any]) -> None:
    # Given the API role's statements / Then no statement allows dynamodb:Scan (triage queries its index)
    statements = template["Resources"]["ApiRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
    actions = {a for s in statements if isinstance(s, dict) and "Action" in s
               for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert "dynamodb:Scan" not in actions and "dynamodb:Query" in actions


def test_summaries_and_bulk_have_reserved_concurrency_and_admission_caps(template: dict[str, Any]) -> None:
    params, resources = template["Parameters"], template["Resources"]
    # Given the summarize and bulk functions
    for fn, param, condition in (("SummarizeFunction", "SummarizeReservedConcurrency", "HasSummarizeReservedConcurrency"),
                                 ("BulkFunction", "BulkReservedConcurrency", "HasBulkReservedConcurrency")):
        reserved = resources[fn]["Properties"]["ReservedConcurrentExecutions"]
        # Then each reserves its parameter's concurrency, or nothing when it is 0
        assert reserved == {"Fn::If": [condition, {"Ref": param}, {"Ref": "AWS::NoValue"}]}
        assert params[param]["MinValue"] == 0 and params[param]["Default"] >= 1
    # And the API admits one running bulk job by default, a bounded number of summaries and triage calls
    env = resources["ApiFunction"]["Properties"]["Environment"]["Variables"]
    assert env["LONGDOC_MAX_RUNNING_BULK_JOBS"] == {"Ref": "MaxRunningBulkJobs"} and params["MaxRunningBulkJobs"]["Default"] == 1
    assert env["LONGDOC_MAX_RUNNING_SUMMARIES"] == {"Ref": "MaxRunningSummaries"}
    assert env["LONGDOC_MAX_CONCURRENT_TRIAGE"] == {"Ref": "MaxConcurrentTriage"}
    # (a running summary holds one summarize invocation per map call: the cap stays under its reservation)
    assert params["MaxRunningSummaries"]["Default"] <= params["SummarizeReservedConcurrency"]["Default"]


def test_the_defaults_fit_each_map_in_its_functions_reservation(template: dict[str, Any]) -> None:
    # Given the template's defaults and the bulk machine's PrepareSlices Map
    params = template["Parameters"]
    default = {name: int(p["Default"]) for name, p in params.items() if "Default" in p and p["Type"] == "Number"}
    asl = json.loads((REPO / "statemachine" / "bulk.asl.json").read_text(encoding="utf-8"))
    slices = asl["States"]["PrepareSlices"]["MaxConcurrency"]
    # Then every admitted bulk job's slices plus one invocation for its other steps fit the bulk
    # reservation (a slice past it is throttled, Lambda.TooManyRequestsException)
    assert default["MaxRunningBulkJobs"] * slices + 1 <= default["BulkReservedConcurrency"]
    # And every admitted summary's map calls at once fit the summarize reservation
    assert default["MaxRunningSummaries"] * default["SummaryMapConcurrency"] <= default["SummarizeReservedConcurrency"]


def test_bulk_tasks_retry_throttling_longer_than_one_slice(template: dict[str, Any]) -> None:
    # Given every Lambda task of the bulk machine and the bulk function's timeout (seconds)
    asl = json.loads((REPO / "statemachine" / "bulk.asl.json").read_text(encoding="utf-8"))
    states = {**asl["States"], **asl["States"]["PrepareSlices"]["ItemProcessor"]["States"]}
    timeout = template["Resources"]["BulkFunction"]["Properties"]["Timeout"]
    for name, state in states.items():
        if state["Type"] != "Task" or "lambda:invoke" not in state["Resource"]:
            continue
        # Then throttling has a retrier of its own whose nominal waits outlast one invocation
        [throttle] = [r for r in state["Retry"] if "Lambda.TooManyRequestsException" in r["ErrorEquals"]]
        assert throttle["ErrorEquals"] == ["Lambda.TooManyRequestsException"], name
        waits, delay = 0.0, float(throttle["IntervalSeconds"])
        for _ in range(throttle["MaxAttempts"]):
            waits += min(delay, throttle.get("MaxDelaySeconds", delay))
            delay *= throttle["BackoffRate"]
        assert throttle["MaxAttempts"] >= 10 and waits >= timeout, (name, waits)


def test_post_bulk_extractions_has_its_own_low_route_throttle(template: dict[str, Any]) -> None:
    settings = {(m["ResourcePath"], m["HttpMethod"]): m
                for m in template["Resources"]["Api"]["Properties"]["MethodSettings"]}
    bulk, default = settings[("/~1bulk-extractions", "POST")], settings[("/*", "*")]
    assert bulk["ThrottlingRateLimit"] < default["ThrottlingRateLimit"]
    assert bulk["ThrottlingBurstLimit"] < default["ThrottlingBurstLimit"]


def test_summarize_and_bulk_throttles_raise_alarms(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    for alarm, fn in (("SummarizeThrottlesAlarm", "SummarizeFunction"), ("BulkThrottlesAlarm", "BulkFunction")):
        props = resources[alarm]["Properties"]
        assert props["MetricName"] == "Throttles" and props["Dimensions"][0]["Value"] == {"Ref": fn}
