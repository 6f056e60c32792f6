"""Extract function: one Claude session per invocation (or records a failed run).

Thin handler: parse the Step Functions payload, call :func:`longdoc.domain.session.run_session`,
shape the small state output. Domain errors propagate with their class name as
``errorType`` so the state machine's Retry/Catch can match them.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from longdoc import wiring
from longdoc.domain.session import record_failure, run_session
from longdoc.events import ExtractTaskInput, ExtractTaskOutput
from longdoc.observability import logger, metrics, tracer


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_parser(model=ExtractTaskInput)
def handler(event: ExtractTaskInput, context: LambdaContext) -> dict[str, Any]:
    """Run one session for ``event.run_id`` and return :class:`ExtractTaskOutput` as a dict."""
    logger.append_keys(run_id=event.run_id, doc_id=event.doc_id, iteration=event.iteration)
    if event.action == "fail":
        error = event.error.Error if event.error else "Unknown"
        cause = event.error.Cause if event.error else ""
        record_failure(wiring.state_store(), event.run_id, error, cause)
        logger.error("run failed", extra={"error": error})
        metrics.add_metric(name="RunsFailed", unit=MetricUnit.Count, value=1)
        return ExtractTaskOutput(run_id=event.run_id, doc_id=event.doc_id, iteration=event.iteration,
                                 max_iterations=event.max_iterations, status="FAILED").model_dump()
    outcome = run_session(wiring.deps(), event.run_id)
    metrics.add_metric(name="Sessions", unit=MetricUnit.Count, value=1)
    if outcome.status == "DONE":
        metrics.add_metric(name="RunsSucceeded", unit=MetricUnit.Count, value=1)
    logger.info("session finished", extra={"status": outcome.status, "stop_reason": outcome.stop_reason,
                                           "pending": outcome.pending, "extracted": outcome.extracted})
    return ExtractTaskOutput(
        run_id=outcome.run_id, doc_id=outcome.doc_id, iteration=event.iteration + 1,
        max_iterations=event.max_iterations, status=outcome.status, stop_reason=outcome.stop_reason,
        sessions=outcome.sessions, checkpoint_version=outcome.checkpoint_version,
        extracted=outcome.extracted, pending=outcome.pending,
    ).model_dump()
