"""API function: start extraction runs and read their results (IAM-authorised REST API).

Routes: ``POST /extractions`` (202 with the run id), ``GET /extractions/{id}``,
``GET /documents/{doc_id}``, ``GET /openapi.json``. Bodies are validated by pydantic through
Powertools' resolver; domain errors map to status codes in one place below.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from typing import Annotated, Any

import boto3
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Header
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, Field

from longdoc import wiring
from longdoc.config import get_settings
from longdoc.extract.catalogue import load_catalogue
from longdoc.core.documents import ready_document
from longdoc.extract.session import run_result, start_run
from longdoc.core.errors import LongdocError, NotFound, UnknownClauseType
from longdoc.observability import logger, metrics, tracer

app = APIGatewayRestResolver(enable_validation=True)


class ExtractionRequest(BaseModel):
    """Body of ``POST /extractions``."""

    doc_id: str = Field(min_length=1, max_length=128)
    doc_version: str | None = Field(None, min_length=1, max_length=64)
    clause_types: list[str] = Field(min_length=1, max_length=64)
    max_tokens: int | None = Field(None, ge=64, le=64000)
    top_k: int | None = Field(None, ge=1, le=50)
    facts: dict[str, str] = Field(default_factory=dict, description="exact values pinned into CASE_FACTS")


@lru_cache(maxsize=1)
def _sfn():
    return boto3.client("stepfunctions")


def _error(status: int, message: str, **extra: Any) -> Response:
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON,
                    body=json.dumps({"message": message, **extra}))


@app.exception_handler(RequestValidationError)
def _invalid(exc: RequestValidationError) -> Response:
    fields = [".".join(str(p) for p in e.get("loc", ()) if p != "body") for e in exc.errors()]
    return _error(400, "invalid request", fields=fields, errors=[e.get("msg") for e in exc.errors()])


@app.exception_handler(UnknownClauseType)
def _unknown(exc: UnknownClauseType) -> Response:
    return _error(400, str(exc), field="clause_types", suggestions=exc.suggestions)


@app.exception_handler(NotFound)
def _not_found(exc: NotFound) -> Response:
    return _error(404, str(exc))


@app.exception_handler(LongdocError)
def _bad(exc: LongdocError) -> Response:
    return _error(400, str(exc))


@app.post("/extractions")
def create_extraction(
    body: ExtractionRequest,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None,
) -> Response[dict[str, Any]]:
    """Start a run; the Idempotency-Key (or the body's hash) names it, so a retry starts nothing new.

    Reusing an Idempotency-Key with a different body is answered 422 (the rule of the IETF
    draft "The Idempotency-Key HTTP Header Field", draft-ietf-httpapi-idempotency-key-header,
    section 2.7: a key reused with a different payload SHOULD get 422), and no run starts.
    """
    settings = get_settings()
    state = wiring.state_store()
    body_hash = hashlib.sha256(body.model_dump_json().encode()).hexdigest()
    if idempotency_key:
        seed = idempotency_key
    else:
        # Without a key, the same body names the same run only for the same document version,
        # and a run that failed does not block a new attempt.
        doc = ready_document(state, body.doc_id, body.doc_version)
        seed = body.model_dump_json() + "@" + (doc.doc_version if doc else "none")
    run_id = "run-" + hashlib.sha256(seed.encode()).hexdigest()[:16]
    existing = state.get_run(run_id)
    if existing is not None and existing.request_hash and existing.request_hash != body_hash:
        return Response(status_code=422, content_type=content_types.APPLICATION_JSON,
                        body={"message": "Idempotency-Key was already used with a different request body",
                              "field": "Idempotency-Key", "run_id": run_id})
    attempt = 1
    while existing is not None and not idempotency_key and existing.status == "FAILED":
        attempt += 1
        run_id = "run-" + hashlib.sha256(f"{seed}#attempt{attempt}".encode()).hexdigest()[:16]
        existing = state.get_run(run_id)
    if existing is None:
        run = start_run(state, load_catalogue(settings.clause_catalogue), doc_id=body.doc_id, doc_version=body.doc_version,
                        clause_types=body.clause_types, model_name=wiring.model_name(settings),
                        max_tokens=body.max_tokens or settings.max_tokens, top_k=body.top_k or settings.top_k,
                        facts=body.facts, run_id=run_id)
        existing = run.model_copy(update={"request_hash": body_hash})
        state.put_run(existing)
    if existing.execution_arn is None:
        # First request, or a retry after start_execution failed: (re)start it. The execution
        # name is the run id, so Step Functions itself refuses a second, different execution.
        execution = _sfn().start_execution(
            stateMachineArn=settings.state_machine_arn, name=run_id,
            input=json.dumps({"run_id": existing.run_id, "doc_id": existing.doc_id, "iteration": 0,
                              "max_iterations": settings.max_iterations, "execution_iterations": 0,
                              "iterations_per_execution": settings.iterations_per_execution, "generation": 1}),
        )
        state.put_run(existing.model_copy(update={"execution_arn": execution["executionArn"], "status": "RUNNING",
                                                  "executions": [run_id]}))
        existing = state.get_run(run_id)
    return Response(status_code=202, content_type=content_types.APPLICATION_JSON,
                    body={"run_id": existing.run_id, "status": existing.status,
                          "execution_arn": existing.execution_arn})


@app.get("/extractions/<run_id>")
def get_extraction(run_id: str) -> dict[str, Any]:
    """Status, progress and (when done) the extractions with citations, usage per call and cost."""
    table = get_settings().price_table
    return run_result(wiring.state_store(), run_id, str(table) if table else None)


@app.get("/documents/<doc_id>")
def get_document(doc_id: str) -> dict[str, Any]:
    """The registry entry of a document's latest version."""
    record = wiring.state_store().get_document(doc_id)
    if record is None:
        raise NotFound(f"document {doc_id} does not exist")
    return record.model_dump()


@app.get("/openapi.json")
def openapi() -> Response[str]:
    """The API's OpenAPI document."""
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON,
                    body=app.get_openapi_json_schema(title="longdoc", version="0.1.0"))


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST, log_event=False)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Resolve an API Gateway REST event."""
    return app.resolve(event, context)
