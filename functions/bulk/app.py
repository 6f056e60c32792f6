"""Bulk function: one step of a bulk extraction round per invocation (``statemachine/bulk.asl.json``).

Thin handler: parse the Step Functions payload (``action`` plus ids and counters), build the
bulk adapters (:func:`bulk_deps`), call one step of :mod:`longdoc.bulk.steps` /
:mod:`longdoc.bulk.runs`, return its small output. Errors propagate with their class name as
``errorType`` for the state machine's Retry/Catch; ``action="fail"`` records the caught error
on the job and fails the execution (or, entered again by a redrive, lets the round go on).

Adapters: the Message Batches API through the ``anthropic`` SDK when the model is Claude
(:class:`~longdoc.adapters.batches.AnthropicBatches`, key from Secrets Manager on AWS or
``ANTHROPIC_API_KEY`` locally), else :class:`~longdoc.adapters.batches.LocalBatches` answering
from the offline baseline under ``$LONGDOC_HOME/batches``. Items: DynamoDB (the stack's table)
on AWS, SQLite under ``$LONGDOC_HOME`` locally. Results: the bucket's ``results/`` prefix on AWS,
``$LONGDOC_HOME/results/`` locally.
"""

from __future__ import annotations

import os
from dataclasses import replace
from functools import lru_cache
from typing import Any

from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.typing import LambdaContext

from longdoc import wiring
from longdoc.adapters.baseline import BASELINE_NAME
from longdoc.bulk import runs, steps
from longdoc.bulk.payloads import BulkTaskInput
from longdoc.bulk.plan import BulkLimits
from longdoc.config import ExtractFunctionSettings, function_settings, get_settings
from longdoc.core.errors import BulkFailed, ConfigError
from longdoc.core.payloads import StepError
from longdoc.observability import logger, metrics, tracer


def _batches(model: Any) -> Any:
    """The batch client: the real API for Claude, local batches for the offline baseline."""
    settings = get_settings()
    if wiring.model_name() == BASELINE_NAME:
        from longdoc.adapters.batches import LocalBatches

        return LocalBatches(model, settings.home / "batches")
    if settings.model_provider == "bedrock":
        raise ConfigError("bulk extraction uses the Anthropic Message Batches API; ModelProvider=bedrock has none "
                          "(deploy with ModelProvider=anthropic, or run extractions one by one)")
    from longdoc.adapters.batches import AnthropicBatches
    from longdoc.adapters.secrets import SecretKey

    key = SecretKey("ANTHROPIC_API_KEY", settings.anthropic_secret_name if settings.mode == "aws" else None)
    return AnthropicBatches(key(), base_url=os.environ.get("ANTHROPIC_BASE_URL"))


def results_store() -> Any:
    """Where result files go: the bucket on AWS (``results/`` prefix), ``$LONGDOC_HOME`` locally."""
    settings = get_settings()
    if settings.mode == "aws":
        return wiring.blob_store()
    from longdoc.adapters.blob import LocalBlobStore

    return LocalBlobStore(settings.home)


@lru_cache(maxsize=1)
def bulk_deps() -> steps.BulkDeps:
    """The bulk adapters for the current settings (once per process; ``bulk_deps.cache_clear()`` resets);
    every round's sessions take the extract function's options (tools, budgets, evidence rule)."""
    settings = function_settings(ExtractFunctionSettings)  # the extract function's settings, validated (required on AWS)
    extract = wiring.deps()
    batches = _batches(extract.model)
    limits = BulkLimits.from_env()
    if type(batches).__name__ == "LocalBatches" and not os.environ.get("LONGDOC_BULK_POLL_FIRST"):
        limits = replace(limits, poll_first=0)  # local batches have ended when created: poll at once
    if type(batches).__name__ == "LocalBatches" and not os.environ.get("LONGDOC_BULK_LIST_SETTLE"):
        limits = replace(limits, list_settle_seconds=0)  # a local batch is listed as soon as it exists
    return steps.BulkDeps(extract=extract, batches=batches, store=wiring.bulk_store(), limits=limits,
                            options=wiring.session_options(settings))


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
    deps = bulk_deps()
    if event.action == "prepare":
        return steps.prepare(deps, event.bulk_id, event.round)
    if event.action == "submit":
        steps.submit(deps, event.bulk_id, event.round)
        return {"bulk_id": event.bulk_id, "round": event.round, "polls": 0, "not_found": 0,
                "wait_seconds": deps.limits.poll_first}
    if event.action == "poll":
        return {"bulk_id": event.bulk_id, "round": event.round,
                **steps.poll(deps, event.bulk_id, event.round, event.polls, event.not_found)}
    if event.action == "harvest":
        return steps.harvest(deps, event.bulk_id, event.round)
    if event.action == "finish":
        return runs.write_results(runs.Stores.of(deps), results_store(), event.bulk_id, _prices())
    return _fail(deps, event)
