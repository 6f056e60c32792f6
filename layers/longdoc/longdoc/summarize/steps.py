"""The steps of one summary, each a state of ``statemachine/summarize.asl.json``: plan, map, reduce, synthesize, fail.

Every step reads what it needs from the stores and writes its result there, returning only
ids and counters. A step whose output is already stored returns it without calling the
model again, so a killed or failed run resumes where it stopped (finished groups and
reduce batches are never redone). A failed attempt's billed replies are not lost: their usage
is kept per step (:func:`_metered`) and added to what the step finally stores.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from longdoc.core.documents import load_chunks
from longdoc.core.errors import short_cause
from longdoc.core.ports import BlobStore, StreamingModel, TokenCounter
from longdoc.core.tokens import document_measure, estimate_tokens
from longdoc.summarize import store
from longdoc.summarize.calls import Checker, Meter, group_values, streamed_call, tool_call
from longdoc.summarize.models import ExactValue, Partial, Plan, Statement, SummaryRecord
from longdoc.summarize.prompt import final_request, map_request, reduce_request, statement_line
from longdoc.summarize.result import build_result
from longdoc.config import SummarizeSettings
from longdoc.summarize.units import SectionIndex, make_groups

MAX_REDUCE_DEPTH = 8
"""Reduce levels before the final call takes whatever is left (each level at least halves the partials)."""


@dataclass
class SummaryDeps:
    """What the steps need: the blob store, a streaming model and the settings (price table path inside)."""

    blobs: BlobStore
    model: StreamingModel
    settings: SummarizeSettings
    tokens: TokenCounter | None = None
    """Sizes the map groups: the token-counting endpoint with a key, else the offline estimate."""


@dataclass
class _Doc:
    record: SummaryRecord
    plan: Plan
    index: SectionIndex


def _load(deps: SummaryDeps, summary_id: str) -> _Doc:
    record = store.load_record(deps.blobs, summary_id)
    chunks = load_chunks(deps.blobs, record.doc_id, record.doc_version)
    return _Doc(record, store.load_plan(deps.blobs, summary_id), SectionIndex(chunks))


def plan(deps: SummaryDeps, summary_id: str) -> dict[str, Any]:
    """Group the document (once) and mark the run RUNNING.

    Returns ``{summary_id, mode: "single"|"map", groups, items, map_concurrency, level: 0}``;
    ``items`` are the group indexes in processing order (focus relevance first).
    """
    s = deps.settings
    record = store.load_record(deps.blobs, summary_id)
    if deps.blobs.exists(store.plan_key(summary_id)):
        the_plan = store.load_plan(deps.blobs, summary_id)
    else:
        chunks = load_chunks(deps.blobs, record.doc_id, record.doc_version)
        groups = make_groups(chunks, record.request.focus, s.summary_group_min_tokens, s.summary_group_max_tokens,
                             document_measure(deps.tokens, [c.text for c in chunks]))
        total = sum(g.tokens for g in groups)
        the_plan = Plan(mode="single" if total <= s.summary_single_call_tokens else "map", doc_tokens=total,
                        groups=groups)
        store.save_plan(deps.blobs, summary_id, the_plan)
    store.save_record(deps.blobs, record.model_copy(update={"status": "RUNNING", "error": None, "cause": None}))
    items = [g.index for g in sorted(the_plan.groups, key=lambda g: g.rank)] if the_plan.mode == "map" else []
    return {"summary_id": summary_id, "mode": the_plan.mode, "groups": len(the_plan.groups), "items": items,
            "map_concurrency": s.summary_map_concurrency, "level": 0}


@contextmanager
def _metered(deps: SummaryDeps, key: str) -> Iterator[Meter]:
    """The step's model, its replies' usage counted; when the step fails, that usage is added to
    the step's spent usage (:func:`longdoc.summarize.store.add_spent`) before the error goes on.

    So a reply that was billed and then lost (its follow-up call failed, the step is retried)
    still counts in the summary's usage: the step that finally stores its output adds
    :func:`~longdoc.summarize.store.load_spent` to its own.
    """
    meter = Meter(deps.model)
    try:
        yield meter
    except BaseException:
        store.add_spent(deps.blobs, key, meter.usage)
        raise


def map_group(deps: SummaryDeps, summary_id: str, index: int) -> dict[str, Any]:
    """Summarise group ``index`` (one call plus at most one correction) unless its partial is stored.

    Returns ``{summary_id, index, cached, statements, dropped}``.
    """
    key = store.map_key(summary_id, index)
    if deps.blobs.exists(key):
        done = store.load_partial(deps.blobs, key)
        return {"summary_id": summary_id, "index": index, "cached": True, "statements": len(done.statements),
                "dropped": len(done.dropped)}
    doc = _load(deps, summary_id)
    group = doc.plan.groups[index]
    pieces = doc.index.pieces_for(group.chunk_ids)
    request = map_request(pieces, doc.record.source, doc.record.request.length, doc.record.request.focus)
    checker = Checker(doc.index, set(group.section_ids), prefer_chunks=set(group.chunk_ids))
    with _metered(deps, key) as model:
        outcome = tool_call(model, request, checker, stage=f"map {index}")
        partial = Partial(key=key, rank=group.rank, statements=outcome.statements,
                          exact_values=group_values(outcome.values, pieces, doc.index), dropped=outcome.dropped,
                          usage=outcome.usage.add(store.load_spent(deps.blobs, key)), calls=outcome.calls,
                          corrections=outcome.corrections, model=outcome.model)
        store.save_partial(deps.blobs, key, partial)
    return {"summary_id": summary_id, "index": index, "cached": False, "statements": len(partial.statements),
            "dropped": len(partial.dropped)}


def level_partials(blobs: BlobStore, summary_id: str, level: int, the_plan: Plan) -> list[Partial]:
    """The partials a level starts from, in rank order: the map partials (level 0) or reduce level ``level``."""
    if level == 0:
        keys = [store.map_key(summary_id, g.index) for g in the_plan.groups]
    else:
        keys = []
        while blobs.exists(store.reduce_key(summary_id, level, len(keys))):
            keys.append(store.reduce_key(summary_id, level, len(keys)))
    return sorted((store.load_partial(blobs, k) for k in keys), key=lambda p: p.rank)


def _tokens(partial: Partial) -> int:
    return sum(estimate_tokens(statement_line(s)) + 1 for s in partial.statements) + 20


def _batches(partials: Sequence[Partial], budget: int) -> list[list[Partial]]:
    """Consecutive partials packed up to ``budget`` tokens, at least two per batch (so each level shrinks)."""
    batches: list[list[Partial]] = []
    for partial in partials:
        if batches and (len(batches[-1]) < 2 or sum(map(_tokens, batches[-1])) + _tokens(partial) <= budget):
            batches[-1].append(partial)
        else:
            batches.append([partial])
    return batches


def merge_values(partials: Sequence[Partial]) -> list[ExactValue]:
    """Exact values of several partials, verbatim and each once per section: never re-summarised."""
    seen: dict[tuple[str, str], ExactValue] = {}
    for partial in partials:
        for value in partial.exact_values:
            seen.setdefault((value.value, value.section_id), value)
    return list(seen.values())


def _terms(values: Sequence[ExactValue]) -> set[str]:
    return {v.value for v in values if v.kind in ("defined_term", "party")}


def _cited(statements: Sequence[Statement]) -> set[str]:
    return {c.section_id for s in statements for c in s.citations}


def _checker(doc: _Doc, statements: Sequence[Statement], values: Sequence[ExactValue]) -> Checker:
    """A reduce or final call's checks: the sections its input statements cite, their chunks searched first."""
    chunks = {c.chunk_id for s in statements for c in s.citations if c.chunk_id}
    return Checker(doc.index, _cited(statements), _terms(values), prefer_chunks=chunks)


