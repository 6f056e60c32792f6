"""API function: start extraction runs and read their results (IAM-authorised REST API).

Routes: ``POST /extractions`` (202 with the run id), ``GET /extractions/{id}``,
``GET /documents/{doc_id}``, ``GET /openapi.json``. Thin: bodies are validated by pydantic
through Powertools' resolver, each route calls one service function
(:func:`longdoc.extract.runs.start_extraction`, :func:`longdoc.extract.runs.run_result`),
and domain errors map to status codes in one place (:func:`_domain_error`).
"""

from __future__ import annotations

import json
import sys
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Header
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import Field

from longdoc import wiring
from longdoc.adapters.executions import StepFunctionsStarter
from longdoc.config import ApiFunctionSettings, function_settings
from longdoc.core.errors import ConfigError, LongdocError, NotFound, UnknownClauseType
from longdoc.core.ports import ExecutionStarter
from longdoc.extract.catalogue import load_catalogue
from longdoc.extract.runs import IdempotencyConflict, RunRequest, run_result, start_extraction
from longdoc.observability import logger, metrics, tracer

sys.path.append(str(Path(__file__).parent))  # the task root, as in Lambda, also when loaded by path (local, tests)
from summary_routes import router as summary_router  # noqa: E402 - POST/GET /summaries, this function's own module

app = APIGatewayRestResolver(enable_validation=True)
app.include_router(summary_router)  # POST /summaries, GET /summaries/{id}: functions/api/summary_routes.py


class ExtractionRequest(RunRequest):  # a RunRequest with the API's bounds; same JSON, so same run ids
    """Body of ``POST /extractions``."""

    doc_id: str = Field(min_length=1, max_length=128)
    doc_version: str | None = Field(None, min_length=1, max_length=64)
    clause_types: list[str] = Field(min_length=1, max_length=64)
    max_tokens: int | None = Field(None, ge=64, le=64000)
    top_k: int | None = Field(None, ge=1, le=50)
    facts: dict[str, str] = Field(default_factory=dict, description="exact values pinned into CASE_FACTS")


def _settings() -> ApiFunctionSettings:
    """This function's settings (validated once per process; :class:`ConfigError` names a bad variable)."""
    return function_settings(ApiFunctionSettings)


@lru_cache(maxsize=1)
def _starter() -> ExecutionStarter:
    """The Step Functions starter, built on first use (never at import) and kept by warm invocations."""
    arn = _settings().state_machine_arn
    if not arn:
        raise ConfigError("LONGDOC_STATE_MACHINE_ARN must be set to start extraction runs")
    return StepFunctionsStarter(arn)


def _error(status: int, message: str, **extra: Any) -> Response:
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON,
                    body=json.dumps({"message": message, **extra}))


@app.exception_handler(RequestValidationError)
def _invalid(exc: RequestValidationError) -> Response:
    fields = [".".join(str(p) for p in e.get("loc", ()) if p != "body") for e in exc.errors()]
    return _error(400, "invalid request", fields=fields, errors=[e.get("msg") for e in exc.errors()])


@app.exception_handler(LongdocError)
def _domain_error(exc: LongdocError) -> Response:
    """Every domain error's HTTP answer: 422 key reuse, 400 unknown clause type, 404 not found, else 400.

    Bodies are ``{"message", ...}`` with the field at fault where there is one.
    """
    if isinstance(exc, IdempotencyConflict):
        # body left to the resolver's JSON serialiser, as this answer has always been
        return Response(status_code=422, content_type=content_types.APPLICATION_JSON,
                        body={"message": str(exc), "field": "Idempotency-Key", "run_id": exc.run_id})
    if isinstance(exc, UnknownClauseType):
        return _error(400, str(exc), field="clause_types", suggestions=exc.suggestions)
    if isinstance(exc, NotFound):
        return _error(404, str(exc))
    return _error(400, str(exc))


@app.post("/extractions")
def create_extraction(
    body: ExtractionRequest,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None,
) -> Response[dict[str, Any]]:
    """Start a run; the Idempotency-Key (or the body's hash) names it, so a retry starts nothing new.

    Reusing an Idempotency-Key with a different body is answered 422 and no run starts
    (see :func:`longdoc.extract.runs.start_extraction`).
    """
    settings = _settings()
    run = start_extraction(body, state=wiring.state_store(), catalogue=load_catalogue(settings.clause_catalogue),
                           settings=settings, starter=_starter(), model_name=wiring.model_name(),
                           idempotency_key=idempotency_key)
    return Response(status_code=202, content_type=content_types.APPLICATION_JSON,
                    body={"run_id": run.run_id, "status": run.status, "execution_arn": run.execution_arn})


@app.get("/extractions/<run_id>")
def get_extraction(run_id: str) -> dict[str, Any]:
    """Status, progress and (when done) the extractions with citations, usage per call and cost."""
    table = _settings().price_table
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
    """Resolve an API Gateway REST event; settings are validated first (:class:`ConfigError` fails the invocation)."""
    _settings()
    return app.resolve(event, context)
