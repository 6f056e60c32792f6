"""Starting a bulk job from document ids or a manifest, and reporting on it (CLI, API, state machine).

A bulk job is ``bulk_id`` plus one extraction run per accepted document (:func:`start_bulk`);
the rounds of ``statemachine/bulk.asl.json`` then run them (:mod:`longdoc.bulk.steps`).
Bad input never stops the good documents: every rejected line or document id comes back with
its reason (and its manifest line number). Cost: the batch cost is the synchronous list price of
the same tokens times ``1 - batch_discount`` of the run's model row in the capability table
(:func:`longdoc.core.cost.batch_discount`; Message Batches are billed at 50 % of the standard
prices, BATCH page https://platform.claude.com/docs/en/build-with-claude/batch-processing),
:data:`BATCH_DISCOUNT` for a model priced by an override table without its own discount.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from longdoc.bulk.cache import priming_usage, rounds_cache
from longdoc.bulk.ports import BulkStore
from longdoc.bulk.steps import BulkDeps, counts_in, create_job, job_outcome, outcome_reason
from longdoc.core.cost import Price, batch_discount, estimate_cost, load_prices
from longdoc.core.errors import LongdocError, NotFound
from longdoc.core.failures import innermost_error
from longdoc.core.messages import Usage
from longdoc.core.ports import StateStore
from longdoc.extract.public import Catalogue, run_result, start_run

BATCH_DISCOUNT = Decimal("0.5")
"""Batch price / standard price when no row names one (Anthropic: batches cost 50 % of the standard API prices)."""
DOC_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,199}$")
"""What a manifest line may hold as a document id (no spaces, at most 200 characters)."""


@dataclass(frozen=True)
class Stores:
    """The two stores a bulk job's bookkeeping needs: runs and extractions (``state``), bulk items (``store``)."""

    state: StateStore
    store: BulkStore

    @classmethod
    def of(cls, deps: BulkDeps) -> Stores:
        """The stores of the bulk steps' dependencies."""
        return cls(deps.extract.state, deps.store)


@dataclass
class Rejected:
    """A document id or manifest line that will not run: ``where`` (``line 7`` or the id) and why."""

    where: str
    reason: str


@dataclass
class Selection:
    """Document ids to run (in order, without duplicates) and what was rejected on the way."""

    doc_ids: list[str] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict)


def parse_manifest(text: str) -> Selection:
    """Document ids of a manifest: one per line, as the bare id or a JSON object ``{"doc_id": ...}``.

    Blank lines and ``#`` comments are skipped. A line that is neither (bad JSON, no ``doc_id``,
    spaces or odd characters, a repeated id) is rejected with its 1-based line number and reason.
    Raises :class:`LongdocError` when no line names a document (an empty manifest)."""
    out = Selection()
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        doc_id, reason = _manifest_line(line)
        if doc_id and doc_id in out.lines:
            reason = f"duplicate of line {out.lines[doc_id]}"
        if reason or not doc_id:
            out.rejected.append(Rejected(f"line {number}", reason or "no document id"))
            continue
        out.doc_ids.append(doc_id)
        out.lines[doc_id] = number
    if not out.doc_ids and not out.rejected:
        raise LongdocError("the manifest names no documents (empty, or only blank and # lines)")
    return out


def _manifest_line(line: str) -> tuple[str | None, str | None]:
    """``(doc_id, None)`` or ``(None, reason)`` for one stripped manifest line."""
    if line.startswith("{"):
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            return None, f"not valid JSON ({exc.msg})"
        doc_id = value.get("doc_id") if isinstance(value, dict) else None
        if not isinstance(doc_id, str):
            return None, "JSON line without a string \"doc_id\""
        line = doc_id
    if not DOC_ID.match(line):
        return None, f"not a document id: {line[:60]!r}"
    return line, None


def start_bulk(stores: Stores, catalogue: Catalogue, bulk_id: str, selection: Selection, *, clause_types: list[str],
               model_name: str, max_tokens: int, top_k: int) -> Selection:
    """Store one PENDING run per READY document of ``selection`` (run id ``<bulk_id>-<n>``) and the
    bulk job over them. Unknown and not-READY documents are added to ``rejected`` (with their
    manifest line when there is one), which is then in manifest line order (ids given without a
    line last, in their order). Returns the selection of accepted documents. Raises
    :class:`LongdocError` when no document is accepted, or for unknown clause types."""
    accepted = Selection(rejected=list(selection.rejected), lines=selection.lines)
    runs: list[tuple[str, str]] = []
    for n, doc_id in enumerate(selection.doc_ids):
        try:
            run = start_run(stores.state, catalogue, doc_id=doc_id, clause_types=clause_types,
                            model_name=model_name, max_tokens=max_tokens, top_k=top_k, run_id=f"{bulk_id}-{n:05d}")
        except NotFound as exc:
            line = selection.lines.get(doc_id)
            accepted.rejected.append(Rejected(f"line {line}" if line else doc_id, str(exc)))
            continue
        runs.append((run.run_id, doc_id))
        accepted.doc_ids.append(doc_id)
    accepted.rejected.sort(key=_line_order)
    if not runs:
        raise LongdocError("no document to run: " + "; ".join(f"{r.where}: {r.reason}" for r in accepted.rejected[:5]))
    create_job(stores.store, bulk_id, runs, clause_types)
    return accepted


