"""One function per MCP tool: an argument model in, the answer as a JSON-ready dict out.

Each calls the service the CLI or the API calls, over the stores :mod:`longdoc.wiring` builds
(``resume_run`` is ``longdoc runs resume`` in a worker process):
ingest is the CLI's (:func:`longdoc.cli.ingest.ingest_one`), runs start with
:func:`~longdoc.extract.runs.start_extraction` and read back with
:func:`~longdoc.extract.runs.run_result` as ``POST``/``GET /extractions`` do, summaries with
:func:`~longdoc.summarize.runs.start_summary` / :func:`~longdoc.summarize.runs.summary_view`,
triage with :func:`~longdoc.triage.service.run_triage`, search with the ranking of the model's own
``search_chunks`` (:func:`~longdoc.extract.context.search_document`). Executions start through
:func:`longdoc.wiring.execution_starter` (Step Functions with AWS settings; in local mode the
workers ``longdoc mcp`` and ``longdoc serve`` put there). Errors are the services' own
(:class:`~longdoc.core.errors.LongdocError` and its kin); :mod:`longdoc.mcpserver.server` turns them
into one-line tool errors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from longdoc.core.errors import LongdocError, NotFound
from longdoc.core.models import Chunk, DocumentRecord
from longdoc.extract.runs import ExtractionRequest
from longdoc.mcpserver import jobs
from longdoc.mcpserver.args import (ChunkArgs, IngestArgs, ListDocumentsArgs, NoArgs, PageArgs, RunArgs, SearchArgs,
                                    SummaryIdArgs, TriageIdArgs)
from longdoc.summarize.models import SummaryRequest
from longdoc.triage.service import TriageRequest

JOBS = jobs.Jobs()
"""This process's in-process jobs (ingests and triages still running)."""


def document_row(record: DocumentRecord) -> dict[str, Any]:
    """A document version as ``list_documents`` shows it: id, version, source, pages, chunks, status (reason), metadata."""
    meta = record.metadata
    return {"doc_id": record.doc_id, "doc_version": record.doc_version, "source": record.source,
            "pages": record.pages, "chunks": record.chunks, "status": record.status, "reason": record.reason,
            "collection": meta.collection, "doc_type": meta.doc_type, "line_of_business": meta.line_of_business,
            "term": meta.term}


def chunk_view(chunk: Chunk, text: bool = True) -> dict[str, Any]:
    """A chunk with what a citation needs: id, ordinal, pages and printed labels, section ids, heading path, text."""
    view: dict[str, Any] = {"chunk_id": chunk.chunk_id, "doc_id": chunk.doc_id, "doc_version": chunk.doc_version,
                            "ordinal": chunk.ordinal, "source": chunk.source, "page_start": chunk.page_start,
                            "page_end": chunk.page_end, "page_labels": chunk.page_labels,
                            "section_id": chunk.section_id, "section_ids": chunk.section_ids,
                            "heading_path": chunk.heading_path, "token_count": chunk.token_count}
    if chunk.ocr:
        view.update(ocr=True, ocr_confidence=chunk.ocr_confidence)
    if text:
        view["text"] = chunk.text
    return view


def ready(doc_id: str, doc_version: str | None = None) -> DocumentRecord:
    """The READY version to read (:func:`~longdoc.core.documents.ready_document`); :class:`NotFound` saying why not.

    One wording per case, for every tool that reads a document (:func:`not_ready`).
    """
    from longdoc import wiring
    from longdoc.core.documents import ready_document

    state = wiring.state_store()
    record = ready_document(state, doc_id, doc_version)
    if record is None or record.status != "READY":
        raise NotFound(not_ready(doc_id, doc_version, record))
    return record


