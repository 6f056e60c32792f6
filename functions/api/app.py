"""API function: start extraction runs and read their results (IAM-authorised REST API).

Routes: ``POST /extractions`` (202 with the run id), ``GET /extractions/{id}``,
``GET /documents/{doc_id}``, ``GET /openapi.json``. Thin: bodies are validated by pydantic
through Powertools' resolver, each route calls one service function
(:func:`longdoc.extract.runs.start_extraction`, :func:`longdoc.extract.runs.run_result`),
and domain errors map to status codes in one place (:func:`_domain_error`).

Bounds: at most 64 clause types of 1-128 characters, at most 32 facts with keys of 1-64 and
values of at most 1,000 characters, an Idempotency-Key of 1-255 characters. Admission
control: with ``LONGDOC_MAX_RUNNING_EXTRACTIONS`` set, a new run is refused with 429 and
``Retry-After`` while that many executions run. Every ``POST`` logs the run id with the
caller's IAM identity (user ARN, account, caller id, source IP) from the request context.
Tenancy (issue 26): run ids are scoped by that caller (``sha256(caller + key)``,
:mod:`longdoc.core.tenancy`) and ``GET /extractions/{id}`` answers 404 for another caller's run.
``GET /extractions/{id}`` first records a ``RUNNING`` run whose execution was stopped or
timed out as failed (:func:`longdoc.extract.runs.reconcile_run`).
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Header
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from longdoc import wiring
from longdoc.config import ApiFunctionSettings, function_settings
from longdoc.core.errors import (
    OUTAGE_RETRY_AFTER_SECONDS,
    OUTAGES,
    ConfigError,
    CorrectionNotVerbatim,
    DecisionConflict,
    IdempotencyConflict,
    LongdocError,
    NotFound,
    TooManyRuns,
    UnknownClauseType,
)
from longdoc.extract.catalogue import load_catalogue
from longdoc.core.admission import Admission, admission_of
from longdoc.core.tenancy import visible_to
from longdoc.extract.runs import (  # ExtractionRequest: the body of POST /extractions (also the MCP extract tool's)
    ExtractionRequest,
    reconcile_run,
    run_result,
    start_extraction,
)
from longdoc.observability import logger, metrics, tracer


app = APIGatewayRestResolver(enable_validation=True)
sys.path.insert(0, str(Path(__file__).resolve().parent))  # sibling route modules, as in Lambda's task root
from caller import request_caller  # noqa: E402 - a sibling module, importable once the path is set
for _routes in ("triage_routes", "summary_routes", "bulk_routes", "review_routes"):  # /triage; /summaries; /bulk-extractions; /reviews
    app.include_router(importlib.import_module(_routes).router)


def _settings() -> ApiFunctionSettings:
    """This function's settings (validated once per process; :class:`ConfigError` names a bad variable)."""
    return function_settings(ApiFunctionSettings)


def _error(status: int, message: str, **extra: Any) -> Response:
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON,
                    body=json.dumps({"message": message, **extra}))


@app.exception_handler(RequestValidationError)
def _invalid(exc: RequestValidationError) -> Response:
    """400 ``{"message": "invalid request", "fields", "errors"}``; a body that is not JSON names ``body``."""
    fields = [_field(e.get("loc", ())) for e in exc.errors()]
    return _error(400, "invalid request", fields=fields, errors=[e.get("msg") for e in exc.errors()])


def _field(loc: tuple[Any, ...] | list[Any]) -> str:
    """A validation error's location as a dotted field name; the whole body (JSON that did not parse) is ``body``."""
    names = [str(p) for p in loc if p != "body"]
    return ".".join(names) if names and not (len(names) == 1 and names[0].isdigit()) else "body"


@app.not_found
def _no_route(exc: Exception) -> Response:
    """404 with the same ``{"message"}`` body as every other error, naming the method and path."""
    return _error(404, f"no such route: {app.current_event.http_method} {app.current_event.path}")


@app.exception_handler(UnicodeDecodeError)
def _not_utf8(exc: UnicodeDecodeError) -> Response:
    """A body that is not UTF-8 (JSON must be, RFC 8259 section 8.1) is the caller's error: 400, not 500."""
    return _error(400, "invalid request", fields=["body"], errors=[f"body is not UTF-8 text: {exc.reason}"])


