"""Bulk function: one step of a bulk extraction round per invocation (``statemachine/bulk.asl.json``).

``action="create_runs"`` (the machine's first state, issue 26) creates the job's runs from the
request the API stored (:func:`longdoc.bulk.intake.create_runs`); Harvest and Finish keep the
job's counters on its item for ``GET /bulk-extractions/{id}``.

Thin handler: parse the Step Functions payload (``action`` plus ids and counters), ask wiring
for the bulk adapters (:func:`longdoc.wiring.bulk_deps`), call one step of :mod:`longdoc.bulk.steps` /
:mod:`longdoc.bulk.runs`, return its small output. Errors propagate with their class name as
``errorType`` for the state machine's Retry/Catch; ``action="fail"`` records the caught error
on the job and fails the execution (or, entered again by a redrive, lets the round go on); it
builds only the stores. Prepare is three actions (``prepare`` plans the slices, ``prepare_slice``
builds one, ``prepared`` closes the round: :mod:`longdoc.bulk.slices`); ``harvest`` says when the
execution continues as new (:data:`~longdoc.bulk.plan.ROUNDS_PER_EXECUTION`); ``finish`` emits
``BulkDocumentsFailed`` (documents of the job that failed).

Adapters (:func:`longdoc.wiring.batch_client`): the Message Batches API through the ``anthropic``
SDK when the model is Claude (key from Secrets Manager on AWS or ``ANTHROPIC_API_KEY`` locally),
else local batches answering from the offline baseline under ``$LONGDOC_HOME/batches``. Items: DynamoDB (the stack's table)
on AWS, SQLite under ``$LONGDOC_HOME`` locally. Results: the bucket's ``results/`` prefix on AWS,
``$LONGDOC_HOME/results/`` locally.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from longdoc import wiring
from longdoc.bulk import intake, runs, steps
from longdoc.bulk.payloads import BulkTaskInput
from longdoc.bulk.plan import ROUNDS_PER_EXECUTION
from longdoc.config import get_settings
from longdoc.core.errors import BulkFailed
from longdoc.core.failures import innermost_error
from longdoc.core.payloads import StepError
from longdoc.observability import logger, metrics, tracer


def _prices() -> str | None:
    table = get_settings().price_table
    return str(table) if table else None


def _fail(event: BulkTaskInput) -> dict[str, Any]:
    """``RecordFailure``: record the error and fail the execution, or, entered again by a redrive, resume.

    Builds only the two stores (issue 26): the failure being recorded may be the model, the batch
    client or a secret that cannot be built (``ModelProvider=bedrock``, an unreadable key), and a
    failure step that needed them would fail the same way, leaving the job RUNNING."""
    error = event.error or StepError()
    if runs.fail_or_resume(runs.Stores(wiring.state_store(), wiring.bulk_store()), event.bulk_id, error.Error,
                           error.Cause, event.entered):
        logger.info("bulk redriven: the round goes on", extra={"round": event.round})
        return {"bulk_id": event.bulk_id, "round": event.round}
    logger.error("bulk failed", extra={"error": error.Error, "cause": error.Cause})  # the full cause: logs only
    raise BulkFailed(innermost_error(error.Error, error.Cause))


def _create_runs(event: BulkTaskInput) -> dict[str, Any]:
    """``CreateRuns`` (issue 26): the job's runs from the stored request, the job item last; the stores only
    (no model, batch client or index)."""
    created = intake.create_runs(runs.Stores(wiring.state_store(), wiring.bulk_store()), wiring.blob_store(),
                                 event.bulk_id)
    logger.info("bulk job created", extra={"runs": created["runs"], "rejected": created["rejected"]})
    return {"bulk_id": event.bulk_id, "round": event.round}


_STORE_ONLY: dict[str, Callable[[BulkTaskInput], dict[str, Any]]] = {"fail": _fail, "create_runs": _create_runs}
"""The actions that build only the stores (issue 26), so they work when the model cannot be built."""


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler
@metrics.log_metrics
@event_parser(model=BulkTaskInput)
def handler(event: BulkTaskInput, context: LambdaContext) -> dict[str, Any]:
    """Run ``event.action`` for ``event.bulk_id``; return that step's small output (ids, counters)."""
    logger.append_keys(bulk_id=event.bulk_id, action=event.action, round=event.round)
    if event.action in _STORE_ONLY:  # RecordFailure and CreateRuns build no model, batch client or index
        return _STORE_ONLY[event.action](event)
    deps = wiring.bulk_deps()
    if event.action == "prepare":
        return steps.plan_round(deps, event.bulk_id, event.round)
    if event.action == "prepare_slice":
        return steps.prepare_slice(deps, event.bulk_id, event.round, event.slice)
    if event.action == "prepared":
        return steps.close_round(deps, event.bulk_id, event.round)
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
        return _harvest(deps, event)
    return _finish(deps, event)


def _harvest(deps: steps.BulkDeps, event: BulkTaskInput) -> dict[str, Any]:
    """``Harvest``: apply the round's results, keep the job's counters (``GET`` reads them), emit the cache
    metrics, say whether to continue as new."""
    out = steps.harvest(deps, event.bulk_id, event.round)
    intake.record_counts(runs.Stores.of(deps), event.bulk_id, out, event.round)  # GET reads them
    cache = out["cache"]
    metrics.add_metric(name="BulkCacheReadInputTokens", unit=MetricUnit.Count, value=cache["read_tokens"])
    if cache["primed_miss"]:  # a primed round read nothing (steps.harvest logged it): count it
        metrics.add_metric(name="BulkPrimedRoundCacheMiss", unit=MetricUnit.Count, value=1)
    started = event.round if event.started_round is None else event.started_round
    return {**out, "cache_hit_rate": cache["hit_rate"],
            "continue_as_new": out["round"] - started >= ROUNDS_PER_EXECUTION}


def _finish(deps: steps.BulkDeps, event: BulkTaskInput) -> dict[str, Any]:
    """``Finish``: write the results and the job's final counters; emit ``BulkDocumentsFailed`` (the job's
    failed documents, 0 included)."""
    finished = runs.write_results(runs.Stores.of(deps), wiring.results_store(), event.bulk_id, _prices())
    intake.record_counts(runs.Stores.of(deps), event.bulk_id, finished, event.round, finished=True)
    # issue 26: a job whose documents failed is not silent; the alarm BulkDocumentsFailedAlarm watches this
    metrics.add_metric(name="BulkDocumentsFailed", unit=MetricUnit.Count, value=int(finished["failed"]))
    return finished
