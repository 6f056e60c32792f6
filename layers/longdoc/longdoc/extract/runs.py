"""Run lifecycle: start a run (the one way, with idempotency), record its sessions and failures, report it.

:func:`start_extraction` is how every run starts (API, CLI, local engine): it names the run
(an Idempotency-Key or the request's hash; see its docstring), stores it ``PENDING`` via
:func:`start_run`, then starts its first execution through an
:class:`~longdoc.core.ports.ExecutionStarter` with :meth:`ExecutionInput.first
<longdoc.extract.payloads.ExecutionInput.first>` as input. The session loop
(:mod:`longdoc.extract.session`) marks progress with :func:`record_session`; the
failure-recording state calls :func:`fail_or_resume`; :func:`run_result` is what the CLI and
the API report.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StringConstraints

from longdoc.core.admission import Admission  # re-exported: the API's extraction admission
from longdoc.core.clock import utc_now
from longdoc.config import ExtractionSettings
from longdoc.core.documents import not_ready_reason, ready_document
from longdoc.core.errors import (CheckpointConflict, CheckpointSchemaError, IdempotencyConflict, LongdocError, NotFound,
                                 RunLeaseLost, short_cause)
from longdoc.core.messages import Usage
from longdoc.core.models import DocumentRecord
from longdoc.core.ports import ExecutionStarter, StateStore
from longdoc.core.run_fence import run_fence
from longdoc.core.tenancy import scoped_seed
from longdoc.core.records import CHECKPOINT_TTL_SECONDS, RunRecord
from longdoc.extract.catalogue import Catalogue
from longdoc.extract.report_fields import cache_figures, checkpoint_fields, cost_usd, model_provider
from longdoc.extract.payloads import ExecutionInput, execution_name

log = logging.getLogger(__name__)


def new_run_id() -> str:
    """Return a fresh run id (``run-`` + 12 hex characters)."""
    return f"run-{uuid.uuid4().hex[:12]}"


def _bounds(field: str) -> tuple[int, int]:
    """``(ge, le)`` of an :class:`ExtractionSettings` integer field: one source for every entry point."""
    metadata = ExtractionSettings.model_fields[field].metadata
    low = next(m.ge for m in metadata if hasattr(m, "ge"))
    high = next(m.le for m in metadata if hasattr(m, "le"))
    return int(low), int(high)


MAX_TOKENS_BOUNDS = _bounds("max_tokens")
"""Allowed ``max_tokens`` (output tokens per call): the settings' bounds, (64, 64000), used by the
settings, :class:`RunRequest` (API and CLI) and the CLI's ``--max-tokens``."""


class RunRequest(BaseModel):
    """What a run is asked to do: the body of ``POST /extractions``, or the CLI's arguments.

    ``max_tokens`` (output tokens per call, within :data:`MAX_TOKENS_BOUNDS`) / ``top_k`` None
    take the settings' defaults; ``facts`` are exact values
    pinned into CASE_FACTS byte for byte. Its JSON (:meth:`model_dump_json`, fields in this
    order) is the request hash that names an idempotent run: never reorder or add fields.
    """

    doc_id: str
    doc_version: str | None = None
    clause_types: list[str]
    max_tokens: int | None = Field(None, ge=MAX_TOKENS_BOUNDS[0], le=MAX_TOKENS_BOUNDS[1])
    top_k: int | None = None
    facts: dict[str, str] = Field(default_factory=dict)


ClauseTypeName = Annotated[str, StringConstraints(min_length=1, max_length=128)]
FactKey = Annotated[str, StringConstraints(min_length=1, max_length=64)]
FactValue = Annotated[str, StringConstraints(max_length=1000)]