def not_ready(doc_id: str, doc_version: str | None, record: DocumentRecord | None) -> str:
    """Why ``doc_id`` (version ``doc_version``) cannot be read, with the next step; one line.

    - unknown: ``document X is not ingested (list_documents lists those that are)``;
    - ``INGESTING`` with a live ingest: ``document X is being ingested; poll list_documents until it
      is READY``; with its ingest gone (the claim released, or its process dead,
      :func:`~longdoc.ingest.lease.claim_holder_gone`): ``... its ingest was interrupted; call ingest
      with the file again to finish it``;
    - otherwise: ``document X is not READY (FAILED: <reason>)``.
    """
    from longdoc import wiring
    from longdoc.core.documents import not_ready_reason
    from longdoc.ingest.lease import claim_holder_gone

    what = f"{doc_id} version {doc_version}" if doc_version else doc_id
    if record is None:
        return f"document {what} is not ingested (list_documents lists those that are)"
    if record.status == "INGESTING":
        holder = wiring.state_store().version_claim_owner(record.doc_id, record.doc_version)
        if holder is None or claim_holder_gone(holder):
            return (f"document {what} is INGESTING but its ingest was interrupted; call ingest with the file "
                    "again to finish it (progress is kept)")
        return f"document {what} is being ingested; poll list_documents until its status is READY"
    return f"document {what} is not READY ({record.status}: {not_ready_reason(record)})"


def chunks_of(record: DocumentRecord) -> list[Chunk]:
    """The version's chunks from the blob store."""
    from longdoc import wiring
    from longdoc.core.documents import load_chunks

    return load_chunks(wiring.blob_store(), record.doc_id, record.doc_version)


def list_documents(args: ListDocumentsArgs) -> dict[str, Any]:
    """Every document id with the version commands read (latest READY, else the latest), by id."""
    from longdoc import wiring
    from longdoc.core.documents import ready_document

    state = wiring.state_store()
    lister = getattr(state, "list_document_ids", None)
    if lister is None:
        raise LongdocError(f"{type(state).__name__} cannot list documents")
    rows = [document_row(r) for r in (ready_document(state, i) for i in sorted(lister())) if r is not None]
    if args.collection:
        rows = [r for r in rows if r["collection"] == args.collection]
    return {"documents": rows}


def _ingest_local(path: Path) -> dict[str, Any]:
    from longdoc.cli.ingest import ingest_one, overlap_warnings

    record, _previous, change, _before = ingest_one(path)
    return document_row(record) | {"reused": record.reused, "skipped": change == "unchanged", "change": change,
                                   "pages_needing_ocr": record.pages_needing_ocr,
                                   "warnings": [*record.warnings, *overlap_warnings(record)]}


def ingest(args: IngestArgs) -> dict[str, Any]:
    """Ingest one file. Locally: the CLI's ingest, answered in full when done within
    :data:`~longdoc.mcpserver.jobs.WAIT_SECONDS`, else ``INGESTING`` (poll ``list_documents``).
    With AWS settings: the file is uploaded to the bucket's ``incoming/`` and the ingest function
    takes it from there (``INGESTING``). The path is checked first
    (:func:`~longdoc.mcpserver.paths.ingest_path`: relative paths, ``LONGDOC_MCP_ROOT``).
    An ingest left ``INGESTING`` by a server that died is taken over (its claim's holder process
    is gone: :func:`~longdoc.ingest.lease.claim_holder_gone`). Raises :class:`LongdocError` naming
    the file and the problem."""
    from longdoc import wiring
    from longdoc.config import get_settings
    from longdoc.core.documents import INCOMING_PREFIX
    from longdoc.ingest.ids import resolve_doc_id, version_for
    from longdoc.mcpserver.paths import ingest_path

    path = ingest_path(args.path)
    key = INCOMING_PREFIX + path.name
    pending = {"doc_id": resolve_doc_id(key, wiring.state_store()), "doc_version": version_for(path.read_bytes()),
               "source": path.name, "status": "INGESTING", "poll": "list_documents"}
    if get_settings().mode == "aws":
        wiring.blob_store().put(key, path.read_bytes())
        return pending
    job = JOBS.run(f"ingest:{path}", lambda: _ingest_local(path))
    if not job.done.is_set():
        return pending
    if job.error is not None:
        raise job.error
    result: dict[str, Any] = job.result
    return result


