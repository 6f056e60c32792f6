"""The extraction loop: one fresh model session per call of :func:`run_session`.

A session loads the run's checkpoint (or starts one), reconciles it with the extractions
already stored (so an invocation re-run from an old checkpoint never duplicates work),
retrieves a page of top-K chunks for each pending clause type, and runs the tool-use loop.
The harness, not the model, verifies every citation and updates CASE_FACTS after each tool
call, and decides whether the run is done. Stop reasons (Messages API
https://docs.anthropic.com/en/api/handling-stop-reasons):

==================================  ==========================================================
``tool_use``                        run the tools, continue the same session (while pending)
``pause_turn``                      send the assistant turn back as is, continue the session
``max_tokens``                      discard a trailing cut-off tool call, checkpoint, CONTINUE
``model_context_window_exceeded``   same as ``max_tokens``: the next session starts fresh
``end_turn`` / ``stop_sequence``    DONE only if the harness finds nothing pending, else CONTINUE
``refusal``                         checkpoint, then :class:`ModelRefused` (the run fails)
==================================  ==========================================================

A clause type may occur several times: each verified ``extract_clause`` call stores one
instance (keyed by :func:`instance_key`); ``more_instances: true`` makes the harness answer
with the next page of retrieved chunks for that clause type, until the model calls
``record_not_found`` for it (no further instance) or retrieval runs out.

Progress guard: a session that resolves nothing new counts as stalled; after
``no_progress_limit`` stalled sessions in a row (default :data:`NO_PROGRESS_LIMIT` = 3:
one retry with the same prompt shape could be bad luck, three in a row means the model
cannot resolve what is left with this budget) the run fails with :class:`NoProgress`
instead of looping until the iteration cap.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from pydantic import ValidationError

from longdoc.extract.catalogue import Catalogue, ClauseType
from longdoc.extract.citations import CitationError, check_clause_support, verify_citation
from longdoc.extract.cost import estimate_cost, load_prices, warn_if_prefix_uncacheable
from longdoc.core.documents import load_chunks, ready_document
from longdoc.core.errors import short_cause
from longdoc.extract.prompt import EXTRACT_TOOL, NOT_FOUND_TOOL, build_request, prefix_tokens, render_next_page
from longdoc.extract.retrieve import DENSE_WEIGHT, LEAD_RANK, Retriever, assemble
from longdoc.core.errors import CheckpointConflict, CheckpointSchemaError, LongdocError, ModelRefused, NoProgress, NotFound
from longdoc.core.records import CHECKPOINT_TTL_SECONDS, MAX_CALL_RECORDS, CallRecord, CaseFacts, Checkpoint, Citation, Extraction, ResolvedClause, RunRecord
from longdoc.core.models import Chunk
from longdoc.core.messages import Message, ModelRequest, TextBlock, ToolUseBlock, Usage
from longdoc.core.ports import BlobStore, Embedder, Model, StateStore, VectorIndex

log = logging.getLogger(__name__)

MAX_CALLS_PER_SESSION = 8
NO_PROGRESS_LIMIT = 3
_EXACT_VALUE = re.compile(r"(?:[$€£]\s?\d[\d,]*(?:\.\d+)?|\b\d[\d,]*(?:\.\d+)?\s?(?:%|percent\b|USD\b|EUR\b|GBP\b))")


@dataclass(frozen=True)
class Deps:
    """The adapters a session needs (see :mod:`longdoc.core.ports`)."""

    state: StateStore
    blobs: BlobStore
    embedder: Embedder
    index: VectorIndex
    model: Model
    catalogue: Catalogue


@dataclass(frozen=True)
class SessionOptions:
    """How one session is bounded; nothing here is Lambda-specific.

    ``deadline`` is a ``clock()`` value (seconds) after which no new model call starts: the
    session checkpoints and returns ``CONTINUE`` with ``stop_reason="time_limit"``.
    ``call_deadline`` (same clock) is when a model call already under way must give up
    (its budget, retries included, is what is left until then); None: no bound.
    ``execution`` is the Step Functions execution name, recorded on the run.
    ``strict_tools`` selects strict tool schemas. ``no_progress_limit``: see the module docstring.
    ``budget_tokens`` bounds the retrieved context (estimated tokens, headers included; see
    :func:`longdoc.extract.retrieve.assemble`): ``None`` sends every retrieved page (``top_k``
    per pending clause type); with a budget, chunks go in rank order until the next would
    pass it, and a document that fits whole is sent whole, in order.
    """

    deadline: float | None = None
    call_deadline: float | None = None
    execution: str | None = None
    strict_tools: bool = False
    no_progress_limit: int = NO_PROGRESS_LIMIT
    budget_tokens: int | None = None
    clock: Callable[[], float] = field(default=time.monotonic)


@dataclass(frozen=True)
class SessionOutcome:
    """Where a run stands after one session (small: it travels between Step Functions states).

    ``rejected_citations`` and ``model_calls`` count this session only (for metrics).
    """

    run_id: str
    doc_id: str
    status: Literal["CONTINUE", "DONE"]
    stop_reason: str | None
    sessions: int
    checkpoint_version: int
    extracted: int
    pending: int
    rejected_citations: int = 0
    model_calls: int = 0


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def new_run_id() -> str:
    """Return a fresh run id (``run-`` + 12 hex characters)."""
    return f"run-{uuid.uuid4().hex[:12]}"


def instance_key(citation: Citation) -> str:
    """Deterministic id of one clause instance: 12 hex of SHA-256 over its first citation.

    Input: ``chunk_id``, a newline, and the quote with whitespace collapsed, so the same
    occurrence extracted again (a retried invocation) gets the same key and overwrites.
    """
    quote = " ".join(citation.quote.split())
    return hashlib.sha256(f"{citation.chunk_id}\n{quote}".encode()).hexdigest()[:12]


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
) -> RunRecord:
    """Validate a request and store a ``PENDING`` run; returns it.

    Raises :class:`UnknownClauseType` (with close names) for an unknown clause type and
    :class:`NotFound` when the document (version) is not ``READY``.
    """
    resolved = [c.name for c in catalogue.resolve_many(clause_types)]
    if not resolved:
        raise LongdocError("no clause types requested")
    doc = ready_document(state, doc_id, doc_version)
    if doc is None or doc.status != "READY":
        what = f"{doc_id}@{doc_version}" if doc_version else doc_id
        status = f" (status {doc.status}: {doc.reason})" if doc else ""
        raise NotFound(f"document {what} is not ingested{status}")
    run = RunRecord(run_id=run_id or new_run_id(), doc_id=doc_id, doc_version=doc.doc_version,
                    clause_types=resolved, model=model_name, max_tokens=max_tokens, top_k=top_k,
                    facts=dict(facts or {}), created_at=_now(), updated_at=_now())
    state.put_run(run)
    return run


def _apply(facts: CaseFacts, extraction: Extraction) -> None:
    """Record a verified extraction in CASE_FACTS (harness-side; never model-written); idempotent."""
    clause = extraction.clause_type
    if clause in facts.resolved:
        return
    if extraction.status == "not_found":
        facts.resolved[clause] = ResolvedClause(status="not_found")
        facts.decisions.append(f"{clause}: not_found")
        return
    entry = facts.open.get(clause) or ResolvedClause(status="found")
    instance = extraction.instance or clause
    if instance not in entry.instances:
        entry.instances.append(instance)
        entry.pages = sorted(set(entry.pages) | {c.page for c in extraction.citations if c.page is not None})
        entry.section_ids = list(dict.fromkeys(
            [*entry.section_ids, *(c.section_id for c in extraction.citations if c.section_id)]))
        facts.extracted_count += 1
        where = ", ".join(f"p. {c.page}" + (f" §{c.section_id}" if c.section_id else "") for c in extraction.citations)
        facts.decisions.append(f"{clause}: found ({where})" if len(entry.instances) == 1
                               else f"{clause}: found instance {len(entry.instances)} ({where})")
        base = f"{clause} value" if len(entry.instances) == 1 else f"{clause} #{len(entry.instances)} value"
        for n, value in enumerate(_EXACT_VALUE.findall(" ".join(c.quote for c in extraction.citations)), 1):
            facts.exact_values.setdefault(f"{base} {n}", value)
    if extraction.final:
        facts.resolved[clause] = entry
        facts.open.pop(clause, None)
    else:
        facts.open[clause] = entry


@dataclass
class _ToolOutcome:
    """What the harness did with one tool call."""

    text: str
    extraction: Extraction | None = None
    is_error: bool = False
    rejected_citation: bool = False
    close: str | None = None
    next_page: str | None = None


def _handle_tool(block: ToolUseBlock, facts: CaseFacts, chunks: dict[str, Chunk], model: str,
                 session: int) -> _ToolOutcome:
    """Verify one tool call and say what to store and what to answer (never raises)."""
    clause = block.input.get("clause_type")
    if clause not in facts.clause_types:
        return _ToolOutcome(f"clause_type {clause!r} was not requested; pending: {facts.pending}", is_error=True)
    if clause in facts.resolved:
        return _ToolOutcome(f"{clause} is already resolved; do not repeat it", is_error=True)
    if block.name == NOT_FOUND_TOOL:
        if clause in facts.open:
            return _ToolOutcome(f"closed {clause}: {len(facts.open[clause].instances)} occurrence(s) recorded",
                                close=clause)
        return _ToolOutcome(f"recorded {clause}: not_found",
                            Extraction(clause_type=clause, status="not_found", model=model, session=session))
    if block.name != EXTRACT_TOOL:
        return _ToolOutcome(f"unknown tool {block.name!r}", is_error=True)
    try:
        raw = block.input.get("citations") or []
        if not raw:
            raise CitationError("citations must hold at least one {chunk_id, page, quote}")
        cites = [verify_citation(Citation.model_validate(c), chunks) for c in raw]
        text = block.input.get("clause_text")
        if not isinstance(text, str) or not text.strip():
            raise CitationError("clause_text must be a non-empty string")
        check_clause_support(text, [c.quote for c in cites])
    except (CitationError, ValidationError) as exc:
        return _ToolOutcome(f"rejected: {exc}", is_error=True, rejected_citation=True)
    instance = instance_key(cites[0])
    if instance in (facts.open.get(clause) or ResolvedClause(status="found")).instances:
        return _ToolOutcome(f"this occurrence of {clause} is already recorded; do not repeat it", is_error=True)
    more = block.input.get("more_instances") is True
    extraction = Extraction(clause_type=clause, status="found", clause_text=text, citations=cites, model=model,
                            session=session, instance=instance, final=not more)
    return _ToolOutcome(f"recorded {clause}: found", extraction, next_page=clause if more else None)


def _retriever(deps: Deps, run: RunRecord, chunks: dict[str, Chunk]) -> Retriever:
    """Hybrid retriever over the run's document version, filtered by the run's ``term`` /
    ``line_of_business`` facts when given (see :mod:`longdoc.extract.retrieve`)."""
    return Retriever(list(chunks.values()), deps.index, mode="hybrid", dense_weight=DENSE_WEIGHT,
                     lead_rank=LEAD_RANK, term=run.facts.get("term"),
                     line_of_business=run.facts.get("line_of_business"))


def _page(deps: Deps, run: RunRecord, clause: ClauseType, page: int, chunks: dict[str, Chunk],
          retriever: Retriever | None = None) -> list[Chunk]:
    """Page ``page`` (0-based) of the top-K retrieval for one clause type: ranks ``page*K .. page*K+K-1``."""
    retriever = retriever or _retriever(deps, run, chunks)
    query = clause.query_text()
    ranked = retriever.rank(query, deps.embedder.embed_query(query), run.top_k * (page + 1))
    return ranked[page * run.top_k:]


def _retrieve(deps: Deps, run: RunRecord, facts: CaseFacts, chunks: dict[str, Chunk],
              budget_tokens: int | None = None) -> list[Chunk]:
    """Each pending clause type's current retrieval page, merged in document order without repeats.

    With ``budget_tokens``, the pages are interleaved by rank (first of each clause type,
    then second, ...) and assembled within the budget (:func:`assemble`); a document that
    fits whole is sent whole.
    """
    retriever = _retriever(deps, run, chunks)
    pages = [_page(deps, run, clause, facts.retrieval_pages.get(clause.name, 0), chunks, retriever)
             for clause in deps.catalogue.resolve_many(facts.pending)]
    picked: dict[str, Chunk] = {}
    for rank in range(max((len(p) for p in pages), default=0)):
        for page in pages:
            if rank < len(page):
                picked.setdefault(page[rank].chunk_id, page[rank])
    selected = list(picked.values())
    if budget_tokens is not None:
        assembly = assemble(selected, budget_tokens, all_chunks=retriever.pool)
        if assembly.top_over_budget:
            log.warning("top chunk alone is over the %d-token context budget (%d tokens)", budget_tokens,
                        assembly.tokens)
        selected = assembly.chunks
    return sorted(selected, key=lambda c: c.ordinal)


def _close(deps: Deps, run_id: str, facts: CaseFacts, clause: str, last: dict[str, Extraction], why: str) -> None:
    """Close an open multi-instance clause type: re-store its last instance as final (idempotent)."""
    final = last[clause].model_copy(update={"final": True})
    deps.state.put_extraction(run_id, final)
    _apply(facts, final)
    facts.decisions.append(f"{clause}: no further occurrence ({why})")


def run_session(deps: Deps, run_id: str, options: SessionOptions | None = None) -> SessionOutcome:
    """Run one fresh model session for ``run_id`` and checkpoint the result.

    Raises :class:`NotFound` for an unknown run, :class:`ModelRefused` on a refusal,
    :class:`NoProgress` after ``options.no_progress_limit`` stalled sessions in a row, the
    model port's named errors on API failures (the state machine retries those), and
    :class:`CheckpointConflict` when another invocation saved first (the loser's stored
    extractions are idempotent, so nothing is duplicated).
    """
    options = options or SessionOptions()
    run = deps.state.get_run(run_id)
    if run is None:
        raise NotFound(f"run {run_id} does not exist")
    checkpoint = deps.state.load_checkpoint(run_id) or Checkpoint(
        run_id=run_id, version=0,
        case_facts=CaseFacts(run_id=run_id, doc_id=run.doc_id, doc_version=run.doc_version,
                             clause_types=run.clause_types, exact_values=dict(run.facts)),
    )
    facts = checkpoint.case_facts.model_copy(deep=True)
    last: dict[str, Extraction] = {}
    for stored in deps.state.list_extractions(run_id):
        _apply(facts, stored)
        last[stored.clause_type] = stored
    usage, calls = checkpoint.usage, list(checkpoint.calls)
    session, stop_reason = checkpoint.sessions, checkpoint.last_stop_reason
    rejected = made_calls = 0
    time_limited = False

    def out_of_time() -> bool:
        return options.deadline is not None and options.clock() >= options.deadline

    def save(done: bool) -> int:
        version = checkpoint.version + 1
        deps.state.save_checkpoint(Checkpoint(
            run_id=run_id, version=version, case_facts=facts, sessions=session, last_stop_reason=stop_reason,
            usage=usage, updated_at=_now(), stalled_sessions=stalled, calls=calls[-MAX_CALL_RECORDS:],
            rejected_citations=checkpoint.rejected_citations + rejected,
            expires_at=int(time.time()) + CHECKPOINT_TTL_SECONDS if done else None))
        executions = list(run.executions)
        if options.execution and options.execution not in executions:
            executions.append(options.execution)
        deps.state.put_run(run.model_copy(update={
            "status": "SUCCEEDED" if done else "RUNNING", "model": deps.model.name, "updated_at": _now(),
            "executions": executions, "checkpoint_version": version, "error": None, "cause": None}))
        return version

    stalled = checkpoint.stalled_sessions
    if facts.pending and out_of_time():
        time_limited, stop_reason = True, "time_limit"
    elif facts.pending:
        session += 1
        chunks = {c.chunk_id: c for c in load_chunks(deps.blobs, run.doc_id, run.doc_version)}
        context = _retrieve(deps, run, facts, chunks, options.budget_tokens)
        request = build_request(facts, deps.catalogue.resolve_many(facts.pending), context, run.max_tokens,
                                strict=options.strict_tools)
        warn_if_prefix_uncacheable(deps.model.name, prefix_tokens(request))
        messages = list(request.messages)
        for _ in range(MAX_CALLS_PER_SESSION):
            if out_of_time():
                time_limited, stop_reason = True, "time_limit"
                break
            budget = None if options.call_deadline is None else max(1.0, options.call_deadline - options.clock())
            response = deps.model.create(ModelRequest(**{**request.model_dump(), "messages": messages,
                                                         "timeout_seconds": budget}))
            made_calls += 1
            usage = usage.add(response.usage)
            stop_reason = response.stop_reason
            calls.append(CallRecord(session=session, model=response.model, stop_reason=stop_reason,
                                    usage=response.usage))
            blocks = list(response.content)
            if stop_reason in ("max_tokens", "model_context_window_exceeded") and blocks and isinstance(blocks[-1], ToolUseBlock):
                blocks.pop()  # cut off mid-call: never executed
            results = []
            for block in blocks:
                if not isinstance(block, ToolUseBlock):
                    continue
                outcome = _handle_tool(block, facts, chunks, response.model, session)
                rejected += outcome.rejected_citation
                text = outcome.text
                if outcome.extraction is not None:
                    deps.state.put_extraction(run_id, outcome.extraction)
                    _apply(facts, outcome.extraction)
                    last[outcome.extraction.clause_type] = outcome.extraction
                if outcome.close:
                    _close(deps, run_id, facts, outcome.close, last, "the model found no further occurrence")
                if outcome.next_page:
                    clause = outcome.next_page
                    page = facts.retrieval_pages.get(clause, 0) + 1
                    facts.retrieval_pages[clause] = page
                    more = _page(deps, run, deps.catalogue.resolve(clause), page, chunks)
                    if not more:
                        _close(deps, run_id, facts, clause, last, "retrieval exhausted")
                    text = text + "\n" + render_next_page(clause, more)
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": text,
                                "is_error": outcome.is_error})
            if stop_reason == "refusal":
                refusal = " ".join(b.text for b in response.content if isinstance(b, TextBlock))[:500]
                save(False)
                raise ModelRefused(f"model refused in session {session} of run {run_id}"
                                   + (f": {refusal}" if refusal else ""))
            if stop_reason in ("pause_turn", "tool_use") and facts.pending and blocks:
                messages.append(Message(role="assistant", content=[b.model_dump() for b in blocks]))
                if results:
                    messages.append(Message(role="user", content=results))
                continue
            break
    done = not facts.pending
    progressed = facts.progress_marker() != checkpoint.case_facts.progress_marker()
    stalled = 0 if (done or progressed or time_limited) else checkpoint.stalled_sessions + 1
    version = save(done)
    if not done and stalled >= options.no_progress_limit:
        raise NoProgress(f"run {run_id}: {stalled} sessions in a row resolved nothing new "
                         f"(last stop_reason {stop_reason}); pending: {', '.join(facts.pending)}")
    return SessionOutcome(run_id=run_id, doc_id=run.doc_id, status="DONE" if done else "CONTINUE",
                          stop_reason=stop_reason, sessions=session, checkpoint_version=version,
                          extracted=facts.extracted_count, pending=len(facts.pending),
                          rejected_citations=rejected, model_calls=made_calls)


def record_failure(state: StateStore, run_id: str, error: str, cause: str, *, entered: str | None = None) -> RunRecord:
    """Mark a run ``FAILED`` with the Step Functions error, cause and last checkpoint version.

    The checkpoint's content is kept; it is saved once more (version + 1) with
    ``expires_at`` = now + 30 days, because the run has ended (a redrive clears it again).
    ``entered`` is the failure-recording state's ``$$.State.EnteredTime``: a later call
    with another value is a redrive (see :func:`fail_or_resume`).
    """
    run = state.get_run(run_id)
    if run is None:
        raise NotFound(f"run {run_id} does not exist")
    version: int | None = None
    try:
        checkpoint = state.load_checkpoint(run_id)
    except CheckpointSchemaError:
        checkpoint = None
    if checkpoint is not None:
        version = checkpoint.version
        if checkpoint.expires_at is None:
            try:
                state.save_checkpoint(checkpoint.model_copy(update={
                    "version": checkpoint.version + 1, "updated_at": _now(),
                    "expires_at": int(time.time()) + CHECKPOINT_TTL_SECONDS}))
                version = checkpoint.version + 1
            except CheckpointConflict:
                pass  # a late session saved meanwhile; its checkpoint stands
    failed = run.model_copy(update={"status": "FAILED", "error": error, "cause": short_cause(cause)[:2000], "updated_at": _now(),
                                    "checkpoint_version": version, "failed_state_entered": entered})
    state.put_run(failed)
    return failed


def fail_or_resume(state: StateStore, run_id: str, error: str, cause: str,
                   entered: str | None) -> Literal["FAILED", "RESUMED"]:
    """Record a failure, or, when the failure-recording state is re-entered by a redrive, resume the run.

    Step Functions redrive re-runs the state an execution failed in, with the same input
    (https://docs.aws.amazon.com/step-functions/latest/dg/redrive-executions.html); the
    state's ``EnteredTime`` is new. So: a run already ``FAILED`` at another ``entered``
    is marked ``RUNNING`` again and ``"RESUMED"`` is returned (its checkpoint is reused);
    otherwise the failure is recorded and ``"FAILED"`` returned.
    """
    run = state.get_run(run_id)
    if run is None:
        raise NotFound(f"run {run_id} does not exist")
    if run.status == "FAILED" and entered and run.failed_state_entered and run.failed_state_entered != entered:
        state.put_run(run.model_copy(update={"status": "RUNNING", "updated_at": _now(), "failed_state_entered": None}))
        return "RESUMED"
    record_failure(state, run_id, error, cause, entered=entered)
    return "FAILED"


def run_result(state: StateStore, run_id: str, prices_path: str | None = None) -> dict:
    """The run as the CLI and API report it: status, counters, CASE_FACTS, extractions, usage, cost.

    ``usage`` is the total over every model call; ``calls`` lists each call's usage
    (the last :data:`~longdoc.core.records.MAX_CALL_RECORDS`); ``cost_usd`` is a decimal string
    from the price table (``prices_path`` or the packaged one), or None for an unpriced model.
    """
    run = state.get_run(run_id)
    if run is None:
        raise NotFound(f"run {run_id} does not exist")
    checkpoint = state.load_checkpoint(run_id)
    usage = checkpoint.usage if checkpoint else Usage()
    try:
        cost = estimate_cost(usage, run.model, load_prices(prices_path))
    except (OSError, ValueError, LongdocError) as exc:
        log.warning("no cost estimate: price table unreadable (%s)", exc)
        cost = None
    return {
        "run_id": run.run_id,
        "doc_id": run.doc_id,
        "doc_version": run.doc_version,
        "status": run.status,
        "model": run.model,
        "sessions": checkpoint.sessions if checkpoint else 0,
        "checkpoints": checkpoint.version if checkpoint else 0,
        "case_facts": checkpoint.case_facts.model_dump(mode="json") if checkpoint else None,
        "extractions": [e.model_dump(mode="json", exclude={"model", "session", "final"}) | {"model": e.model}
                        for e in state.list_extractions(run_id)],
        "usage": usage.model_dump(),
        "cost_usd": cost,
        "calls": [c.model_dump() for c in checkpoint.calls] if checkpoint else [],
        "rejected_citations": checkpoint.rejected_citations if checkpoint else 0,
        "executions": run.executions,
        "error": run.error,
        "cause": run.cause,
    }