class ExtractionRequest(RunRequest):  # a RunRequest with the API's bounds; same JSON, so same run ids
    """A :class:`RunRequest` with the bounds of every outside caller: the body of ``POST /extractions``
    and the arguments of the MCP ``extract`` tool.

    At most 64 clause types of 1-128 characters, ``top_k`` 1-50, at most 32 facts with keys of
    1-64 and values of at most 1,000 characters (our own limits, keeping a request small).
    """

    doc_id: str = Field(min_length=1, max_length=128, description="the document id (`list_documents`)")
    doc_version: str | None = Field(None, min_length=1, max_length=64,
                                    description="a version of the document; default: its latest READY one")
    clause_types: list[ClauseTypeName] = Field(min_length=1, max_length=64,
                                               description="clause type names (`list_clause_types`), any case")
    max_tokens: int | None = Field(None, ge=64, le=64000, description="output tokens per model call")
    top_k: int | None = Field(None, ge=1, le=50, description="chunks retrieved per clause type")
    facts: dict[FactKey, FactValue] = Field(default_factory=dict, max_length=32,
                                            description="exact values pinned into CASE_FACTS")


#: Execution statuses that end an execution without running the failure-recording state.
UNRECORDED_ENDS = {"ABORTED": "ExecutionAborted", "TIMED_OUT": "ExecutionTimedOut"}


def reconcile_run(state: StateStore, run: RunRecord, execution_status: Callable[[str], str]) -> RunRecord:
    """A ``RUNNING`` run whose current execution was stopped or timed out, recorded ``FAILED``; else ``run``.

    Stopping an execution (or its timeout) runs no state, so the run would read ``RUNNING``
    forever. ``execution_status(name)`` gives the status of the run's latest execution
    (``executions[-1]``); ``ABORTED`` / ``TIMED_OUT`` record the run as failed with error
    ``ExecutionAborted`` / ``ExecutionTimedOut`` (its checkpoint is kept: a new execution for
    the run resumes it, ``docs/operations.md``). Returns the run as stored.
    """
    if run.status != "RUNNING" or not run.executions:
        return run
    name = run.executions[-1]
    status = execution_status(name)
    if status not in UNRECORDED_ENDS:
        return run
    log.warning("run %s: execution %s ended %s without recording the run", run.run_id, name, status)
    return record_failure(state, run.run_id, UNRECORDED_ENDS[status], f"execution {name} ended {status}")


def validate_run_request(state: StateStore, catalogue: Catalogue, *, doc_id: str, clause_types: list[str],
                         doc_version: str | None = None) -> tuple[list[str], DocumentRecord]:
    """Check a request before anything starts: ``(clause types in catalogue spelling, the READY document)``.

    Cheap (the catalogue and one registry read), so entry points call it before starting an
    engine. Raises :class:`~longdoc.core.errors.UnknownClauseType` (with close names),
    :class:`LongdocError` when no clause type is requested, :class:`NotFound` when the
    document (version) is not ``READY``.
    """
    resolved = [c.name for c in catalogue.resolve_many(clause_types)]
    if not resolved:
        raise LongdocError("no clause types requested")
    doc = ready_document(state, doc_id, doc_version)
    if doc is None or doc.status != "READY":
        what = f"{doc_id}@{doc_version}" if doc_version else doc_id
        status = f" (status {doc.status}: {not_ready_reason(doc)})" if doc else ""
        raise NotFound(f"document {what} is not ingested{status}")
    return resolved, doc


def start_run(
    state: StateStore,
    catalogue: Catalogue,
    *,
    doc_id: str,
    clause_types: list[str],
    doc_version: str | None = None,
    model_name: str,
    max_tokens: int,
    top_k: int,
    facts: dict[str, str] | None = None,
    run_id: str | None = None,
    request_hash: str | None = None,
    owner: str | None = None,
) -> RunRecord:
    """Validate a request and store a ``PENDING`` run (id ``run_id`` or a fresh one); returns it.

    Clause type names are resolved to their catalogue spelling; ``doc_version`` None means
    the latest READY version. Raises :class:`~longdoc.core.errors.UnknownClauseType` (with
    close names) for an unknown clause type, :class:`LongdocError` when none is requested,
    and :class:`NotFound` when the document (version) is not ``READY``. ``owner``: the API caller
    (:mod:`longdoc.core.tenancy`), kept on the run for the owner check of reads.
    """
    resolved, doc = validate_run_request(state, catalogue, doc_id=doc_id, clause_types=clause_types,
                                         doc_version=doc_version)
    run = RunRecord(run_id=run_id or new_run_id(), doc_id=doc_id, doc_version=doc.doc_version,
                    clause_types=resolved, model=model_name, max_tokens=max_tokens, top_k=top_k,
                    facts=dict(facts or {}), created_at=utc_now(), updated_at=utc_now(), request_hash=request_hash,
                    owner=owner)
    state.put_run(run)
    return run


