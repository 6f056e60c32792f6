"""Issue 26 in the template and the ASL: one Claude budget, no table Scan, partition-free ARNs, expiry."""

from __future__ import annotations

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
