"""A bulk job's request and its creation, outside API Gateway's 29 s (issue 26), and its status pages.

``POST /bulk-extractions`` only stores the request and starts the execution
(:func:`submit_request`): the document list goes to the blob store
(``bulk/<bulk_id>/request-<hash>.json``, any size) and one small ``request`` item (body hash,
owner, blob key, count) guards the Idempotency-Key. The machine's first state, ``CreateRuns``
(:func:`create_runs`), reads it back, checks each document, writes one ``PENDING`` run per READY
document (:meth:`~longdoc.core.ports.StateStore.put_runs`) and its ``run#`` item
(:meth:`~longdoc.bulk.ports.BulkStore.put_many`), both in batches of 25 (DynamoDB
``BatchWriteItem``, unprocessed items retried:
https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchWriteItem.html), the
rejections to ``bulk/<bulk_id>/rejected.json``, and the ``job`` item LAST: the commit marker. A
state killed midway leaves no job, and its retry writes the same runs again (same ids, still
``PENDING``: no round has begun), so a job never silently lacks documents.

The ``job`` item keeps the counters ``GET /bulk-extractions/{id}`` reports (:func:`record_counts`
after every Harvest and at Finish), so a status page is one read of the job plus one page of
``run#`` items and one batched read of their runs (:func:`bulk_page`), whatever the job's size.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from longdoc.bulk.runs import Rejected, Selection, Stores, _line_order
# the job's current execution is read by the status too (longdoc.bulk.runs); re-exported for callers
from longdoc.bulk.runs import EXECUTION_ITEM as EXECUTION_ITEM, execution_name as execution_name
from longdoc.bulk.steps import job_outcome, outcome_reason
from longdoc.core.admission import Admission
from longdoc.core.clock import utc_now
from longdoc.core.documents import not_ready_reason, ready_document
from longdoc.core.errors import IdempotencyConflict, LongdocError, NoDocumentAccepted, NotFound
from longdoc.core.ports import BlobStore
from longdoc.core.records import RunRecord
from longdoc.core.tenancy import visible_to

REJECTED_SHOWN = 1000
"""Most rejections a status page lists (the rest: ``rejected_count`` and the blob ``rejected.json``)."""
PAGE_LIMIT_MAX = 500
"""Most documents one ``GET /bulk-extractions/{id}`` page returns (one Query page, five BatchGetItem calls)."""


class StoredRequest(BaseModel):
    """A bulk request as stored for ``CreateRuns``: clause types (catalogue spelling), the document ids
    in order (their manifest lines when given), rejections made before (manifest lines), the model
    and per-call limits (``max_tokens`` output tokens, ``top_k`` chunks), and the caller (``owner``)."""

    bulk_id: str
    owner: str | None = None
    clause_types: list[str]
    doc_ids: list[str]
    lines: dict[str, int] = Field(default_factory=dict)
    rejected: list[dict[str, str]] = Field(default_factory=list)
    model: str
    max_tokens: int
    top_k: int


def _pk(bulk_id: str) -> str:
    return f"bulk#{bulk_id}"


def rejected_key(bulk_id: str) -> str:
    """Where a job's rejections live: ``bulk/<bulk_id>/rejected.json`` (a JSON list of ``{"where", "reason"}``)."""
    return f"bulk/{bulk_id}/rejected.json"


def submit_request(stores: Stores, blobs: BlobStore, request: StoredRequest, body_hash: str,
                   admission: Admission | None = None) -> dict[str, Any]:
    """Store ``request`` once under its job id and return the ``request`` item.

    A request already stored with this ``body_hash`` is returned as it is (a retry: no counting,
    nothing written). Raises :class:`IdempotencyConflict` when the id was stored with another body,
    :class:`~longdoc.core.errors.TooManyRuns` from ``admission`` for a new job at the cap (nothing
    stored). The blob is written before the item that names it, under a key holding the body hash,
    so a racing request with another body never overwrites it."""
    pk = _pk(request.bulk_id)
    item = stores.store.get(pk, "request")
    if item is None:
        if admission is not None:
            admission.check()
        key = f"bulk/{request.bulk_id}/request-{body_hash[:16]}.json"
        blobs.put(key, request.model_dump_json().encode())
        stores.store.put_if_absent(pk, "request", {"hash": body_hash, "owner": request.owner, "blob": key,
                                                   "requested": len(request.doc_ids) + len(request.rejected)})
        item = stores.store.get(pk, "request") or {}
    if item.get("hash") != body_hash:
        raise IdempotencyConflict(request.bulk_id)
    return item


