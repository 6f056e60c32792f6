"""Extract function: one Claude session per invocation (or records / resumes a failed run).

Thin handler: validate this function's settings (:class:`~longdoc.config.ExtractFunctionSettings`;
a bad variable fails the invocation naming it), parse the Step Functions payload, call
:func:`longdoc.extract.session.run_session` with a deadline derived from the Lambda's remaining
time (minus ``LONGDOC_TIME_MARGIN_SECONDS``), shape the small state output. Domain errors propagate with their class name as
``errorType`` so the state machine's Retry/Catch can match them.
"""

from __future__ import annotations

import os
import time
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from longdoc import wiring
from longdoc.config import ExtractFunctionSettings, function_settings
from longdoc.core.errors import ExtractionFailed, IterationCapReached
from longdoc.core.failures import innermost_error
from longdoc.extract.runs import fail_or_resume
from longdoc.extract.session import run_session
from longdoc.extract.payloads import ExtractTaskInput, ExtractTaskOutput
from longdoc.observability import logger, metrics, tracer

# SnapStart priming: while Lambda takes the snapshot of a published version, it sets
# AWS_LAMBDA_INITIALIZATION_TYPE=snap-start
# (https://docs.aws.amazon.com/lambda/latest/dg/snapstart-activate.html). Importing the
# Anthropic SDK then (~2.1 s, docs/benchmarks.md) puts it in the snapshot, so restored
# environments skip it. Elsewhere (local mode, tests) it stays lazy. No client, key or
# connection is created here: those must not be frozen into a snapshot.
if os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") == "snap-start":  # pragma: no cover - AWS only
    import anthropic  # noqa: F401


def _output(event: ExtractTaskInput, **fields: Any) -> dict[str, Any]:
    """The state output: the event's counters carried over (:meth:`ExecutionInput.counters`), ``fields`` on top."""
    return ExtractTaskOutput(**{**event.counters(), **fields}).model_dump()


def _enqueue_for_review(run_id: str) -> None:
    """Snapshot a finished run's items into the review queue (issue 29), so the backlog metric and
    ``GET /reviews`` see it without anyone opening the run first. Best effort: the run has already
    succeeded and ``GET /reviews?run_id=`` snapshots it on first read, so a failure here is logged
    and counted (``ReviewEnqueueFailed``), never raised."""
    try:
        items = wiring.review_service().enqueue(run_id)
    except Exception:  # noqa: BLE001 - the run's outcome must not depend on the review queue
        logger.exception("review enqueue failed; GET /reviews?run_id= will snapshot the run")
        metrics.add_metric(name="ReviewEnqueueFailed", unit=MetricUnit.Count, value=1)
        return
    metrics.add_metric(name="ReviewItemsEnqueued", unit=MetricUnit.Count, value=len(items))


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_parser(model=ExtractTaskInput)
def handler(event: ExtractTaskInput, context: LambdaContext) -> dict[str, Any]:
    """Run one session for ``event.run_id`` and return :class:`ExtractTaskOutput` as a dict.

    ``action="fail"``: record the caught error on the run and raise :class:`IterationCapReached`
    or :class:`ExtractionFailed` with the caught error's innermost ``"Type: message"`` as one line
    (the execution fails in this state, so a redrive re-enters it); on a redrive, resume the run
    instead and return ``CONTINUE`` with ``iteration`` 0.
    """
    settings = function_settings(ExtractFunctionSettings)
    logger.append_keys(run_id=event.run_id, doc_id=event.doc_id, iteration=event.iteration)
    if event.action == "fail":
        error = event.error.Error if event.error else "Unknown"
        cause = event.error.Cause if event.error else ""
        if fail_or_resume(wiring.state_store(), event.run_id, error, cause, event.entered) == "RESUMED":
            logger.warning("run resumed by a redrive", extra={"previous_error": error})
            metrics.add_metric(name="RunsRedriven", unit=MetricUnit.Count, value=1)
            return _output(event, iteration=0, status="CONTINUE", stop_reason="redrive")
        logger.error("run failed", extra={"error": error})
        metrics.add_metric(name="RunsFailed", unit=MetricUnit.Count, value=1)
        kind = IterationCapReached if error == "IterationCapReached" else ExtractionFailed
        raise kind(innermost_error(error, cause)[:2000])  # one line: no nested payloads or stack traces
    end = time.monotonic() + context.get_remaining_time_in_millis() / 1000
    deadline = end - settings.time_margin_seconds
    # A model call may run past the deadline, but must give up before the function is killed,
    # leaving time to answer (10 s, or half the margin when the margin is smaller).
    options = wiring.session_options(settings, deadline=deadline, execution=event.execution,
                                     call_deadline=end - min(10.0, settings.time_margin_seconds / 2))
    outcome = run_session(wiring.deps(), event.run_id, options)
    metrics.add_metric(name="Sessions", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="ModelCalls", unit=MetricUnit.Count, value=outcome.model_calls)
    metrics.add_metric(name="RejectedCitations", unit=MetricUnit.Count, value=outcome.rejected_citations)
    metrics.add_metric(name="CacheReadInputTokens", unit=MetricUnit.Count, value=outcome.cache_read_tokens)
    metrics.add_metric(name="CutBlocks", unit=MetricUnit.Count, value=outcome.cut_blocks)
    if outcome.status == "DONE":
        metrics.add_metric(name="RunsSucceeded", unit=MetricUnit.Count, value=1)
        _enqueue_for_review(event.run_id)
    logger.info("session finished", extra={"status": outcome.status, "stop_reason": outcome.stop_reason,
                                           "pending": outcome.pending, "extracted": outcome.extracted,
                                           "rejected_citations": outcome.rejected_citations,
                                           "cut_blocks": outcome.cut_blocks})
    return _output(event, iteration=event.iteration + 1, execution_iterations=event.execution_iterations + 1,
                   status=outcome.status, stop_reason=outcome.stop_reason, sessions=outcome.sessions,
                   checkpoint_version=outcome.checkpoint_version, extracted=outcome.extracted,
                   pending=outcome.pending, cut_blocks=outcome.cut_blocks)
