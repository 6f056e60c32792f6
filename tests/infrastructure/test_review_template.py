"""The review loop's AWS resources in ``template.yaml``: the monitor function's schedules and the alarms.

Read as data (no AWS): the three EventBridge schedules carry jobs the function knows, the alarms watch
metrics the domain publishes (names checked against :mod:`longdoc.eval.review_monitor`'s output) in the
namespace Powertools writes to, and both functions share one accept threshold.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from longdoc.eval.review_monitor import JOBS, accuracy, oldest_pending, silent_source
from tests.infrastructure.cfn import load_template, props


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template()


def _published_names() -> set[str]:
    """Every metric name the monitor's jobs publish (fabricated inputs that exercise each branch)."""
    class Empty:
        def queue(self, run_id: object) -> list[object]:
            return []
    report = {"strata": [{"doc_type": "d", "clause_type": "c", "section": "front", "labels": 9, "accuracy": 0.5}],
              "cases": 9, "alerts": [], "absent_labels": 2, "silent_source_rate": 1.0}
    points = (oldest_pending(Empty(), datetime.now(UTC))[0] + accuracy(report, 5)[0]  # type: ignore[arg-type]
              + silent_source(report)[0])
    return {p.name for p in points}


def test_the_monitor_runs_each_job_on_its_schedule(template: dict[str, Any]) -> None:
    # Given the review monitor function's events
    function = props(template["Resources"], "ReviewMonitorFunction")
    events = function["Events"]
    # Then every event is an EventBridge schedule whose input names a job the function knows:
    # the backlog every 15 minutes, accuracy daily, the silent-source rate weekly
    schedules = {json.loads(e["Properties"]["Input"])["job"]: e["Properties"]["Schedule"] for e in events.values()}
    assert {e["Type"] for e in events.values()} == {"Schedule"}
    assert schedules == {"oldest_pending": "rate(15 minutes)", "accuracy": "cron(0 6 * * ? *)",
                         "silent_source": "cron(30 6 ? * MON *)"}
    assert set(schedules) == set(JOBS)
    # And it reads the same accept threshold as the API's queue, and the minimum labels per stratum
    env = function["Environment"]["Variables"]
    api_env = props(template["Resources"], "ApiFunction")["Environment"]["Variables"]
    assert env["LONGDOC_REVIEW_ACCEPT_THRESHOLD"] == api_env["LONGDOC_REVIEW_ACCEPT_THRESHOLD"] == {
        "Ref": "ReviewAcceptThreshold"}
    assert env["LONGDOC_REVIEW_MIN_STRATUM_LABELS"] == {"Ref": "ReviewMinStratumLabels"}


@pytest.mark.parametrize(("alarm", "metric", "statistic", "operator", "threshold", "period"), [
    ("ReviewBacklogAgeAlarm", "OldestPendingReviewSeconds", "Maximum", "GreaterThanThreshold",
     {"Ref": "ReviewBacklogAlarmSeconds"}, 900),
    ("StratumAccuracyAlarm", "MinStratumAccuracy", "Minimum", "LessThanThreshold", 0.9, 86400),
    ("SilentSourceAlarm", "SilentSourceRate", "Minimum", "LessThanThreshold", 0.9, 604800),
])
def test_review_alarms_watch_metrics_the_monitor_publishes(template: dict[str, Any], alarm: str, metric: str,
                                                           statistic: str, operator: str, threshold: Any,
                                                           period: int) -> None:
    # Given one review alarm
    props_ = props(template["Resources"], alarm)
    # Then it watches a metric the domain publishes, in the functions' Powertools namespace with the service
    # dimension, with its statistic, threshold and period (at most 7 days: PutMetricAlarm's limit), and
    # notifies the alarm topic both ways; no data (nothing reviewed yet) is not a breach
    assert metric in _published_names()
    namespace = template["Globals"]["Function"]["Environment"]["Variables"]["POWERTOOLS_METRICS_NAMESPACE"]
    assert props_["Namespace"] == namespace
    assert props_["MetricName"] == metric and props_["Dimensions"] == [{"Name": "service", "Value": "longdoc"}]
    assert (props_["Statistic"], props_["ComparisonOperator"], props_["Threshold"]) == (statistic, operator, threshold)
    assert props_["Period"] == period and props_["Period"] * props_["EvaluationPeriods"] <= 604800
    assert props_["AlarmActions"] == props_["OKActions"] == [{"Ref": "AlarmTopic"}]
    assert props_["TreatMissingData"] == "notBreaching"