def search_chunks(args: SearchArgs) -> dict[str, Any]:
    """The document version's best chunks for the query, ranked as the extraction model's own search ranks them."""
    from longdoc import wiring
    from longdoc.extract.context import search_document

    record = ready(args.doc_id, args.doc_version)
    ranked = search_document(wiring.deps(), chunks_of(record), args.query, args.top_k)
    return {"doc_id": record.doc_id, "doc_version": record.doc_version, "query": args.query,
            "chunks": [chunk_view(c) for c in ranked]}


def find_chunk(chunk_id: str) -> Chunk:
    """The chunk ``<doc_id>:<version[:8]>:<ordinal>``; :class:`NotFound` when there is none."""
    from longdoc import wiring

    doc_id, _, rest = chunk_id.partition(":")
    prefix, _, ordinal = rest.partition(":")
    versions = wiring.state_store().list_document_versions(doc_id) if doc_id and prefix and ordinal.isdigit() else []
    for record in versions:
        if record.doc_version.startswith(prefix) and record.chunks:
            match = [c for c in chunks_of(record) if c.chunk_id == chunk_id]
            if match:
                return match[0]
    raise NotFound(f"chunk {chunk_id} does not exist (ids look like <doc_id>:<version[:8]>:<ordinal>, "
                   "as search_chunks and citations give them)")


def get_chunk(args: ChunkArgs) -> dict[str, Any]:
    """One chunk with its text, pages, labels, sections and heading path."""
    return chunk_view(find_chunk(args.chunk_id))


def get_page_text(args: PageArgs) -> dict[str, Any]:
    """The indexed text of one physical page, with its printed label."""
    from longdoc.core.documents import page_text

    record = ready(args.doc_id, args.doc_version)
    chunks = chunks_of(record)
    text = page_text(chunks, args.page)
    if text is None:
        why = "the document has no pages" if not record.pages else (
            f"it has {record.pages} pages" if args.page > record.pages else "no text is indexed for it (scanned, no OCR)")
        raise NotFound(f"page {args.page} of {record.doc_id}: {why}")
    label = next((s.label for c in chunks for s in c.page_spans if s.page == args.page and s.label), None)
    return {"doc_id": record.doc_id, "doc_version": record.doc_version, "page": args.page, "page_label": label,
            "text": text}


def list_clause_types(args: NoArgs) -> dict[str, Any]:
    """The clause-type catalogue: name, description, answer kind."""
    from longdoc.config import get_settings
    from longdoc.extract.catalogue import load_catalogue

    return {"clause_types": [{"name": c.name, "description": c.description, "answer_kind": c.answer_kind}
                             for c in load_catalogue(get_settings().clause_catalogue)]}


def extract(args: ExtractionRequest) -> dict[str, Any]:
    """Start an extraction run (as ``POST /extractions``: the same request again answers the same run)."""
    from longdoc import wiring
    from longdoc.config import get_settings
    from longdoc.extract.catalogue import load_catalogue
    from longdoc.extract.runs import start_extraction, validate_run_request

    settings = get_settings()
    state, catalogue = wiring.state_store(), load_catalogue(settings.clause_catalogue)
    # A bad request fails here, before an execution starter is built (as the CLI checks first).
    ready(args.doc_id, args.doc_version)
    validate_run_request(state, catalogue, doc_id=args.doc_id, clause_types=args.clause_types,
                         doc_version=args.doc_version)
    starter = wiring.execution_starter("extract")
    run = start_extraction(args, state=state, catalogue=catalogue, settings=settings, starter=starter,
                           model_name=wiring.model_name(settings))
    answer: dict[str, Any] = {"run_id": run.run_id, "status": run.status, "doc_id": run.doc_id,
                              "doc_version": run.doc_version,
              "clause_types": run.clause_types, "poll": "get_run"}
    if settings.mode == "local" and callable(getattr(starter, "resume", None)):
        from longdoc.local.console import run_state

        if run_state(state, run) == "STALE":  # the same request for a run whose worker died: resume it
            starter.resume(run.run_id)  # type: ignore[attr-defined]
            answer.update(status="RUNNING", resumed=True)
    return answer