def _not_ready(doc_id: str, record: Any) -> str:
    status = f" (status {record.status}: {not_ready_reason(record)})" if record else ""
    return f"document {doc_id} is not ingested{status}"


def create_runs(stores: Stores, blobs: BlobStore, bulk_id: str) -> dict[str, Any]:
    """The ``CreateRuns`` state: the job's runs from its stored request, the job item last.

    Idempotent: a job item already stored returns at once. Returns ``{"bulk_id", "runs",
    "rejected"}``. Raises :class:`NotFound` when no request is stored, :class:`NoDocumentAccepted`
    (after committing the job with zero runs and its rejections) when no document is READY, and
    :class:`~longdoc.core.errors.StoreBatchIncomplete` from a throttled batch (retried by the state)."""
    pk = _pk(bulk_id)
    job = stores.store.get(pk, "job")
    if job is None:
        item = stores.store.get(pk, "request")
        if item is None:
            raise NotFound(f"bulk job {bulk_id}: no stored request")
        request = StoredRequest.model_validate_json(blobs.get(item["blob"]))
        job = _commit(stores, blobs, request)
    if not job["runs"]:
        raise NoDocumentAccepted(f"bulk job {bulk_id}: no document to run ({job['rejected']} rejected; "
                                 f"see {rejected_key(bulk_id)})")
    return {"bulk_id": bulk_id, "runs": job["runs"], "rejected": job["rejected"]}


def _commit(stores: Stores, blobs: BlobStore, request: StoredRequest) -> dict[str, Any]:
    """Write the runs, their ``run#`` items and the rejections in batches, then the job item; returns it."""
    now = utc_now()
    rejected = [Rejected(r["where"], r["reason"]) for r in request.rejected]
    runs: list[RunRecord] = []
    for n, doc_id in enumerate(request.doc_ids):
        record = ready_document(stores.state, doc_id)
        if record is None or record.status != "READY":
            line = request.lines.get(doc_id)
            rejected.append(Rejected(f"line {line}" if line else doc_id, _not_ready(doc_id, record)))
            continue
        runs.append(RunRecord(run_id=f"{request.bulk_id}-{n:05d}", doc_id=doc_id, doc_version=record.doc_version,
                              clause_types=request.clause_types, model=request.model, max_tokens=request.max_tokens,
                              top_k=request.top_k, created_at=now, updated_at=now, owner=request.owner))
    rejected.sort(key=_line_order)
    stores.state.put_runs(runs)
    stores.store.put_many(_pk(request.bulk_id), [
        (f"run#{r.run_id}", {"run_id": r.run_id, "doc_id": r.doc_id, "failed": [], "note": None}) for r in runs])
    blobs.put(rejected_key(request.bulk_id),
              json.dumps([{"where": r.where, "reason": r.reason} for r in rejected], ensure_ascii=False).encode())
    job = {"bulk_id": request.bulk_id, "clause_types": request.clause_types, "runs": len(runs),
           "requested": len(request.doc_ids) + len(request.rejected), "rejected": len(rejected),
           "owner": request.owner, "counts": {"pending": len(runs), "done": 0, "failed": 0}, "counted_round": None,
           "finished": False}
    stores.store.put_if_absent(_pk(request.bulk_id), "job", job)  # the commit marker, last
    return stores.store.get(_pk(request.bulk_id), "job") or job


def selection_request(bulk_id: str, selection: Selection, *, clause_types: list[str], model: str, max_tokens: int,
                      top_k: int, owner: str | None = None) -> StoredRequest:
    """The stored request of a :class:`Selection` (the CLI's ids or manifest, with its rejections)."""
    return StoredRequest(bulk_id=bulk_id, owner=owner, clause_types=clause_types, doc_ids=selection.doc_ids,
                         lines=selection.lines, rejected=[{"where": r.where, "reason": r.reason}
                                                          for r in selection.rejected],
                         model=model, max_tokens=max_tokens, top_k=top_k)


