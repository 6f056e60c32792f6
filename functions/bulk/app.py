"""Bulk function: one step of a bulk extraction round per invocation (``statemachine/bulk.asl.json``).

``action="create_runs"`` (the machine's first state, issue 26) creates the job's runs from the
request the API stored (:func:`longdoc.bulk.intake.create_runs`); Harvest and Finish keep the
job's counters on its item for ``GET /bulk-extractions/{id}``.

Thin handler: parse the Step Functions payload (``action`` plus ids and counters), ask wiring
for the bulk adapters (:func:`longdoc.wiring.bulk_deps`), call one step of :mod:`longdoc.bulk.steps` /
:mod:`longdoc.bulk.runs`, return its small output. Errors propagate with their class name as
``errorType`` for the state machine's Retry/Catch; ``action="fail"`` records the caught error
on the job and fails the execution (or, entered again by a redrive, lets the round go on).

Adapters (:func:`longdoc.wiring.batch_client`): the Message Batches API through the ``anthropic``
SDK when the model is Claude (key from Secrets Manager on AWS or ``ANTHROPIC_API_KEY`` locally),
else local batches answering from the offline baseline under ``$LONGDOC_HOME/batches``. Items: DynamoDB (the stack's table)
on AWS, SQLite under ``$LONGDOC_HOME`` locally. Results: the bucket's ``results/`` prefix on AWS,
``$LONGDOC_HOME/results/`` locally.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from longdoc import wiring
from longdoc.bulk import intake, runs, steps
from longdoc.bulk.payloads import BulkTaskInput
from longdoc.config import get_settings
from longdoc.core.errors import BulkFailed
from longdoc.core.payloads import StepError
from longdoc.observability import logger, metrics, tracer


def _prices() -> str | None:
    table = get_settings().price_table
    return str(table) if table else None


def _fail(deps: steps.BulkDeps, event: BulkTaskInput) -> dict[str, Any]:
    """``RecordFailure``: record the error and fail the execution, or, entered again by a redrive, resume."""
    error = event.error or StepError()
    if runs.fail_or_resume(runs.Stores.of(deps), event.bulk_id, error.Error, error.Cause, event.entered):
        logger.info("bulk redriven: the round goes on", extra={"round": event.round})
        return {"bulk_id": event.bulk_id, "round": event.round}
    logger.error("bulk failed", extra={"error": error.Error})
    raise BulkFailed(f"{error.Error}: {error.Cause}"[:2000])


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_parser(model=BulkTaskInput)
def handler(event: BulkTaskInput, context: LambdaContext) -> dict[str, Any]:
    """Run ``event.action`` for ``event.bulk_id``; return that step's small output (ids, counters)."""
    logger.append_keys(bulk_id=event.bulk_id, action=event.action, round=event.round)
    if event.action == "create_runs":  # issue 26: the stores only, no model, batch client or index
        created = intake.create_runs(runs.Stores(wiring.state_store(), wiring.bulk_store()), wiring.blob_store(),
                                     event.bulk_id)
        logger.info("bulk job created", extra={"runs": created["runs"], "rejected": created["rejected"]})
        return {"bulk_id": event.bulk_id, "round": event.round}
    deps = wiring.bulk_deps()
    if event.action == "prepare":
        return steps.prepare(deps, event.bulk_id, event.round)
    if event.action == "prime":
        primed = steps.prime(deps, event.bulk_id, event.round)
        return {"bulk_id": event.bulk_id, "round": event.round, **primed, "polls": 0, "not_found": 0,
                "wait_seconds": deps.limits.poll_first}
    if event.action == "poll_prime":
        return {"bulk_id": event.bulk_id, "round": event.round,
                **steps.poll_prime(deps, event.bulk_id, event.round, event.polls, event.not_found)}
    if event.action == "submit":
        steps.submit(deps, event.bulk_id, event.round)
        return {"bulk_id": event.bulk_id, "round": event.round, "polls": 0, "not_found": 0,
                "wait_seconds": deps.limits.poll_first}
    if event.action == "poll":
        return {"bulk_id": event.bulk_id, "round": event.round,
                **steps.poll(deps, event.bulk_id, event.round, event.polls, event.not_found)}
    if event.action == "harvest":
        out = steps.harvest(deps, event.bulk_id, event.round)
        intake.record_counts(runs.Stores.of(deps), event.bulk_id, out, event.round)  # GET reads them
        cache = out["cache"]
        metrics.add_metric(name="BulkCacheReadInputTokens", unit=MetricUnit.Count, value=cache["read_tokens"])
        if cache["primed_miss"]:  # a primed round read nothing (steps.harvest logged it): count it
            metrics.add_metric(name="BulkPrimedRoundCacheMiss", unit=MetricUnit.Count, value=1)
        return {**out, "cache_hit_rate": cache["hit_rate"]}
    if event.action == "finish":
        written = runs.write_results(runs.Stores.of(deps), wiring.results_store(), event.bulk_id, _prices())
        intake.record_counts(runs.Stores.of(deps), event.bulk_id, written, event.round, finished=True)
        return written
    return _fail(deps, event)
