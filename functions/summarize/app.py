"""Summarize function: one step of a summary per invocation (plan, map one group, reduce one level, synthesize, fail).

Thin handler: validate this function's settings (:class:`~longdoc.config.SummarizeSettings`,
through :func:`longdoc.wiring.summary_deps`), parse the Step Functions payload, call one step of :mod:`longdoc.summarize.steps`, return its
small output (ids and counters; the stores hold the text). The final synthesis streams from
the Messages API (SSE), so a long answer never waits on one response near the Lambda timeout,
and stores the result. Errors propagate with their class name as ``errorType`` for the
state machine's Retry/Catch; ``action="fail"`` records the caught error and fails the execution.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from longdoc import wiring
from longdoc.core.errors import SummaryFailed
from longdoc.core.payloads import StepError
from longdoc.observability import logger, metrics, tracer
from longdoc.summarize import steps
from longdoc.summarize.payloads import SummarizeTaskInput
from longdoc.summarize.runs import emit


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_parser(model=SummarizeTaskInput)
def handler(event: SummarizeTaskInput, context: LambdaContext) -> dict[str, Any]:
    """Run ``event.action`` for ``event.summary_id``; return that step's small output."""
    logger.append_keys(summary_id=event.summary_id, action=event.action)
    deps = wiring.summary_deps()
    if event.action == "plan":
        return steps.plan(deps, event.summary_id)
    if event.action == "map":
        return steps.map_group(deps, event.summary_id, event.index)
    if event.action == "reduce":
        return steps.reduce_level(deps, event.summary_id, event.level)
    if event.action == "synthesize":
        return steps.synthesize(deps, event.summary_id, event.level, emit)
    error = event.error or StepError()
    steps.fail(deps, event.summary_id, error.Error, error.Cause)
    logger.error("summary failed", extra={"error": error.Error})
    raise SummaryFailed(f"{error.Error}: {error.Cause}"[:2000])