def _hashed_run_id(seed: str) -> str:
    """``run-`` + the first 16 hex characters of SHA-256 over ``seed``."""
    return "run-" + hashlib.sha256(seed.encode()).hexdigest()[:16]


def _idempotent_run(state: StateStore, request: RunRequest, body_hash: str,
                    idempotency_key: str | None, caller: str | None = None) -> tuple[str, RunRecord | None]:
    """The run id a request names, and that run if it exists already.

    With a key, the key names the run; the run's stored ``request_hash`` must then match
    (else :class:`IdempotencyConflict`). Without one, the request's JSON plus the READY
    version it resolves to names it (``"none"`` when there is none), and a ``FAILED`` run
    does not block a new attempt: attempt n is named by the same seed plus ``#attempt<n>``.
    """
    if idempotency_key:
        seed = idempotency_key
    else:
        doc = ready_document(state, request.doc_id, request.doc_version)
        seed = request.model_dump_json() + "@" + (doc.doc_version if doc else "none")
    if caller is not None:  # issue 26: sha256(caller + key): another caller's key names another run
        seed = scoped_seed(caller, seed)
    run_id = _hashed_run_id(seed)
    existing = state.get_run(run_id)
    if existing is not None and existing.request_hash and existing.request_hash != body_hash:
        raise IdempotencyConflict(run_id)
    attempt = 1
    while existing is not None and not idempotency_key and existing.status == "FAILED":
        attempt += 1
        run_id = _hashed_run_id(f"{seed}#attempt{attempt}")
        existing = state.get_run(run_id)
    return run_id, existing


def start_extraction(
    request: RunRequest,
    *,
    state: StateStore,
    catalogue: Catalogue,
    settings: ExtractionSettings,
    starter: ExecutionStarter,
    model_name: str,
    idempotency_key: str | None = None,
    deduplicate: bool = True,
    admission: Admission | None = None,
    caller: str | None = None,
) -> RunRecord:
    """Start a run and its first execution, or return the run this request already started.

    ``deduplicate`` (the API): the run id derives from ``idempotency_key`` or the request
    (see :func:`_idempotent_run`), so a retry returns the same run and starts nothing new;
    a run whose execution failed to start is started on the retry. ``deduplicate=False``
    (the CLI): always a fresh run id. ``settings`` gives the defaults for ``max_tokens`` /
    ``top_k`` and the loop's ``max_iterations`` / ``iterations_per_execution``.
    The first execution is named after the run, with :meth:`ExecutionInput.first
    <longdoc.extract.payloads.ExecutionInput.first>` as input; the run is then ``RUNNING``
    with its ``execution_arn``. Returns the run as stored.

    ``admission``: before a new run is stored or started, running executions are counted and
    :class:`TooManyRuns` is raised at the cap (nothing stored); a request naming a run that
    already has an execution is answered without counting.

    ``caller`` (the API, issue 26): the id derives from ``sha256(caller + "\n" + key)`` (or the
    caller plus the request), so callers never share runs, and the run keeps it as ``owner``.

    Raises :class:`IdempotencyConflict`, :class:`TooManyRuns`, the errors of :func:`start_run`
    (nothing is then stored or started) and whatever ``starter`` raises (the run stays
    ``PENDING`` without an ``execution_arn``, so a retry starts it).
    """
    body_hash = hashlib.sha256(request.model_dump_json().encode()).hexdigest()
    run_id, existing = (_idempotent_run(state, request, body_hash, idempotency_key, caller) if deduplicate
                        else (new_run_id(), None))
    if (existing is None or existing.execution_arn is None) and admission is not None:
        admission.check()
    if existing is None:
        existing = start_run(state, catalogue, doc_id=request.doc_id, doc_version=request.doc_version,
                             clause_types=request.clause_types, model_name=model_name,
                             max_tokens=request.max_tokens or settings.max_tokens, top_k=request.top_k or settings.top_k,
                             facts=request.facts, run_id=run_id, request_hash=body_hash, owner=caller)
    if existing.execution_arn is not None:
        return existing
    first = ExecutionInput.first(existing.run_id, existing.doc_id, max_iterations=settings.max_iterations,
                                 iterations_per_execution=settings.iterations_per_execution)
    arn = starter.start_execution(execution_name(run_id, 1), first.model_dump())
    started = existing.model_copy(update={"execution_arn": arn, "status": "RUNNING", "executions": [run_id]})
    state.put_run(started, run_fence(state, run_id))
    return started


