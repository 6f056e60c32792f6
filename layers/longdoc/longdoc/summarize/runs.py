"""Starting a summary (the one way, idempotent) and reading it back; the local stream sink.

:func:`start_summary` checks the input (a READY document with text, a sane focus), names the
summary after what it summarises (same document version, focus, length and model -> same
id, so a repeat returns the stored summary and a failed or killed one resumes), records it
and starts an execution of ``statemachine/summarize.asl.json``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from longdoc.core.admission import Admission
from longdoc.core.clock import utc_now
from longdoc.core.documents import load_chunks, not_ready_reason, ready_document
from longdoc.core.errors import EmptyDocument, NotFound, SummaryInputError
from longdoc.core.ports import BlobStore, ExecutionStarter, StateStore
from longdoc.summarize import store
from longdoc.summarize.models import FOCUS_MAX_CHARS, SummaryRecord, SummaryRequest


def summary_id_for(doc_id: str, doc_version: str, focus: str | None, length: str, model: str) -> str:
    """``sum-`` + 20 hex digits of SHA-256 over what is summarised and by which model."""
    key = json.dumps([doc_id, doc_version, focus or "", length, model], ensure_ascii=False)
    return "sum-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:20]


def check_request(request: SummaryRequest, state: StateStore, blobs: BlobStore) -> tuple[SummaryRequest, Any]:
    """The request with its focus normalised, and the document version to summarise.

    Raises :class:`NotFound` (unknown document), :class:`SummaryInputError` (not READY, focus
    over :data:`FOCUS_MAX_CHARS`), :class:`EmptyDocument` (no text). Each message is one line.
    """
    focus = " ".join((request.focus or "").split()) or None
    if focus and len(focus) > FOCUS_MAX_CHARS:
        raise SummaryInputError(f"--focus is {len(focus)} characters; the limit is {FOCUS_MAX_CHARS} "
                                "(name a topic, e.g. \"exclusions\")")
    doc = ready_document(state, request.doc_id, request.doc_version)
    if doc is None:
        raise NotFound(f"document {request.doc_id} does not exist (ingest it first)")
    if doc.status != "READY":
        raise SummaryInputError(f"document {doc.doc_id} version {doc.doc_version} is {doc.status}, not READY: "
                                f"{not_ready_reason(doc)}")
    chunks = load_chunks(blobs, doc.doc_id, doc.doc_version)
    if not any(c.text.strip() for c in chunks):
        raise EmptyDocument(f"document {doc.doc_id} version {doc.doc_version} has no text to summarise")
    return request.model_copy(update={"focus": focus, "doc_version": doc.doc_version}), doc


def start_summary(request: SummaryRequest, *, state: StateStore, blobs: BlobStore, starter: ExecutionStarter,
                  model_name: str, resume_running: bool = False, admission: Admission | None = None) -> SummaryRecord:
    """Record the summary and start its execution (``<summary_id>-<attempt>``, input ``{"summary_id"}``).

    A SUCCEEDED summary is returned as it is (no execution); one in progress (RUNNING, or
    PENDING with an execution started) too unless ``resume_running`` (the CLI after a killed
    local run). A FAILED one, a PENDING one whose start failed, or a resumed one starts a new
    attempt (``attempts`` + 1) that skips the finished groups. ``admission`` (the API, issue 26):
    before a new attempt is recorded, running summary executions are counted and
    :class:`~longdoc.core.errors.TooManyRuns` raised at the cap (nothing stored or started).
    Raises as :func:`check_request`.
    """
    request, doc = check_request(request, state, blobs)
    summary_id = summary_id_for(doc.doc_id, doc.doc_version, request.focus, request.length, model_name)
    record = store.find_record(blobs, summary_id)
    in_progress = record is not None and (record.status == "RUNNING" or (record.status == "PENDING"
                                                                         and record.execution_arn is not None))
    if record is not None and (record.status == "SUCCEEDED" or (in_progress and not resume_running)):
        return record
    if record is None:
        record = SummaryRecord(summary_id=summary_id, doc_id=doc.doc_id, doc_version=doc.doc_version,
                               source=doc.source, request=request, model=model_name,
                               baseline=model_name.startswith("offline-"), created_at=utc_now())
    if admission is not None:
        admission.check()
    attempt = record.attempts + 1
    record = store.save_record(blobs, record.model_copy(update={"attempts": attempt, "status": "PENDING",
                                                                "error": None, "cause": None}))
    arn = starter.start_execution(f"{summary_id}-{attempt}", {"summary_id": summary_id})
    return store.save_record(blobs, record.model_copy(update={"execution_arn": arn}))


def summary_view(blobs: BlobStore, summary_id: str) -> dict[str, Any]:
    """The result when the summary succeeded, else its record (status, error, counters); a FAILED
    summary that kept no statement (``EmptySummary``) also has ``dropped``: every statement the
    checks dropped, ``[{"text", "sections", "reason", "stage"}]``.

    Raises :class:`NotFound` for an unknown id.
    """
    result = store.load_result(blobs, summary_id)
    if result is not None:
        return result
    record = store.load_record(blobs, summary_id)
    view = record.model_dump()
    failed_empty = record.status == "FAILED" and record.error == "EmptySummary"
    dropped = store.load_dropped(blobs, summary_id) if failed_empty else None
    if dropped is not None:  # it kept no statement: what was dropped, and why
        view["dropped"] = dropped
    if blobs.exists(store.plan_key(summary_id)):
        the_plan = store.load_plan(blobs, summary_id)
        view.update(mode=the_plan.mode, groups=len(the_plan.groups))
    return view


_SINKS: list[Callable[[str], None]] = []


class _Emit:
    """The handler's ``on_text`` (:class:`~longdoc.core.ports.TextSink`): each delta, and each discard
    of a failed attempt's text, to every sink registered in this process (none on AWS)."""

    def __call__(self, text: str) -> None:
        """Send a streamed text delta to every sink."""
        for sink in list(_SINKS):
            sink(text)

    def discard(self, reason: str) -> None:
        """Tell every sink that has ``discard`` that the text since the last discard is void."""
        for sink in list(_SINKS):
            discard = getattr(sink, "discard", None)
            if callable(discard):
                discard(reason)


emit = _Emit()
"""Send a streamed text delta (``emit(text)``) or a discard (``emit.discard(reason)``) to every registered sink."""


@contextmanager
def streaming_to(sink: Callable[[str], None]) -> Iterator[None]:
    """Register ``sink`` for the final synthesis' text deltas while the block runs (local mode: the CLI prints them).

    The local engine runs the summarize handler in this process, so the handler's
    :func:`emit` reaches the CLI's sink; on AWS no sink is registered and the text is stored only.
    """
    _SINKS.append(sink)
    try:
        yield
    finally:
        _SINKS.remove(sink)