def resume_run(args: RunArgs) -> dict[str, Any]:
    """Resume a ``STALE`` or ``FAILED`` run from its checkpoint in a worker (``longdoc runs resume`` in the
    background); answers at once. Raises :class:`NotFound` for an unknown run, :class:`LongdocError`
    for a run that is live or finished, or on AWS (a Step Functions execution is redriven there)."""
    from longdoc import wiring
    from longdoc.config import get_settings

    starter = wiring.execution_starter("extract") if get_settings().mode == "local" else None
    resume = getattr(starter, "resume", None)
    if not callable(resume):
        raise LongdocError("resume_run resumes local runs; on AWS a failed run is redriven from the Step "
                           "Functions console (docs/operations.md), and extract with the same request "
                           "starts a new attempt")
    resume(args.run_id)
    return {"run_id": args.run_id, "status": "RUNNING", "resumed": True, "poll": "get_run"}


def get_run(args: RunArgs) -> dict[str, Any]:
    """A run: status (``STALE`` locally when its worker died), pending clause types, extractions with
    citations, usage and cost; the fields of ``GET /extractions/{id}`` but the per-call list."""
    from longdoc import wiring
    from longdoc.config import get_settings
    from longdoc.extract.runs import reconcile_run, run_result

    settings = get_settings()
    state = wiring.state_store()
    run = state.get_run(args.run_id)
    if run is None:
        raise NotFound(f"run {args.run_id} does not exist")
    status_of = getattr(wiring.execution_starter("extract"), "execution_status", None) \
        if settings.mode == "aws" and run.status == "RUNNING" else None
    if callable(status_of):  # as GET /extractions/{id}: a stopped or timed-out execution is recorded failed first
        reconcile_run(state, run, status_of)
    result = run_result(state, args.run_id, str(settings.price_table) if settings.price_table else None)
    result.pop("calls", None)
    result["progress"] = run_progress(state, run)
    result["pending"] = result["progress"]["pending"]
    if settings.mode == "local":
        from longdoc.local.console import run_state

        result["status"] = run_state(state, run)
        if result["status"] in ("STALE", "FAILED"):
            result["next"] = f"resume_run with run_id {run.run_id} continues it from its checkpoint"
    result["done"] = result["status"] in ("SUCCEEDED", "FAILED")
    return result


def run_progress(state: Any, run: Any) -> dict[str, Any]:
    """Where a run stands from its latest checkpoint: clause types ``found`` and ``not_found`` so far, those
    ``pending`` (all of them before the first checkpoint, none once it succeeded without one), ``sessions``."""
    from longdoc.core.errors import CheckpointSchemaError

    try:
        checkpoint = state.load_checkpoint(run.run_id)
    except CheckpointSchemaError:
        checkpoint = None
    if checkpoint is None:
        return {"found": [], "not_found": [], "sessions": 0,
                "pending": [] if run.status == "SUCCEEDED" else list(run.clause_types)}
    facts = checkpoint.case_facts
    return {"found": [c for c in facts.clause_types if c in facts.resolved and facts.resolved[c].status == "found"],
            "not_found": [c for c in facts.clause_types
                          if c in facts.resolved and facts.resolved[c].status == "not_found"],
            "pending": facts.pending, "sessions": checkpoint.sessions}