def _line_order(rejected: Rejected) -> tuple[int, int]:
    """Sort key of rejections: manifest lines by number, then document ids (given without a line)."""
    where = rejected.where
    return (0, int(where[5:])) if where.startswith("line ") and where[5:].isdigit() else (1, 0)


def _run_ids(stores: Stores, bulk_id: str) -> list[str]:
    return [item["run_id"] for _, item in stores.store.query(f"bulk#{bulk_id}", "run#")]


def _money(value: Decimal | None) -> str | None:
    return None if value is None else str(value.quantize(Decimal("0.000001")))


NO_MODEL_COST = "no model cost (offline baseline)"
"""The ``cost`` text of a job whose documents all ran on the offline baseline (no model is billed)."""


def cost_text(cost_usd: str | None, sync_cost_usd: str | None, offline: bool) -> str:
    """The job's cost as one clear string: :data:`NO_MODEL_COST` for the offline baseline,
    ``"<batch> USD at batch prices (synchronous: <sync> USD)"`` for a priced model, else
    ``"not priced (model not in the price table)"``."""
    if offline:
        return NO_MODEL_COST
    if cost_usd is None or sync_cost_usd is None:
        return "not priced (model not in the price table)"
    return f"{cost_usd} USD at batch prices (synchronous: {sync_cost_usd} USD)"


def _batch_share(model: str, prices: dict[str, Price]) -> Decimal:
    """What a batch request costs of its synchronous price on ``model``: ``1 - batch_discount``."""
    discount = batch_discount(model, prices)
    return 1 - (BATCH_DISCOUNT if discount is None else discount)


def priming_cost(stores: Stores, bulk_id: str, prices: dict[str, Price]) -> dict[str, Any]:
    """The job's priming batches (one request per primed round, :mod:`longdoc.bulk.cache`):
    ``{"batches", "usage" (tokens, summed), "sync_cost_usd", "cost_usd"}``, costs decimal strings
    (each request priced alone, :func:`~longdoc.core.cost.estimate_cost` with ``single_request``;
    batch price = synchronous x ``1 - batch_discount``, as for items) or None when a model is
    unpriced; ``"0.000000"`` for a job with no priming batch."""
    usage, sync, batch, priced = Usage(), Decimal(0), Decimal(0), True
    recorded = priming_usage(stores.store, bulk_id)
    for model, one in recorded:
        usage = usage.add(one)
        cost = estimate_cost(one, model, prices, single_request=True)
        if cost is None:
            priced = False
            continue
        sync += Decimal(cost)
        batch += Decimal(cost) * _batch_share(model, prices)
    return {"batches": len(recorded), "usage": usage.model_dump(),
            "sync_cost_usd": _money(sync) if priced else None, "cost_usd": _money(batch) if priced else None}