@app.exception_handler(LongdocError)
def _domain_error(exc: LongdocError) -> Response:
    """Every domain error's HTTP answer: 422 key reuse, 400 unknown clause type, 404 not found, 409 a stale
    review decision (another came first), 422 a correction that is not verbatim, 500 a configuration error
    of the deployment (a missing key setting: the caller can do nothing about it; logged), 503 with
    ``Retry-After`` an outage of a service the product depends on (:data:`~longdoc.core.errors.OUTAGES`:
    Claude 429/529/5xx, Voyage, Pinecone after their retries; counted in the ``DependencyOutage`` metric,
    and the API's 5xx alarm sees it), else 400.

    Bodies are ``{"message", ...}`` with the field at fault where there is one.
    """
    if isinstance(exc, TooManyRuns):
        logger.warning("run refused by admission control", extra={"cap": exc.cap, **_identity()})
        return Response(status_code=429, content_type=content_types.APPLICATION_JSON,
                        headers={"Retry-After": str(exc.retry_after_seconds)},
                        body=json.dumps({"message": str(exc), "retry_after_seconds": exc.retry_after_seconds}))
    if isinstance(exc, IdempotencyConflict):
        # body left to the resolver's JSON serialiser, as this answer has always been
        return Response(status_code=422, content_type=content_types.APPLICATION_JSON,
                        body={"message": str(exc), "field": "Idempotency-Key", "run_id": exc.run_id})
    if isinstance(exc, UnknownClauseType):
        return _error(400, str(exc), field="clause_types", suggestions=exc.suggestions)
    if isinstance(exc, NotFound):
        return _error(404, str(exc))
    if isinstance(exc, DecisionConflict):
        return _error(409, str(exc), field="expected_version")
    if isinstance(exc, CorrectionNotVerbatim):
        return _error(422, str(exc), field="quote")
    if isinstance(exc, OUTAGES):
        logger.warning("request failed on a dependency outage", extra={"error": type(exc).__name__})
        metrics.add_metric(name="DependencyOutage", unit=MetricUnit.Count, value=1)
        return Response(status_code=503, content_type=content_types.APPLICATION_JSON,
                        headers={"Retry-After": str(OUTAGE_RETRY_AFTER_SECONDS)},
                        body=json.dumps({"message": f"service unavailable, retry later: {exc}",
                                         "error": type(exc).__name__,
                                         "retry_after_seconds": OUTAGE_RETRY_AFTER_SECONDS}))
    if isinstance(exc, ConfigError):
        logger.error("request failed on the deployment's configuration", extra={"error": str(exc)})
        return _error(500, f"server configuration error: {exc}")
    return _error(400, str(exc))


def _identity() -> dict[str, Any]:
    """The caller's IAM identity from the request context (API Gateway's SigV4 check), for the logs."""
    identity = app.current_event.request_context.identity
    return {"caller_arn": identity.user_arn, "caller_account": identity.account_id, "caller_id": identity.caller,
            "source_ip": identity.source_ip}


def _admission(settings: ApiFunctionSettings) -> Admission | None:
    """Admission control from the settings (None when ``max_running_extractions`` is unset)."""
    return admission_of(wiring.execution_starter("extract"), settings.max_running_extractions,
                        settings.retry_after_seconds, "extraction runs")


@app.post("/extractions")
def create_extraction(
    body: ExtractionRequest,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key", min_length=1, max_length=255)] = None,
) -> Response[dict[str, Any]]:
    """Start a run; the Idempotency-Key (or the body's hash) names it, so a retry starts nothing new.

    Reusing an Idempotency-Key with a different body is answered 422 and no run starts; at the
    admission cap a new run is answered 429 with ``Retry-After`` (see
    :func:`longdoc.extract.runs.start_extraction`). The run id is logged with the caller's identity.
    """
    settings = _settings()
    run = start_extraction(body, state=wiring.state_store(), catalogue=load_catalogue(settings.clause_catalogue),
                           settings=settings, starter=wiring.execution_starter("extract"),
                           model_name=wiring.model_name(), idempotency_key=idempotency_key,
                           admission=_admission(settings), caller=request_caller(app.current_event))
    logger.info("extraction requested", extra={"run_id": run.run_id, "status": run.status, **_identity()})
    return Response(status_code=202, content_type=content_types.APPLICATION_JSON,
                    body={"run_id": run.run_id, "status": run.status, "execution_arn": run.execution_arn})


@app.get("/extractions/<run_id>")
def get_extraction(run_id: str) -> dict[str, Any]:
    """Status, progress and (when done) the extractions with citations, usage per call and cost.

    A ``RUNNING`` run whose execution was stopped or timed out is recorded failed first; when
    the execution's status cannot be read, the stored status is reported as it is.
    """
    settings = _settings()
    state = wiring.state_store()
    run = state.get_run(run_id)
    if run is not None and not visible_to(run.owner, request_caller(app.current_event)):
        raise NotFound(f"run {run_id} not found")  # another caller's run: as if it did not exist
    if run is not None and run.status == "RUNNING" and settings.state_machine_arn:
        try:
            reconcile_run(state, run, wiring.execution_starter("extract").execution_status)
        except Exception as exc:  # noqa: BLE001 - a status check must never fail the read
            logger.warning("execution status unavailable", extra={"run_id": run_id, "error": type(exc).__name__})
    table = settings.price_table
    return run_result(state, run_id, str(table) if table else None)


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