def record_session(state: StateStore, run: RunRecord, *, model: str, execution: str | None, checkpoint_version: int,
                   done: bool, fence: int | None = None) -> None:
    """Store ``run`` after a session: ``SUCCEEDED`` when ``done`` else ``RUNNING``, error cleared.

    ``execution`` (the Step Functions execution name, None outside one) is added to
    ``executions`` once; ``model`` is the model that ran the session; ``fence`` the session's
    lease generation (:class:`~longdoc.core.errors.RunLeaseLost` when another process took over).
    """
    executions = list(run.executions)
    if execution and execution not in executions:
        executions.append(execution)
    state.put_run(run.model_copy(update={
        "status": "SUCCEEDED" if done else "RUNNING", "model": model, "updated_at": utc_now(),
        "executions": executions, "checkpoint_version": checkpoint_version, "error": None, "cause": None}), fence)


def _get_run(state: StateStore, run_id: str) -> RunRecord:
    """The stored run; raises :class:`NotFound` when there is none."""
    run = state.get_run(run_id)
    if run is None:
        raise NotFound(f"run {run_id} does not exist")
    return run


def _expire_checkpoint(state: StateStore, run_id: str, fence: int | None) -> int | None:
    """Save the run's checkpoint once more with a TTL (the run ended); returns the version it stands at.

    None when there is no readable checkpoint. An already expiring checkpoint is left as it
    is; a checkpoint saved meanwhile by a late session wins (:class:`CheckpointConflict`).
    """
    try:
        checkpoint = state.load_checkpoint(run_id)
    except CheckpointSchemaError:
        return None
    if checkpoint is None:
        return None
    if checkpoint.expires_at is not None:
        return checkpoint.version
    try:
        state.save_checkpoint(checkpoint.model_copy(update={
            "version": checkpoint.version + 1, "updated_at": utc_now(),
            "expires_at": int(time.time()) + CHECKPOINT_TTL_SECONDS}), fence)
    except CheckpointConflict:
        return checkpoint.version  # a late session saved meanwhile; its checkpoint stands
    return checkpoint.version + 1


def record_failure(state: StateStore, run_id: str, error: str, cause: str, *, entered: str | None = None) -> RunRecord:
    """Mark a run ``FAILED`` with the Step Functions error, cause and last checkpoint version; returns it.

    The checkpoint's content is kept; it is saved once more (version + 1) with
    ``expires_at`` = now + 30 days, because the run has ended (a redrive clears it again).
    ``cause`` is shortened to its readable part (:func:`~longdoc.core.errors.short_cause`,
    at most 2,000 characters). ``entered`` is the failure-recording state's
    ``$$.State.EnteredTime``: a later call with another value is a redrive (see
    :func:`fail_or_resume`). Every write is fenced with the run lease's generation
    (:func:`~longdoc.core.run_fence.run_fence`): a process that lost the lease records nothing
    (:class:`RunLeaseLost`). Raises :class:`NotFound` for an unknown run.
    """
    fence = run_fence(state, run_id)
    run = _get_run(state, run_id)
    version = _expire_checkpoint(state, run_id, fence)
    failed = run.model_copy(update={"status": "FAILED", "error": error, "cause": short_cause(cause)[:2000],
                                    "updated_at": utc_now(), "checkpoint_version": version,
                                    "failed_state_entered": entered})
    state.put_run(failed, fence)
    return failed


