"""Review monitor function: the review loop's CloudWatch metrics, on EventBridge schedules (template.yaml).

The schedule's input names the job (``{"job": "oldest_pending" | "accuracy" | "silent_source"}``, see
:mod:`longdoc.eval.review_monitor`); each point becomes one Embedded Metric Format document on stdout
(CloudWatch Logs turns it into a metric in the stack's namespace, dimension ``service`` plus the point's
own: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html).
Thin: the numbers come from the domain; an unknown job (a wrong schedule input) raises :class:`ConfigError`.
Returns the job's summary.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.utilities.typing import LambdaContext

from longdoc import wiring
from longdoc.config import ReviewMonitorSettings, function_settings
from longdoc.observability import logger, tracer
from longdoc.eval.review_monitor import run_job


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Run the job ``event["job"]`` and publish its metrics; settings are validated first (ConfigError)."""
    settings = function_settings(ReviewMonitorSettings)
    points, summary = run_job(str(event.get("job")), wiring.review_service(), settings.review_min_stratum_labels)
    service = os.environ.get("POWERTOOLS_SERVICE_NAME", "longdoc")
    for point in points:
        with single_metric(name=point.name, unit=MetricUnit(point.unit), value=point.value,
                           default_dimensions={"service": service, **point.dimensions}):
            pass
    logger.info("review monitor", extra=summary)
    return summary
