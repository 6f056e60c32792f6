"""Bulk routes of the API: ``POST /bulk-extractions`` (202 with the bulk id) and ``GET /bulk-extractions/{bulk_id}``.

A Powertools ``Router`` included by ``app.py`` (its tuple of route modules), so the routes share
the app's validation and domain-error mapping (404 unknown job, 400 unknown clause type, 429 at
the admission cap). Issue 26: the POST does constant work inside API Gateway's 29 s: it stores
the request (document list in the blob store) and starts the execution; the machine's first
state creates the runs (:mod:`longdoc.bulk.intake`). The job id is
``sha256(caller + Idempotency-Key)`` (or the caller plus the body's hash): a retried POST starts
nothing new, the same key with another body is answered 422, two callers never share a job,
and GET answers 404 for another caller's job. The execution is named after the job, so Step
Functions itself refuses a second one. Thin: each route calls :mod:`longdoc.bulk.intake`.

Bounds (issue 26, per item): 1-10,000 documents of 1-200 characters matching
:data:`~longdoc.bulk.runs.DOC_ID`, 1-64 clause types of 1-128 characters, ``max_tokens`` 64-64,000.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Header, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from caller import request_caller
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from longdoc import wiring
from longdoc.bulk.intake import (
    PAGE_LIMIT_MAX,
    StoredRequest,
    bulk_page,
    job_status,
    restart_execution,
    submit_request,
)
from longdoc.bulk.runs import DOC_ID, Stores, execution_input
from longdoc.config import BulkApiSettings, function_settings
from longdoc.core.admission import admission_of
from longdoc.core.errors import IdempotencyConflict
from longdoc.core.tenancy import scoped_seed
from longdoc.extract.catalogue import load_catalogue

router = APIGatewayRouter()

BulkDocId = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=DOC_ID.pattern)]
BulkClauseType = Annotated[str, StringConstraints(min_length=1, max_length=128)]


class BulkBody(BaseModel):
    """Body of ``POST /bulk-extractions``: ``{"clause_types": [...], "doc_ids": [...], "max_tokens"?}``.

    At most 10,000 documents per job (one manifest's worth; larger backfills are several jobs),
    each an id of 1-200 characters without spaces; 1-64 clause types of 1-128 characters. Any other
    field is refused (400 naming it): a misspelt option is not silently ignored."""

    model_config = ConfigDict(extra="forbid")

    clause_types: list[BulkClauseType] = Field(min_length=1, max_length=64)
    doc_ids: list[BulkDocId] = Field(min_length=1, max_length=10_000)
    max_tokens: int | None = Field(None, ge=64, le=64000, description="output tokens per model call")


def _stores() -> Stores:
    """The run store and the bulk item store (DynamoDB table on AWS, SQLite under ``home`` locally)."""
    function_settings(BulkApiSettings)  # validated at entry: the stores' variables named when wrong
    return Stores(wiring.state_store(), wiring.bulk_store())


def _start(name: str, payload: dict[str, Any]) -> None:
    """Start execution ``name``; one already started under this name is the retry's answer."""
    try:
        wiring.execution_starter("bulk").start_execution(name, payload)
    except Exception as exc:
        if type(exc).__name__ != "ExecutionAlreadyExists":
            raise


def _execution_gone() -> Callable[[str], bool] | None:
    """The bulk starter's liveness probe (local mode: the worker's pid,
    :meth:`longdoc.local.server.MachineStarter.execution_gone`); None on AWS, where an execution
    does not die with a process."""
    return getattr(wiring.execution_starter("bulk"), "execution_gone", None)


@router.post("/bulk-extractions")
def create_bulk_extraction(
    body: BulkBody,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key", min_length=1, max_length=255)] = None,
) -> Response[dict[str, Any]]:
    """Store the request and start the job (or answer the one this key started): 202 with ``bulk_id``,
    ``status`` (the job's: ``CREATING`` for a new one, else where it stands) and ``requested``
    (distinct ids); a job whose local worker died (``STALE``) is restarted from its stores
    (``restarted: true``); the runs and rejections (unknown or
    not-READY ids) are in ``GET``. 422 when the key was used with another body, 429 with
    ``Retry-After`` while ``max_running_bulk_jobs`` jobs run."""
    settings = function_settings(BulkApiSettings)
    caller = request_caller(router.current_event)
    canonical = json.dumps(body.model_dump(), sort_keys=True)
    body_hash = hashlib.sha256(canonical.encode()).hexdigest()
    bulk_id = "bulk-" + hashlib.sha256(scoped_seed(caller, idempotency_key or canonical).encode()).hexdigest()[:16]
    clause_types = [c.name for c in load_catalogue(settings.clause_catalogue).resolve_many(body.clause_types)]
    request = StoredRequest(bulk_id=bulk_id, owner=caller, clause_types=clause_types,
                            doc_ids=list(dict.fromkeys(body.doc_ids)), model=wiring.model_name(),
                            max_tokens=body.max_tokens or settings.max_tokens, top_k=settings.top_k)
    admission = admission_of(wiring.execution_starter("bulk"), settings.max_running_bulk_jobs,
                             settings.retry_after_seconds, "bulk jobs")
    try:
        item = submit_request(_stores(), wiring.blob_store(), request, body_hash, admission)
    except IdempotencyConflict:
        return Response(status_code=422, content_type=content_types.APPLICATION_JSON,
                        body={"message": "Idempotency-Key was already used with a different request body",
                              "field": "Idempotency-Key", "bulk_id": bulk_id})
    stores, gone = _stores(), _execution_gone()
    restarted = job_status(stores, bulk_id, gone) == "STALE"
    if restarted:  # local: the worker died; a new execution continues from the stores
        _start(*restart_execution(stores.store, bulk_id))
    else:
        _start(bulk_id, execution_input(bulk_id))
    return Response(status_code=202, content_type=content_types.APPLICATION_JSON,
                    body={"bulk_id": bulk_id, "status": job_status(stores, bulk_id, gone),
                          "requested": item.get("requested"), **({"restarted": True} if restarted else {})})


@router.get("/bulk-extractions/<bulk_id>")
def get_bulk_extraction(
    bulk_id: str,
    limit: Annotated[int, Query(ge=1, le=PAGE_LIMIT_MAX)] = 100,
    next_token: Annotated[str | None, Query(max_length=600)] = None,
) -> dict[str, Any]:
    """The job's counters (done/failed/pending as of its last round), status, rejections and one page
    of documents (``limit``, ``next_token``); the results file once it has finished."""
    function_settings(BulkApiSettings)
    return bulk_page(_stores(), wiring.blob_store(), bulk_id, caller=request_caller(router.current_event),
                     limit=limit, next_token=next_token, execution_gone=_execution_gone())
