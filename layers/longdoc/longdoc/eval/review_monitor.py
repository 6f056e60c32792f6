"""The review loop's numbers for CloudWatch: the oldest pending item, accuracy by stratum, the silent-source rate.

Pure over :class:`~longdoc.review.ReviewService`: each job returns :class:`MetricPoint` values and a
summary; the review monitor function (``functions/review_monitor/app.py``) publishes them as
CloudWatch metrics (Embedded Metric Format) and the template's alarms watch them
(docs/operations.md, "The review loop on AWS"). Jobs:

- ``oldest_pending`` (every 15 minutes): ``OldestPendingReviewSeconds`` (seconds since the oldest item
  of the queue was snapshotted; 0 for an empty queue) and ``PendingReviewItems`` (count);
- ``accuracy`` (daily): ``longdoc eval accuracy`` over every reviewed label
  (:meth:`~longdoc.review.ReviewService.export_gold` then :func:`longdoc.eval.accuracy.evaluate_accuracy`):
  one ``StratumAccuracy`` per stratum (dimensions ``doc_type``, ``clause_type``, ``section``), and
  ``MinStratumAccuracy``, the lowest accuracy of the strata with at least ``min_labels`` labels (the one
  alarm: per-stratum alarms cannot be templated for strata not known at deploy time), plus
  ``ReviewedLabels``;
- ``silent_source`` (weekly): ``SilentSourceRate`` (share of reviewed-absent labels the model left
  ``not_found``) and ``AbsentLabels``.

A job with no labels publishes only the label count (0), so an alarm on the accuracy sees no data
(not a breach) rather than a made-up value.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from longdoc.core.errors import ConfigError
from longdoc.review.service import ReviewService

Job = Literal["oldest_pending", "accuracy", "silent_source"]
JOBS: tuple[str, ...] = ("oldest_pending", "accuracy", "silent_source")


@dataclass(frozen=True)
class MetricPoint:
    """One CloudWatch value: ``unit`` is a CloudWatch unit name (``Seconds``, ``Count``, ``None``);
    ``dimensions`` come on top of the function's ``service`` dimension."""

    name: str
    value: float
    unit: str
    dimensions: dict[str, str] = field(default_factory=dict)


def _age_seconds(created_at: str, now: datetime) -> float | None:
    """Seconds from an item's ``created_at`` (UTC ISO 8601, ``Z``) to ``now``; None when unreadable."""
    try:
        then = datetime.fromisoformat(created_at.replace("Z", "+00:00"))
    except ValueError:
        return None
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return max(0.0, (now - then).total_seconds())


def oldest_pending(service: ReviewService, now: datetime) -> tuple[list[MetricPoint], dict[str, Any]]:
    """``OldestPendingReviewSeconds`` and ``PendingReviewItems`` over the queue (every run snapshotted)."""
    queue = service.queue(None)
    aged = [(age, i.item_id) for i in queue if (age := _age_seconds(i.created_at, now)) is not None]
    oldest = max(aged, default=(0.0, None))
    points = [MetricPoint("OldestPendingReviewSeconds", round(oldest[0], 3), "Seconds"),
              MetricPoint("PendingReviewItems", float(len(queue)), "Count")]
    return points, {"pending": len(queue), "oldest_item": oldest[1], "oldest_age_seconds": round(oldest[0], 3)}


def labelled(service: ReviewService, min_labels: int, workdir: Path) -> dict[str, Any] | None:
    """The accuracy report over every reviewed label (None when there is none): exported to ``workdir``."""
    from longdoc.eval.accuracy import evaluate_accuracy

    gold = workdir / "reviewed.jsonl"
    if service.export_gold(gold)["written"] == 0:
        return None
    return evaluate_accuracy(gold, min_labels=min_labels, threshold=service.threshold)


def accuracy(report: dict[str, Any] | None, min_labels: int) -> tuple[list[MetricPoint], dict[str, Any]]:
    """``StratumAccuracy`` per stratum, ``MinStratumAccuracy`` over strata with ``min_labels`` labels, ``ReviewedLabels``."""
    if report is None:
        return [MetricPoint("ReviewedLabels", 0.0, "Count")], {"labels": 0, "strata": 0, "min_stratum_accuracy": None}
    strata = report["strata"]
    points = [MetricPoint("StratumAccuracy", float(s["accuracy"]), "None",
                          {"doc_type": s["doc_type"], "clause_type": s["clause_type"], "section": s["section"]})
              for s in strata]
    counted = [s["accuracy"] for s in strata if s["labels"] >= min_labels]
    lowest = min(counted) if counted else None
    if lowest is not None:
        points.append(MetricPoint("MinStratumAccuracy", float(lowest), "None"))
    points.append(MetricPoint("ReviewedLabels", float(report["cases"]), "Count"))
    return points, {"labels": report["cases"], "strata": len(strata), "min_stratum_accuracy": lowest,
                    "alerts": report["alerts"]}


def silent_source(report: dict[str, Any] | None) -> tuple[list[MetricPoint], dict[str, Any]]:
    """``SilentSourceRate`` (when there are absent labels) and ``AbsentLabels``."""
    absent = report["absent_labels"] if report else 0
    rate = report["silent_source_rate"] if report else None
    points = [MetricPoint("AbsentLabels", float(absent), "Count")]
    if rate is not None:
        points.insert(0, MetricPoint("SilentSourceRate", float(rate), "None"))
    return points, {"absent_labels": absent, "silent_source_rate": rate}


def run_job(job: str, service: ReviewService, min_labels: int,
            now: datetime | None = None) -> tuple[list[MetricPoint], dict[str, Any]]:
    """Run one monitor job (:data:`JOBS`); returns its points and a summary (``{"job", ...}``).

    Raises :class:`~longdoc.core.errors.ConfigError` naming the job and the known ones (the job comes from
    the schedule's input in ``template.yaml``: a wrong one is a deployment's configuration error).
    """
    if job not in JOBS:
        raise ConfigError(f"unknown review monitor job {job!r}: expected one of {', '.join(JOBS)}")
    if job == "oldest_pending":
        points, summary = oldest_pending(service, now or datetime.now(UTC))
    else:
        with tempfile.TemporaryDirectory(prefix="longdoc-review-") as tmp:  # Lambda: under /tmp
            report = labelled(service, min_labels, Path(tmp))
        points, summary = accuracy(report, min_labels) if job == "accuracy" else silent_source(report)
    return points, {"job": job, **summary}