def _reduce_batch(deps: SummaryDeps, doc: _Doc, key: str, batch: list[Partial]) -> None:
    values = merge_values(batch)
    statements = [s for p in batch for s in p.statements]
    request = reduce_request([p.statements for p in batch], doc.record.request.length, doc.record.request.focus)
    with _metered(deps, key) as model:
        outcome = tool_call(model, request, _checker(doc, statements, values), stage=key)
        store.save_partial(deps.blobs, key, Partial(
            key=key, rank=min(p.rank for p in batch), statements=outcome.statements, exact_values=values,
            dropped=outcome.dropped, usage=outcome.usage.add(store.load_spent(deps.blobs, key)), calls=outcome.calls,
            corrections=outcome.corrections, model=outcome.model))


def reduce_level(deps: SummaryDeps, summary_id: str, level: int) -> dict[str, Any]:
    """Reduce level ``level``'s partials one level further, or say they are ready for the final call.

    Returns ``{summary_id, level, status: "READY"|"CONTINUE", partials}``: READY (``level``
    unchanged) when the partials fit ``summary_reduce_input_tokens`` or the depth cap is
    reached; else CONTINUE with ``level + 1`` after every batch of the new level is stored
    (batches already stored are skipped; the rest run ``summary_reduce_concurrency`` at once).
    """
    doc = _load(deps, summary_id)
    partials = level_partials(deps.blobs, summary_id, level, doc.plan)
    budget = deps.settings.summary_reduce_input_tokens
    if sum(map(_tokens, partials)) <= budget or level >= MAX_REDUCE_DEPTH or len(partials) < 2:
        return {"summary_id": summary_id, "level": level, "status": "READY", "partials": len(partials)}
    batches = _batches(partials, budget)
    todo = [(store.reduce_key(summary_id, level + 1, b), batch) for b, batch in enumerate(batches)
            if not deps.blobs.exists(store.reduce_key(summary_id, level + 1, b))]
    with ThreadPoolExecutor(max_workers=max(1, min(deps.settings.summary_reduce_concurrency, len(todo)))) as pool:
        for future in [pool.submit(_reduce_batch, deps, doc, key, batch) for key, batch in todo]:
            future.result()
    return {"summary_id": summary_id, "level": level + 1, "status": "CONTINUE", "partials": len(batches)}