def summarize(args: SummaryRequest) -> dict[str, Any]:
    """Start a summary (as ``POST /summaries``: the same request answers the stored or running summary).

    Locally, a summary in progress whose worker process died (:func:`summary_worker_gone`) is
    started again (a new attempt, skipping the groups already done), as ``longdoc summarize`` does
    after a killed run; the answer then says ``resumed``."""
    from longdoc import wiring
    from longdoc.summarize.baseline import summary_model_name
    from longdoc.summarize.runs import start_summary

    ready(args.doc_id, args.doc_version)
    state, blobs, starter = wiring.state_store(), wiring.blob_store(), wiring.execution_starter("summarize")
    model = summary_model_name(wiring.model_name())
    record = start_summary(args, state=state, blobs=blobs, starter=starter, model_name=model)
    resumed = record.status in ("PENDING", "RUNNING") and summary_worker_gone(record.execution_arn)
    if resumed:
        record = start_summary(args, state=state, blobs=blobs, starter=starter, model_name=model, resume_running=True)
    answer = {"summary_id": record.summary_id, "status": record.status, "doc_id": record.doc_id,
              "doc_version": record.doc_version, "poll": "get_summary"}
    return answer | ({"resumed": True} if resumed else {})


def summary_worker_gone(execution_arn: str | None) -> bool:
    """Locally, whether the worker of a summary execution has ended (its recorded pid runs no more:
    :func:`longdoc.local.server.execution_worker_gone`); False on AWS or without an execution."""
    from longdoc.config import get_settings

    settings = get_settings()
    if settings.mode != "local" or not execution_arn:
        return False
    from longdoc.local.server import execution_worker_gone

    return execution_worker_gone(settings.home, "summarize", execution_arn)


def get_summary(args: SummaryIdArgs) -> dict[str, Any]:
    """The summary when done (statements with citations, exact values, usage, cost), else its status
    (``STALE`` locally when its worker died: ``summarize`` with the same arguments resumes it)."""
    from longdoc import wiring
    from longdoc.summarize.runs import summary_view

    view = summary_view(wiring.blob_store(), args.summary_id)
    view.setdefault("status", "SUCCEEDED")
    if view["status"] in ("PENDING", "RUNNING") and summary_worker_gone(view.get("execution_arn")):
        view.update(status="STALE", next="summarize with the same arguments resumes it, skipping the finished groups")
    view["done"] = view["status"] in ("SUCCEEDED", "FAILED")
    return view


def triage(args: TriageRequest) -> dict[str, Any]:
    """Triage a claim on a thread; answered in full when done within the wait, else RUNNING (poll ``get_triage``)."""
    from longdoc import wiring
    from longdoc.triage.service import run_triage

    blobs = wiring.blob_store()
    triage_id = jobs.new_triage_id()
    jobs.save_triage(blobs, triage_id, "RUNNING")

    def work() -> dict[str, Any]:
        try:
            return jobs.save_triage(blobs, triage_id, "SUCCEEDED", result=run_triage(args, wiring.triage_deps()))
        except Exception as exc:
            reason = str(exc) if isinstance(exc, LongdocError) else f"{type(exc).__name__}: {exc}"
            return jobs.save_triage(blobs, triage_id, "FAILED", error=reason)

    job = JOBS.run(f"triage:{triage_id}", work)
    view = job.result if job.done.is_set() and job.result is not None else {"triage_id": triage_id, "status": "RUNNING"}
    if view["status"] == "FAILED":  # failed within the wait (unknown collection, bad claim): the caller's error
        raise LongdocError(view.get("error") or "triage failed")
    return view | {"done": view["status"] != "RUNNING", "poll": "get_triage"}


def get_triage(args: TriageIdArgs) -> dict[str, Any]:
    """A triage: RUNNING, SUCCEEDED with the result, or FAILED with the one-line reason."""
    from longdoc import wiring

    view = jobs.load_triage(wiring.blob_store(), args.triage_id)
    return view | {"done": view["status"] != "RUNNING"}