def fail_or_resume(state: StateStore, run_id: str, error: str, cause: str,
                   entered: str | None) -> Literal["FAILED", "RESUMED"]:
    """Record a failure, or, when the failure-recording state is re-entered by a redrive, resume the run.

    Step Functions redrive re-runs the state an execution failed in, with the same input
    (https://docs.aws.amazon.com/step-functions/latest/dg/redrive-executions.html); the
    state's ``EnteredTime`` is new. So: a run already ``FAILED`` at another ``entered``
    is marked ``RUNNING`` again and ``"RESUMED"`` is returned (its checkpoint is reused);
    otherwise the failure is recorded and ``"FAILED"`` returned. Raises :class:`NotFound`.

    A :class:`RunLeaseLost` error is not recorded: another process drives the run now and its
    record is theirs; it is raised again (one line, the run and the holder), failing this
    execution under that name.
    """
    if error == RunLeaseLost.__name__:
        raise RunLeaseLost(short_cause(cause) or f"run {run_id}: this process lost the run's lease")
    run = _get_run(state, run_id)
    if run.status == "FAILED" and entered and run.failed_state_entered and run.failed_state_entered != entered:
        state.put_run(run.model_copy(update={"status": "RUNNING", "updated_at": utc_now(), "failed_state_entered": None}),
                      run_fence(state, run_id))
        return "RESUMED"
    record_failure(state, run_id, error, cause, entered=entered)
    return "FAILED"


def run_result(state: StateStore, run_id: str, prices_path: str | None = None) -> dict[str, Any]:
    """The run as the CLI and API report it: status, model and its provider, counters, CASE_FACTS,
    extractions, usage, cost.

    ``provider`` names who served ``model`` (:func:`model_provider`: ``anthropic``, ``bedrock`` or
    ``offline``).

    ``cache`` reports prompt caching (tokens read from and written to the cache, and how many
    of the recorded calls read it); ``refusals`` the clause types the model refused (with the
    API's category); ``max_tokens`` the output cap per call after escalation (tokens);
    ``cut_blocks`` the reply blocks a ``max_tokens`` or context-window stop cut (never run nor
    stored; which call cut what is in ``calls[].cut``).
    ``usage`` is the total over every model call (tokens); ``calls`` lists each call's usage
    (the last :data:`~longdoc.core.records.MAX_CALL_RECORDS`); ``cost_usd`` is a decimal string
    from the price table (``prices_path`` or the packaged one), or None for an unpriced model.
    Raises :class:`NotFound` for an unknown run.
    """
    run = _get_run(state, run_id)
    checkpoint = state.load_checkpoint(run_id)
    usage = checkpoint.usage if checkpoint else Usage()
    return {
        "run_id": run.run_id,
        "doc_id": run.doc_id,
        "doc_version": run.doc_version,
        "status": run.status,
        "model": run.model,
        "provider": model_provider(run.model),
        **checkpoint_fields(checkpoint),
        "extractions": [e.model_dump(mode="json", exclude={"model", "session", "final"}) | {"model": e.model}
                        for e in state.list_extractions(run_id)],
        "usage": usage.model_dump(),
        "cache": cache_figures(checkpoint),
        "refusals": ({c: r.model_dump() for c, r in checkpoint.case_facts.refusals.items()} if checkpoint else {}),
        "max_tokens": (checkpoint.max_tokens if checkpoint and checkpoint.max_tokens else run.max_tokens),
        "cost_usd": cost_usd(usage, run.model, prices_path),
        "calls": [c.model_dump() for c in checkpoint.calls] if checkpoint else [],
        "rejected_citations": checkpoint.rejected_citations if checkpoint else 0,
        "cut_blocks": checkpoint.cut_blocks if checkpoint else 0,
        "executions": run.executions,
        "error": run.error,
        "cause": run.cause,
    }
