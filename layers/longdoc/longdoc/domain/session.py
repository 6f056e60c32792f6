"""The extraction loop: one fresh model session per call of :func:`run_session`.

A session loads the run's checkpoint (or starts one), reconciles it with the extractions
already stored (so an invocation re-run from an old checkpoint never duplicates work),
retrieves the top-K chunks for each pending clause type, and runs the tool-use loop. The
harness, not the model, verifies every citation and updates CASE_FACTS after each tool
call. On ``max_tokens`` (or a full context window) a trailing, cut-off tool call is
discarded, the checkpoint is saved and the status is ``CONTINUE``; the next invocation
resumes in a new session. ``DONE`` means every requested clause type is resolved.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from pydantic import ValidationError

from longdoc.domain.catalogue import Catalogue
from longdoc.domain.citations import CitationError, verify_citation
from longdoc.domain.ingest import load_chunks
from longdoc.domain.prompt import EXTRACT_TOOL, NOT_FOUND_TOOL, build_request
from longdoc.errors import LongdocError, ModelRefused, NotFound
from longdoc.models import (
    CaseFacts,
    Checkpoint,
    Chunk,
    Citation,
    Extraction,
    Message,
    ModelRequest,
    ResolvedClause,
    RunRecord,
    ToolUseBlock,
    Usage,
)
from longdoc.ports import BlobStore, Embedder, Model, StateStore, VectorIndex

MAX_CALLS_PER_SESSION = 8
_EXACT_VALUE = re.compile(r"(?:[$€£]\s?\d[\d,]*(?:\.\d+)?|\b\d[\d,]*(?:\.\d+)?\s?(?:%|percent\b|USD\b|EUR\b|GBP\b))")


@dataclass(frozen=True)
class Deps:
    """The adapters a session needs (see :mod:`longdoc.ports`)."""

    state: StateStore
    blobs: BlobStore
    embedder: Embedder
    index: VectorIndex
    model: Model
    catalogue: Catalogue


@dataclass(frozen=True)
class SessionOutcome:
    """Where a run stands after one session (small: it travels between Step Functions states)."""

    run_id: str
    doc_id: str
    status: Literal["CONTINUE", "DONE"]
    stop_reason: str | None
    sessions: int
    checkpoint_version: int
    extracted: int
    pending: int


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def new_run_id() -> str:
    """Return a fresh run id (``run-`` + 12 hex characters)."""
    return f"run-{uuid.uuid4().hex[:12]}"


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
    doc = state.get_document(doc_id, doc_version)
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
    """Record a verified extraction in CASE_FACTS (harness-side; never model-written)."""
    if extraction.clause_type in facts.resolved:
        return
    facts.resolved[extraction.clause_type] = ResolvedClause(
        status=extraction.status,
        pages=sorted({c.page for c in extraction.citations if c.page is not None}),
        section_ids=list(dict.fromkeys(c.section_id for c in extraction.citations if c.section_id)),
    )
    if extraction.status == "found":
        facts.extracted_count += 1
        where = ", ".join(
            f"p. {c.page}" + (f" §{c.section_id}" if c.section_id else "") for c in extraction.citations
        )
        facts.decisions.append(f"{extraction.clause_type}: found ({where})")
        for n, value in enumerate(_EXACT_VALUE.findall(" ".join(c.quote for c in extraction.citations)), 1):
            facts.exact_values.setdefault(f"{extraction.clause_type} value {n}", value)
    else:
        facts.decisions.append(f"{extraction.clause_type}: not_found")


def _handle_tool(
    block: ToolUseBlock, facts: CaseFacts, chunks: dict[str, Chunk], model: str, session: int
) -> tuple[Extraction | None, str]:
    """Verify one tool call; return ``(extraction or None, tool_result text)``."""
    clause = block.input.get("clause_type")
    if clause not in facts.clause_types:
        return None, f"clause_type {clause!r} was not requested; pending: {facts.pending}"
    if clause in facts.resolved:
        return None, f"{clause} is already resolved; do not repeat it"
    try:
        if block.name == EXTRACT_TOOL:
            cites = [verify_citation(Citation.model_validate(c), chunks) for c in block.input.get("citations") or []]
            extraction = Extraction(clause_type=clause, status="found", clause_text=block.input.get("clause_text"),
                                    citations=cites, model=model, session=session)
        elif block.name == NOT_FOUND_TOOL:
            extraction = Extraction(clause_type=clause, status="not_found", model=model, session=session)
        else:
            return None, f"unknown tool {block.name!r}"
    except (CitationError, ValidationError) as exc:
        return None, f"rejected: {exc}"
    return extraction, f"recorded {clause}: {extraction.status}"


def _retrieve(deps: Deps, run: RunRecord, facts: CaseFacts, chunks: dict[str, Chunk]) -> list[Chunk]:
    """Top-K chunks per pending clause type, merged in rank order without repeats."""
    picked: dict[str, Chunk] = {}
    for clause in deps.catalogue.resolve_many(facts.pending):
        vector = deps.embedder.embed_query(clause.query_text())
        for chunk_id, _score in deps.index.query(vector, run.doc_id, run.doc_version, run.top_k):
            if chunk_id in chunks:
                picked.setdefault(chunk_id, chunks[chunk_id])
    return sorted(picked.values(), key=lambda c: c.ordinal)


def run_session(deps: Deps, run_id: str) -> SessionOutcome:
    """Run one fresh model session for ``run_id`` and checkpoint the result.

    Raises :class:`NotFound` for an unknown run, :class:`ModelRefused` on a refusal, the
    model port's named errors on API failures (the state machine retries those), and
    :class:`CheckpointConflict` when another invocation saved first.
    """
    run = deps.state.get_run(run_id)
    if run is None:
        raise NotFound(f"run {run_id} does not exist")
    checkpoint = deps.state.load_checkpoint(run_id) or Checkpoint(
        run_id=run_id, version=0,
        case_facts=CaseFacts(run_id=run_id, doc_id=run.doc_id, doc_version=run.doc_version,
                             clause_types=run.clause_types, exact_values=dict(run.facts)),
    )
    facts = checkpoint.case_facts.model_copy(deep=True)
    for stored in deps.state.list_extractions(run_id):
        _apply(facts, stored)
    usage = checkpoint.usage
    session = checkpoint.sessions
    stop_reason = checkpoint.last_stop_reason
    if facts.pending:
        session += 1
        chunks = {c.chunk_id: c for c in load_chunks(deps.blobs, run.doc_id, run.doc_version)}
        context = _retrieve(deps, run, facts, chunks)
        request = build_request(facts, deps.catalogue.resolve_many(facts.pending), context, run.max_tokens)
        messages = list(request.messages)
        for _ in range(MAX_CALLS_PER_SESSION):
            response = deps.model.create(ModelRequest(**{**request.model_dump(), "messages": messages}))
            usage = usage.add(response.usage)
            stop_reason = response.stop_reason
            blocks = list(response.content)
            if stop_reason in ("max_tokens", "model_context_window_exceeded") and blocks and isinstance(blocks[-1], ToolUseBlock):
                blocks.pop()  # cut off mid-call: never executed
            results = []
            for block in blocks:
                if not isinstance(block, ToolUseBlock):
                    continue
                extraction, text = _handle_tool(block, facts, chunks, response.model, session)
                if extraction is not None:
                    deps.state.put_extraction(run_id, extraction)
                    _apply(facts, extraction)
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": text,
                                "is_error": extraction is None})
            if stop_reason == "refusal":
                raise ModelRefused(f"model refused in session {session} of run {run_id}")
            if stop_reason == "pause_turn" or (stop_reason == "tool_use" and facts.pending):
                messages.append(Message(role="assistant", content=[b.model_dump() for b in blocks]))
                if results:
                    messages.append(Message(role="user", content=results))
                continue
            break
    done = not facts.pending
    deps.state.save_checkpoint(Checkpoint(run_id=run_id, version=checkpoint.version + 1, case_facts=facts,
                                          sessions=session, last_stop_reason=stop_reason, usage=usage,
                                          updated_at=_now()))
    deps.state.put_run(run.model_copy(update={"status": "SUCCEEDED" if done else "RUNNING",
                                              "model": deps.model.name, "updated_at": _now()}))
    return SessionOutcome(run_id=run_id, doc_id=run.doc_id, status="DONE" if done else "CONTINUE",
                          stop_reason=stop_reason, sessions=session, checkpoint_version=checkpoint.version + 1,
                          extracted=facts.extracted_count, pending=len(facts.pending))


def record_failure(state: StateStore, run_id: str, error: str, cause: str) -> RunRecord:
    """Mark a run ``FAILED`` with the Step Functions error and cause; the checkpoint is untouched."""
    run = state.get_run(run_id)
    if run is None:
        raise NotFound(f"run {run_id} does not exist")
    failed = run.model_copy(update={"status": "FAILED", "error": error, "cause": cause[:2000], "updated_at": _now()})
    state.put_run(failed)
    return failed


def run_result(state: StateStore, run_id: str) -> dict:
    """The run as the CLI and API report it: status, counters, CASE_FACTS, extractions, usage."""
    run = state.get_run(run_id)
    if run is None:
        raise NotFound(f"run {run_id} does not exist")
    checkpoint = state.load_checkpoint(run_id)
    usage = checkpoint.usage if checkpoint else Usage()
    return {
        "run_id": run.run_id,
        "doc_id": run.doc_id,
        "doc_version": run.doc_version,
        "status": run.status,
        "model": run.model,
        "sessions": checkpoint.sessions if checkpoint else 0,
        "checkpoints": checkpoint.version if checkpoint else 0,
        "case_facts": checkpoint.case_facts.model_dump(mode="json") if checkpoint else None,
        "extractions": [e.model_dump(mode="json", exclude={"model", "session"}) | {"model": e.model}
                        for e in state.list_extractions(run_id)],
        "usage": usage.model_dump(),
        "error": run.error,
        "cause": run.cause,
    }