def record_counts(stores: Stores, bulk_id: str, counts: dict[str, Any], round_number: int | None,
                  finished: bool = False) -> None:
    """Keep ``{"pending", "done", "failed"}`` of ``counts`` on the job item (after Harvest, at Finish),
    and at Finish the job's ``cost_usd`` / ``sync_cost_usd`` / ``cost`` (decimal strings or None) when given."""
    pk = _pk(bulk_id)
    job = stores.store.get(pk, "job")
    if job is None:
        return
    kept = {k: int(counts[k]) for k in ("pending", "done", "failed") if k in counts}
    costs: dict[str, Any] = {k: counts[k] for k in ("cost_usd", "sync_cost_usd", "cost") if k in counts}
    stores.store.put(pk, "job", {**job, **costs, "counts": {**job.get("counts", {}), **kept},
                                 "counted_round": round_number, "finished": finished or bool(job.get("finished"))})


def restart_execution(store: Any, bulk_id: str) -> tuple[str, dict[str, Any]]:
    """``(name, input)`` of an execution that continues a job whose execution died (a local worker
    killed): name ``<bulk_id>-s<n>`` (n counts the restarts; recorded before the start, so GET and the
    next restart look at the new one), input the job and the last round it prepared (round 0 when
    none). The machine is idempotent from its stores: CreateRuns returns at once once the job exists,
    a prepared round, a slice's committed pieces, a submitted batch and a harvested result are
    reused, never paid twice. Two racing restarts pick the same name, and the starter refuses the
    second (:class:`~longdoc.core.errors.ExecutionAlreadyExists`)."""
    pk = _pk(bulk_id)
    count = int((store.get(pk, EXECUTION_ITEM) or {}).get("restarts", 0)) + 1
    name = f"{bulk_id}-s{count}"
    store.put(pk, EXECUTION_ITEM, {"name": name, "restarts": count})
    prepared = len(store.query(pk, "prepared#"))
    return name, {"bulk_id": bulk_id, "round": max(0, prepared - 1)}


def job_status(stores: Stores, bulk_id: str, execution_gone: Callable[[str], bool] | None = None) -> str:
    """The job's status: ``CREATING`` (request stored, no job item yet), ``RUNNING``, once Finish ran
    ``SUCCEEDED`` (every document done), ``PARTIAL`` (some done, some failed) or ``FAILED`` (none
    done; :func:`~longdoc.bulk.steps.job_outcome` of the counts Finish kept), ``FAILED`` (a failure recorded), or ``STALE`` when ``execution_gone`` (the local
    starter's liveness probe, by the worker's pid) says the current execution's worker has died
    while the job was CREATING or RUNNING. ``NOT_FOUND`` when nothing is stored under the id."""
    pk = _pk(bulk_id)
    job = stores.store.get(pk, "job")
    if job is None and stores.store.get(pk, "request") is None:
        return "NOT_FOUND"
    failure = stores.store.get(pk, "failure")
    status = ("FAILED" if failure and failure.get("error") else "CREATING" if job is None
              else job_outcome(job.get("counts", {})) if job.get("finished") else "RUNNING")
    if status in ("CREATING", "RUNNING") and execution_gone is not None \
            and execution_gone(execution_name(stores.store, bulk_id)):
        return "STALE"
    return status


STALE_NEXT = ("its execution's worker died: POST the same request again (same Idempotency-Key) to restart it "
              "from its stores (nothing done is repeated)")
"""What a ``STALE`` job's status page says to do."""


def _token(sk: str | None) -> str | None:
    return base64.urlsafe_b64encode(sk.encode()).decode() if sk else None


