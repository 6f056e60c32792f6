"""Bulk routes of the API: ``POST /bulk-extractions`` (202 with the bulk id) and ``GET /bulk-extractions/{bulk_id}``.

A Powertools ``Router`` included by ``app.py`` (its tuple of route modules), so the routes share
the app's validation and domain-error mapping (404 unknown job, 400 unknown clause type or no
document accepted). The job id comes from the ``Idempotency-Key`` (or the body's hash): a
retried POST starts nothing new; the same key with another body is answered 422. The execution
of ``statemachine/bulk.asl.json`` is named after the job, so Step Functions itself refuses a
second one. Thin: each route calls :mod:`longdoc.bulk.runs`.
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Header
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from pydantic import BaseModel, Field

from longdoc import wiring
from longdoc.bulk.runs import Selection, Stores, bulk_status, execution_input, start_bulk
from longdoc.config import BulkApiSettings, function_settings
from longdoc.extract.catalogue import load_catalogue

router = APIGatewayRouter()


class BulkBody(BaseModel):
    """Body of ``POST /bulk-extractions``: ``{"clause_types": [...], "doc_ids": [...], "max_tokens"?}``.

    At most 10,000 documents per job (one manifest's worth; larger backfills are several jobs)."""

    clause_types: list[str] = Field(min_length=1, max_length=100)
    doc_ids: list[str] = Field(min_length=1, max_length=10_000)
    max_tokens: int | None = Field(None, ge=64, le=64000, description="output tokens per model call")


def _stores() -> Stores:
    """The run store and the bulk item store (DynamoDB table on AWS, SQLite under ``home`` locally)."""
    function_settings(BulkApiSettings)  # validated at entry: the stores' variables named when wrong
    return Stores(wiring.state_store(), wiring.bulk_store())


def _start(bulk_id: str) -> None:
    """Start the job's execution; one already started under this name is the retry's answer."""
    try:
        wiring.execution_starter("bulk").start_execution(bulk_id, execution_input(bulk_id))
    except Exception as exc:
        if type(exc).__name__ != "ExecutionAlreadyExists":
            raise


@router.post("/bulk-extractions")
def create_bulk_extraction(
    body: BulkBody,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key", min_length=1, max_length=255)] = None,
) -> Response[dict[str, Any]]:
    """Start a bulk job (or return the one this key started): 202 with ``bulk_id``, ``documents`` and
    ``rejected`` (unknown or not-READY ids with their reason); 422 when the key was used with
    another body."""
    settings = function_settings(BulkApiSettings)
    canonical = json.dumps(body.model_dump(), sort_keys=True)
    body_hash = hashlib.sha256(canonical.encode()).hexdigest()
    bulk_id = "bulk-" + hashlib.sha256((idempotency_key or canonical).encode()).hexdigest()[:16]
    stores = _stores()
    pk = f"bulk#{bulk_id}"
    stores.store.put_if_absent(pk, "request", {"hash": body_hash, "rejected": None})
    request = stores.store.get(pk, "request") or {}
    if request.get("hash") != body_hash:
        return Response(status_code=422, content_type=content_types.APPLICATION_JSON,
                        body={"message": "Idempotency-Key was already used with a different request body",
                              "field": "Idempotency-Key", "bulk_id": bulk_id})
    if stores.store.get(pk, "job") is None:
        accepted = start_bulk(stores, load_catalogue(settings.clause_catalogue), bulk_id,
                              Selection(doc_ids=list(dict.fromkeys(body.doc_ids))), clause_types=body.clause_types,
                              model_name=wiring.model_name(), max_tokens=body.max_tokens or settings.max_tokens,
                              top_k=settings.top_k)
        request["rejected"] = [{"where": r.where, "reason": r.reason} for r in accepted.rejected]
        stores.store.put(pk, "request", request)
    _start(bulk_id)
    job = stores.store.get(pk, "job") or {}
    return Response(status_code=202, content_type=content_types.APPLICATION_JSON,
                    body={"bulk_id": bulk_id, "documents": job.get("runs", 0), "rejected": request.get("rejected") or []})


@router.get("/bulk-extractions/<bulk_id>")
def get_bulk_extraction(bulk_id: str) -> dict[str, Any]:
    """Counts (done/failed/pending), rounds, each document's run status, ``cost_usd`` so far (batch
    prices) and ``sync_cost_usd`` (the same tokens at synchronous prices)."""
    settings = function_settings(BulkApiSettings)
    return bulk_status(_stores(), bulk_id, str(settings.price_table) if settings.price_table else None)