def synthesize(deps: SummaryDeps, summary_id: str, level: int, on_text: Callable[[str], None]) -> dict[str, Any]:
    """The final call, streamed to ``on_text``; stores the result and marks the summary SUCCEEDED.

    A document that fits (plan mode ``single``) is sent whole; otherwise the partials of
    ``level`` are. A stored result is returned without calling the model again. Returns
    ``{summary_id, status, statements, dropped}``.
    """
    done = store.load_result(deps.blobs, summary_id)
    if done is not None:
        return {"summary_id": summary_id, "status": "SUCCEEDED", "statements": len(done["statements"]),
                "dropped": len(done["dropped"])}
    doc = _load(deps, summary_id)
    length, focus = doc.record.request.length, doc.record.request.focus
    key = store.result_key(summary_id)
    with _metered(deps, key) as model:
        if doc.plan.mode == "single":
            pieces = doc.index.pieces_for([c for g in doc.plan.groups for c in g.chunk_ids])
            values = group_values([], pieces, doc.index)
            checker = Checker(doc.index, {p.section_id for p in pieces}, _terms(values))
            outcome = streamed_call(model, map_request(pieces, doc.record.source, length, focus, final=True),
                                    checker, on_text)
        else:
            inputs = level_partials(deps.blobs, summary_id, level, doc.plan)
            values = merge_values(inputs)
            statements = [s for p in inputs for s in p.statements]
            outcome = streamed_call(model, final_request([p.statements for p in inputs], length, focus),
                                    _checker(doc, statements, values), on_text)
        outcome.usage = outcome.usage.add(store.load_spent(deps.blobs, key))
        result = build_result(deps.blobs, doc.record, doc.plan, level, outcome, values, deps.settings)
        store.save_result(deps.blobs, summary_id, result)
    store.save_record(deps.blobs, doc.record.model_copy(update={"status": "SUCCEEDED", "model": result["model"]}))
    return {"summary_id": summary_id, "status": "SUCCEEDED", "statements": len(result["statements"]),
            "dropped": len(result["dropped"])}


def fail(deps: SummaryDeps, summary_id: str, error: str, cause: str) -> SummaryRecord:
    """Record a failed run (status FAILED with the error); its stored partials stay for the resume.

    The cause is stored as its readable part (:func:`longdoc.core.errors.short_cause`: the
    Lambda error payload's ``"errorType: errorMessage"``, stack trace dropped, at most 2,000
    characters), so the record, the API and the CLI show one line.
    """
    record = store.load_record(deps.blobs, summary_id)
    return store.save_record(deps.blobs, record.model_copy(update={"status": "FAILED", "error": error,
                                                                   "cause": short_cause(cause)[:2000]}))
