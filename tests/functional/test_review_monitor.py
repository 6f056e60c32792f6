"""The review monitor function in AWS mode (moto DynamoDB): the metrics its three scheduled jobs publish.

Given the lease run of ``test_review_api`` with its items in the stack's table and four decisions made
through the API, the function prints one EMF document per point: the oldest pending item's age, one
``StratumAccuracy`` per stratum plus ``MinStratumAccuracy`` (what the alarm watches), and the
silent-source rate.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from longdoc import wiring
from longdoc.core.errors import ConfigError
from longdoc.local.engine import LocalContext
from longdoc.local.lambda_runtime import load_handler
from longdoc.eval.review_monitor import oldest_pending
from tests.functional.test_review_api import decide, items, stack  # noqa: F401 - stack is the fixture

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def run(job: str, capsys: pytest.CaptureFixture[str], emf: Callable[[str], list[dict[str, Any]]]) -> tuple[
        dict[str, Any], list[tuple[str, float, dict[str, str]]]]:
    """Invoke the handler with ``{"job": job}``; returns its summary and ``(metric, value, dimensions)`` printed."""
    capsys.readouterr()
    summary = load_handler("review_monitor").handler({"job": job}, LocalContext(function_name="longdoc-dev-ReviewMonitor"))
    points = []
    for doc in emf(capsys.readouterr().out):
        directive = doc["_aws"]["CloudWatchMetrics"][0]
        assert directive["Namespace"] == "longdoc/test-stack"
        dims = {d: doc[d] for d in directive["Dimensions"][0]}
        for metric in directive["Metrics"]:
            values = doc[metric["Name"]] if isinstance(doc[metric["Name"]], list) else [doc[metric["Name"]]]
            assert len(values) == 1  # one value per point
            points.append((metric["Name"], values[0], dims))
    return summary, points


@pytest.fixture
def monitor_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "longdoc/test-stack")
    monkeypatch.setenv("LONGDOC_REVIEW_MIN_STRATUM_LABELS", "1")
    wiring.reset()


def test_oldest_pending_item_age_and_count(stack: Any, monitor_env: None, capsys: pytest.CaptureFixture[str],  # noqa: F811
                                           emf_documents: Callable[[str], list[dict[str, Any]]]) -> None:
    # Given the run's queue (two items) snapshotted just now
    every = items()
    # When the scheduled job runs
    summary, points = run("oldest_pending", capsys, emf_documents)
    # Then it publishes the count and an age of a few seconds, with the service dimension
    by = {name: (value, dims) for name, value, dims in points}
    assert by["PendingReviewItems"] == (2, {"service": "longdoc"}) and summary["pending"] == 2
    assert 0 <= by["OldestPendingReviewSeconds"][0] < 120
    # And an hour later the age is an hour; a decided item leaves the queue
    later = datetime.now(UTC) + timedelta(hours=1)
    assert 3500 < oldest_pending(wiring.review_service(), later)[0][0].value < 3720
    assert decide(every["Cap On Liability"]["item_id"], action="accept")[0] == 201
    assert oldest_pending(wiring.review_service(), later)[1]["pending"] == 1


def test_accuracy_by_stratum_the_minimum_and_the_silent_source_rate(
        stack: Any, monitor_env: None, capsys: pytest.CaptureFixture[str],  # noqa: F811
        emf_documents: Callable[[str], list[dict[str, Any]]]) -> None:
    # Given four reviewed items: the found Governing Law accepted, the wrong Cap corrected, the possible
    # omission accepted as absent and Audit Rights marked absent
    every = items()
    decide(every["Governing Law"]["item_id"], action="accept")
    decide(every["Cap On Liability"]["item_id"], action="correct", quote="The landlord's liability is capped at $5,000.")
    decide(every["Termination For Convenience"]["item_id"], action="accept")
    decide(every["Audit Rights"]["item_id"], action="mark_absent")
    # When the daily accuracy job runs
    summary, points = run("accuracy", capsys, emf_documents)
    # Then each stratum is one StratumAccuracy metric with its dimensions, the Cap's (wrong) at 0
    strata = {(d["doc_type"], d["clause_type"], d["section"]): v for n, v, d in points if n == "StratumAccuracy"}
    assert strata == {("lease", "Governing Law", "front"): 1.0, ("lease", "Cap On Liability", "front"): 0.0,
                      ("lease", "Termination For Convenience", "absent"): 1.0,
                      ("lease", "Audit Rights", "absent"): 1.0}
    # And the alarm's MinStratumAccuracy is the lowest stratum with enough labels (min labels 1 here)
    assert [(n, v) for n, v, _ in points if n in ("MinStratumAccuracy", "ReviewedLabels")] == [
        ("MinStratumAccuracy", 0.0), ("ReviewedLabels", 4)]
    assert summary["min_stratum_accuracy"] == 0.0 and len(summary["alerts"]) == 1
    # When the weekly silent-source job runs / Then both absent labels were left not_found by the model
    summary, points = run("silent_source", capsys, emf_documents)
    assert [(n, v) for n, v, _ in points] == [("SilentSourceRate", 1.0), ("AbsentLabels", 2)]


def test_no_labels_publish_no_accuracy_and_an_unknown_job_is_refused(
        stack: Any, monitor_env: None, capsys: pytest.CaptureFixture[str],  # noqa: F811
        emf_documents: Callable[[str], list[dict[str, Any]]]) -> None:
    items()
    # When nothing was reviewed, the accuracy job publishes only the label count (no value to alarm on)
    assert run("accuracy", capsys, emf_documents)[1] == [("ReviewedLabels", 0, {"service": "longdoc"})]
    # And a schedule with a wrong job fails the invocation naming the known jobs
    with pytest.raises(ConfigError, match="oldest_pending, accuracy, silent_source"):
        load_handler("review_monitor").handler({"job": "daily"}, LocalContext(function_name="x"))