def _after(token: str | None, bulk_id: str) -> str | None:
    if not token:
        return None
    try:
        sk = base64.urlsafe_b64decode(token.encode()).decode()
    except (ValueError, UnicodeDecodeError):
        raise LongdocError(f"next_token {token[:40]!r} is not a token of this job") from None
    if not sk.startswith(f"run#{bulk_id}-"):
        raise LongdocError(f"next_token {token[:40]!r} is not a token of this job")
    return sk


def _rejected(blobs: BlobStore, bulk_id: str) -> tuple[list[dict[str, str]] | None, bool]:
    """``(rejections shown, expired)``: the first :data:`REJECTED_SHOWN` of ``rejected.json``, or
    ``(None, True)`` once the ``bulk/`` lifecycle rule (template.yaml, ``BulkRetentionDays``) has
    deleted it: the status stays readable, the count stays on the job item."""
    try:
        return json.loads(blobs.get(rejected_key(bulk_id)))[:REJECTED_SHOWN], False
    except NotFound:
        return None, True


def bulk_page(stores: Stores, blobs: BlobStore, bulk_id: str, *, caller: str | None = None, limit: int = 100,
              next_token: str | None = None, execution_gone: Callable[[str], bool] | None = None) -> dict[str, Any]:
    """``GET /bulk-extractions/{id}``: the job's counters (as of its last Harvest), status, rejections
    and one page of documents (``limit`` 1-:data:`PAGE_LIMIT_MAX`, ``next_token`` from the previous
    page; ``next_token`` None on the last). Constant work per page: a job read, a ``run#`` Query
    page, one batched read of those runs. ``status``: ``CREATING`` (request stored, CreateRuns not
    done), ``RUNNING``, ``SUCCEEDED`` (Finish ran) or ``FAILED`` (a failure recorded). Raises
    :class:`NotFound` for an unknown job or another caller's (:func:`~longdoc.core.tenancy.visible_to`)
    and :class:`LongdocError` for a bad token. Once ``rejected.json`` has expired, ``rejected`` is
    None and ``rejected_expired`` True. ``execution_gone``: see :func:`job_status` (``STALE``,
    with ``next`` saying how to restart)."""
    pk = _pk(bulk_id)
    job = stores.store.get(pk, "job")
    owner = (job or stores.store.get(pk, "request") or {}).get("owner")
    if (job is None and stores.store.get(pk, "request") is None) or not visible_to(owner, caller):
        raise NotFound(f"bulk job {bulk_id} not found")
    failure = stores.store.get(pk, "failure")
    failure = failure if failure and failure.get("error") else None
    status = job_status(stores, bulk_id, execution_gone)
    stale = {"next": STALE_NEXT} if status == "STALE" else {}
    if job is None:
        return {"bulk_id": bulk_id, "status": status, "failure": failure, **stale,
                "documents": [], "next_token": None}
    page, last = stores.store.query_page(pk, "run#", max(1, min(limit, PAGE_LIMIT_MAX)), _after(next_token, bulk_id))
    runs = stores.state.get_runs([item["run_id"] for _, item in page])
    documents = [{"run_id": item["run_id"], "doc_id": item["doc_id"],
                  "status": runs[item["run_id"]].status if item["run_id"] in runs else "FAILED",
                  "error": runs[item["run_id"]].error if item["run_id"] in runs else "run record missing"}
                 for _, item in page]
    counts = job.get("counts", {})
    rejected, expired = _rejected(blobs, bulk_id) if job.get("rejected") and not next_token else (None, False)
    reason = outcome_reason(counts) if status in ("PARTIAL", "FAILED") and failure is None else None
    return {"bulk_id": bulk_id, "status": status, "reason": reason, "clause_types": job["clause_types"], "runs": job["runs"],
            "requested": job.get("requested"), **{k: counts.get(k, 0) for k in ("pending", "done", "failed")},
            "counted_round": job.get("counted_round"), "failure": failure,
            "rejected_count": job.get("rejected", 0), "rejected": rejected,
            **({"rejected_expired": True} if expired else {}),
            "results": f"results/{bulk_id}/summary.jsonl" if job.get("finished") else None,
            **{k: job.get(k) for k in ("cost_usd", "sync_cost_usd", "cost")},  # kept by Finish; None before
            "documents": documents, "next_token": _token(last), **stale}