def bulk_status(stores: Stores, bulk_id: str, prices_path: str | None = None,
                execution_gone: Callable[[str], bool] | None = None) -> dict[str, Any]:
    """The job as CLI and API report it: ``status`` (:func:`job_status_of`: ``RUNNING``, ``STALE``
    when ``execution_gone`` says the worker of its current execution died, then ``SUCCEEDED``,
    ``PARTIAL`` or ``FAILED``) with ``reason`` (why it is not ``SUCCEEDED``, else None), counts,
    the round reached, each document's run status,
    ``cost_usd`` so far (batch prices) and ``sync_cost_usd`` (the same tokens at synchronous
    prices), decimal strings, None for an unpriced model; both include the rounds' priming
    batches, also shown apart as ``priming`` (:func:`priming_cost`: batches, usage, costs);
    ``usage``: the job's billed tokens, every run's and the priming batches' (:class:`Usage`
    fields); ``cost``: the same as one clear string (:func:`cost_text`: "no model cost" when every
    run is the offline baseline's at zero prices); ``cache``: each harvested round's prompt-cache
    figures (:func:`longdoc.bulk.cache.round_cache`: primed or not, hit rate, read share, tokens).
    Costs are priced from the billed usage of each result (cache reads and writes as reported),
    never from an assumed hit rate. Raises :class:`NotFound` for an unknown job."""
    job = stores.store.get(f"bulk#{bulk_id}", "job")
    if job is None:
        raise NotFound(f"bulk job {bulk_id} not found")
    totals = _CostTotals(load_prices(prices_path))
    documents = []
    for run_id in _run_ids(stores, bulk_id):
        result = run_result(stores.state, run_id, prices_path)
        documents.append({"run_id": run_id, "doc_id": result["doc_id"], "status": result["status"],
                          "extractions": len(result["extractions"]), "error": result["error"]})
        totals.add(result)
    priming = priming_cost(stores, bulk_id, totals.prices)
    rounds = len(stores.store.query(f"bulk#{bulk_id}", "prepared#"))
    failure = stores.store.get(f"bulk#{bulk_id}", "failure")
    failure = failure if failure and failure.get("error") else None
    counted = counts_in(stores.store, stores.state, bulk_id)
    status = job_status_of(stores, bulk_id, counted, failure, execution_gone)
    reason = (outcome_reason(counted) if status in ("PARTIAL", "FAILED") and failure is None
              else failure["cause"] if failure else None)
    return {"bulk_id": bulk_id, "clause_types": job["clause_types"], **counted, "rounds": rounds,
            "status": status, "reason": reason, "failure": failure, **totals.costs(priming),
            "priming": priming, "cache": rounds_cache(stores.store, bulk_id), "documents": documents}


class _CostTotals:
    """A job's billed usage and costs summed over its documents' results (``add``), then with its
    priming batches (``costs``): decimal strings, None once any model is unpriced."""

    def __init__(self, prices: dict[str, Price]) -> None:
        self.prices = prices
        self.sync, self.batch, self.usage = Decimal(0), Decimal(0), Usage()
        self.priced, self.offline, self.documents = True, True, 0

    def add(self, result: dict[str, Any]) -> None:
        """Count one document's ``run_result``: its usage, and its cost at synchronous and batch prices."""
        self.documents += 1
        self.usage = self.usage.add(Usage(**result["usage"]))
        self.offline = self.offline and result["provider"] == "offline"
        if result["cost_usd"] is None:
            self.priced = False
            return
        share = _batch_share(result["model"], self.prices) if result.get("model") else 1 - BATCH_DISCOUNT
        self.sync += Decimal(result["cost_usd"])
        self.batch += Decimal(result["cost_usd"]) * share

    def costs(self, priming: dict[str, Any]) -> dict[str, Any]:
        """``{"cost_usd", "sync_cost_usd", "cost" (:func:`cost_text`), "usage"}`` with ``priming`` included."""
        sync, batch, priced = self.sync, self.batch, self.priced
        usage = self.usage.add(Usage(**priming["usage"]))
        if priming["cost_usd"] is None:
            priced = False
        else:
            sync += Decimal(priming["sync_cost_usd"])
            batch += Decimal(priming["cost_usd"])
        cost, sync_cost = (_money(batch), _money(sync)) if priced else (None, None)
        return {"cost_usd": cost, "sync_cost_usd": sync_cost,
                "cost": cost_text(cost, sync_cost, self.offline and bool(self.documents) and not self.sync),
                "usage": usage.model_dump()}


EXECUTION_ITEM = "execution"
"""Sort key of the item naming a job's current execution when it was restarted (local mode)."""


def execution_name(store: Any, bulk_id: str) -> str:
    """The name of the job's current execution: the bulk id (the first one), or the last restart's
    (:func:`longdoc.bulk.intake.restart_execution`). ``store`` is the :class:`~longdoc.bulk.ports.BulkStore`."""
    item = store.get(f"bulk#{bulk_id}", EXECUTION_ITEM)
    return str(item["name"]) if item and item.get("name") else bulk_id


def job_status_of(stores: Stores, bulk_id: str, c: dict[str, int], failure: dict[str, Any] | None,
                  execution_gone: Callable[[str], bool] | None = None) -> str:
    """The job's status from its runs' counts ``c``: ``FAILED`` with a recorded ``failure``; while
    documents are pending ``RUNNING``, or ``STALE`` when ``execution_gone`` (a liveness probe of
    the worker by its pid, :func:`longdoc.local.pids.execution_worker_gone`) says the worker of the
    job's current execution (:func:`execution_name`) has died; once none is
    pending, :func:`~longdoc.bulk.steps.job_outcome` (``SUCCEEDED`` only when every document is)."""
    if failure is not None:
        return "FAILED"
    if c["pending"]:
        gone = execution_gone is not None and execution_gone(execution_name(stores.store, bulk_id))
        return "STALE" if gone else "RUNNING"
    return job_outcome(c)


def fail_or_resume(stores: Stores, bulk_id: str, error: str, cause: str, entered: str) -> bool:
    """The ``RecordFailure`` state: record the error (the ``failure`` item, with the time the state
    was ``entered``) and return False (the caller fails the execution); or, when a failure is
    already recorded under another entered time, the execution was redriven: clear it and return
    True (the round goes on). Retries of one state entry share its entered time, so they record.
    The stored ``cause`` is :func:`~longdoc.core.failures.innermost_error` of ``error`` and ``cause``
    (``"ErrorType: message"``, one line)."""
    pk = f"bulk#{bulk_id}"
    stored = stores.store.get(pk, "failure")
    if stored and stored.get("error") and stored.get("entered") != entered:
        stores.store.put(pk, "failure", {"cleared": True, "error": None, "redriven": entered})
        return True
    # One line, the innermost error (no stack trace, no server paths): GET shows it to the caller;
    # the full cause is in the bulk function's log (functions/bulk/app.py).
    stores.store.put(pk, "failure", {"error": error, "cause": innermost_error(error, cause), "entered": entered})
    return False


def write_results(stores: Stores, results: Any, bulk_id: str, prices_path: str | None = None) -> dict[str, Any]:
    """Write ``results/<bulk_id>/<run_id>.json`` (one per document, the shape of ``extract --json``)
    and ``results/<bulk_id>/summary.jsonl`` (one line per document) to the blob store ``results``;
    a failure still recorded on the job is cleared (the job ran to its end). Returns the counts,
    the job's ``status`` (:func:`~longdoc.bulk.steps.job_outcome`: ``SUCCEEDED``, ``PARTIAL`` or
    ``FAILED``) and ``reason`` (why not ``SUCCEEDED``; ``""`` when it is), the summary key and the job's ``cost_usd`` / ``sync_cost_usd`` / ``cost`` (as :func:`bulk_status`
    gives them, priming batches included), which Finish keeps on the job item for ``GET``."""
    lines, totals = [], _CostTotals(load_prices(prices_path))
    for run_id in _run_ids(stores, bulk_id):
        result = run_result(stores.state, run_id, prices_path)
        totals.add(result)
        results.put(f"results/{bulk_id}/{run_id}.json", json.dumps(result, ensure_ascii=False, indent=1).encode())
        lines.append(json.dumps({"run_id": run_id, "doc_id": result["doc_id"], "status": result["status"],
                                 "extractions": len(result["extractions"]),
                                 "found": sum(1 for e in result["extractions"] if e["status"] == "found"),
                                 "cost_usd": result["cost_usd"], "error": result["error"]}, ensure_ascii=False))
    key = f"results/{bulk_id}/summary.jsonl"
    results.put(key, ("\n".join(lines) + "\n").encode())
    failure = stores.store.get(f"bulk#{bulk_id}", "failure")
    if failure and failure.get("error"):  # a job restarted by hand past the redrive window has finished
        stores.store.put(f"bulk#{bulk_id}", "failure", {"cleared": True, "error": None})
    costs = totals.costs(priming_cost(stores, bulk_id, totals.prices))
    counted = counts_in(stores.store, stores.state, bulk_id)
    return {"bulk_id": bulk_id, "summary": key, **counted, "status": job_outcome(counted),
            "reason": outcome_reason(counted) or "", **{k: costs[k] for k in ("cost_usd", "sync_cost_usd", "cost")}}


def execution_input(bulk_id: str) -> dict[str, Any]:
    """The input of a ``statemachine/bulk.asl.json`` execution: the job id and round 0 (the execution
    name is the bulk id, so starting a job twice is refused by Step Functions, not run twice)."""
    return {"bulk_id": bulk_id, "round": 0}


def progress(stores: Stores, bulk_id: str) -> dict[str, int]:
    """``{"done", "failed", "pending", "round", "in_flight"}``: runs by status, the rounds prepared so
    far, and batches submitted but not yet harvested (the CLI's progress line)."""
    pk = f"bulk#{bulk_id}"
    harvested = {sk[len("harvested#"):] for sk, _ in stores.store.query(pk, "harvested#")}
    in_flight = sum(1 for sk, _ in stores.store.query(pk, "batch#") if sk[len("batch#"):] not in harvested)
    return {**counts_in(stores.store, stores.state, bulk_id), "round": len(stores.store.query(pk, "prepared#")), "in_flight": in_flight}
