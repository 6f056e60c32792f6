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
from longdoc.core.errors import (
    EmptySummary,
    ModelAnswerMissing,
    ModelRefused,
    ModelUnavailable,
    ReduceNotConverging,
    short_cause,
)
from longdoc.core.ports import BlobStore, StreamingModel, TokenCounter
from longdoc.core.progress import reporter
from longdoc.core.tokens import document_measure
from longdoc.summarize import store
from longdoc.summarize.calls import Checker, Meter, group_values, streamed_call, tool_call
from longdoc.summarize.models import Dropped, ExactValue, Partial, Plan, Statement, SummaryRecord
from longdoc.summarize.levels import (
    MIN_SHRINK,
    check_consumed,
    make_batches,
    max_levels,
    shrank,
    split_oversized,
    total_tokens,
)
from longdoc.summarize.prompt import final_request, map_request, reduce_request
from longdoc.summarize.result import build_result, coverage, coverage_line, dropped_so_far
from longdoc.config import SummarizeSettings
from longdoc.summarize.units import SectionIndex, make_groups

GROUP_FAILURE_LIMIT = 6
"""Failed attempts of one map group (a persistent 5xx: the state machine's first try plus its 5
``ModelUnavailable`` retries) after which the group is recorded as not summarised (a partial
summary naming it) instead of failing the run on every rerun. A refusal or a missing answer is
recorded at once (asking again gets the same answer)."""


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


def groups_stage(record: SummaryRecord) -> str:
    """The progress stage of a summary's groups (:mod:`longdoc.core.progress`): opened by :func:`plan`,
    advanced by each :func:`map_group` (the one call of a ``single`` plan: by :func:`synthesize`),
    finished by the first reduce level or the final call, or as stopped by :func:`fail`."""
    return f"summarise {record.source or record.doc_id}"


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
    reporter().start(groups_stage(record), len(the_plan.groups) if the_plan.mode == "map" else 1, "groups")
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
        reporter().advance(groups_stage(store.load_record(deps.blobs, summary_id)))
        return {"summary_id": summary_id, "index": index, "cached": True, "statements": len(done.statements),
                "dropped": len(done.dropped)}
    doc = _load(deps, summary_id)
    group = doc.plan.groups[index]
    pieces = doc.index.pieces_for(group.chunk_ids)
    request = map_request(pieces, doc.record.source, doc.record.request.length, doc.record.request.focus)
    checker = Checker(doc.index, set(group.section_ids), prefer_chunks=set(group.chunk_ids))
    with _metered(deps, key) as model:
        try:
            outcome = tool_call(model, request, checker, stage=f"map {index}")
        except (ModelRefused, ModelAnswerMissing, ModelUnavailable) as exc:
            attempts = store.add_failure(deps.blobs, key)
            if isinstance(exc, ModelUnavailable) and attempts < GROUP_FAILURE_LIMIT:
                raise
            failed = f"{type(exc).__name__}: {short_cause(str(exc))[:300]}"
            partial = Partial(key=key, rank=group.rank, lost=[index], exact_values=group_values([], pieces, doc.index),
                              failed=failed, why={index: failed},
                              usage=model.usage.add(store.load_spent(deps.blobs, key)), model=deps.model.name)
            store.save_partial(deps.blobs, key, partial)
            reporter().advance(groups_stage(doc.record))
            return {"summary_id": summary_id, "index": index, "cached": False, "statements": 0, "dropped": 0,
                    "failed": partial.failed}
        partial = Partial(key=key, rank=group.rank, statements=outcome.statements,
                          groups=[index] if outcome.statements else [], lost=[] if outcome.statements else [index],
                          why={} if outcome.statements else {index: "the map call kept no verified statement"},
                          exact_values=group_values(outcome.values, pieces, doc.index), dropped=outcome.dropped,
                          usage=outcome.usage.add(store.load_spent(deps.blobs, key)), calls=outcome.calls,
                          corrections=outcome.corrections, cut_blocks=outcome.cut_blocks, model=outcome.model)
        store.save_partial(deps.blobs, key, partial)
    reporter().advance(groups_stage(doc.record))
    return {"summary_id": summary_id, "index": index, "cached": False, "statements": len(partial.statements),
            "dropped": len(partial.dropped)}


def level_partials(blobs: BlobStore, summary_id: str, level: int, the_plan: Plan, budget: int) -> list[Partial]:
    """The partials a level starts from, in rank order: the map partials (level 0) or reduce level
    ``level`` as cut for a ``budget``-token reduce input (:func:`longdoc.summarize.store.reduce_key`).

    A map partial stored before coverage was recorded (no ``groups`` and no ``lost``) carries its own group.
    """
    if level == 0:
        keys = [store.map_key(summary_id, g.index) for g in the_plan.groups]
        partials = [store.load_partial(blobs, k) for k in keys]
        partials = [p if p.groups or p.lost else p.model_copy(update={"groups": [g.index]})
                    for p, g in zip(partials, the_plan.groups, strict=True)]
    else:
        keys = []
        while blobs.exists(store.reduce_key(summary_id, level, len(keys), budget)):
            keys.append(store.reduce_key(summary_id, level, len(keys), budget))
        partials = [store.load_partial(blobs, k) for k in keys]
    return sorted(partials, key=lambda p: p.rank)


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
    groups = sorted({g for p in batch for g in p.groups})
    lost = sorted({g for p in batch for g in p.lost} - set(groups))
    rank = min(p.rank for p in batch)
    why = {g: r for p in batch for g, r in p.why.items()}
    if not statements:  # nothing to reduce (every input failed): carried on, no call
        store.save_partial(deps.blobs, key, Partial(key=key, rank=rank, lost=lost, why=why, exact_values=values))
        return
    request = reduce_request([p.statements for p in batch], doc.record.request.length, doc.record.request.focus)
    with _metered(deps, key) as model:
        try:
            outcome = tool_call(model, request, _checker(doc, statements, values), stage=key)
        except (ModelRefused, ModelAnswerMissing) as exc:
            error = f"{key}: {type(exc).__name__}: {short_cause(str(exc))[:300]}"
            store.save_partial(deps.blobs, key, Partial(
                key=key, rank=rank, lost=sorted({*groups, *lost}), exact_values=values, model=deps.model.name,
                failed=error, why={**why, **dict.fromkeys(groups, error)},
                usage=model.usage.add(store.load_spent(deps.blobs, key))))
            return
        kept = bool(outcome.statements)  # a reduce that answers no statement loses its inputs: recorded
        failed: str | None = None if kept else f"{key}: the reduce call kept no verified statement"
        store.save_partial(deps.blobs, key, Partial(
            key=key, rank=rank, statements=outcome.statements, exact_values=values,
            groups=groups if kept else [], lost=lost if kept else sorted({*groups, *lost}), failed=failed,
            why=why if failed is None else {**why, **dict.fromkeys(groups, failed)},
            dropped=outcome.dropped, usage=outcome.usage.add(store.load_spent(deps.blobs, key)), calls=outcome.calls,
            corrections=outcome.corrections, cut_blocks=outcome.cut_blocks, model=outcome.model))


def reduce_level(deps: SummaryDeps, summary_id: str, level: int) -> dict[str, Any]:
    """Reduce level ``level``'s partials one level further, or say they are ready for the final call.

    Returns ``{summary_id, level, status: "READY"|"CONTINUE", partials}``: READY (``level``
    unchanged) when the partials fit ``summary_reduce_input_tokens`` (the final call's input
    budget too) or fewer than two carry statements; else CONTINUE with ``level + 1`` after every
    batch of the new level is stored (batches already stored are skipped; the rest run
    ``summary_reduce_concurrency`` at once). The contract (:mod:`longdoc.summarize.levels`):
    every call within the budget, every piece consumed once, each level shrinking by
    :data:`~longdoc.summarize.levels.MIN_SHRINK` (else pairwise batches next, else an error),
    at most :func:`~longdoc.summarize.levels.max_levels` levels. Raises
    :class:`~longdoc.core.errors.ReduceNotConverging` when the contract cannot be kept.
    """
    doc = _load(deps, summary_id)
    reporter().finish(groups_stage(doc.record))  # every group is mapped before the first level
    budget = deps.settings.summary_reduce_input_tokens
    partials = level_partials(deps.blobs, summary_id, level, doc.plan, budget)
    total = total_tokens(partials)
    if total <= budget or sum(1 for p in partials if p.statements) < 1:
        return {"summary_id": summary_id, "level": level, "status": "READY", "partials": len(partials)}
    maps = partials if level == 0 else level_partials(deps.blobs, summary_id, 0, doc.plan, budget)
    bound = max_levels(maps, len(doc.plan.groups), budget)
    totals = [total_tokens(level_partials(deps.blobs, summary_id, n, doc.plan, budget))
              for n in range(max(0, level - 2), level)]
    stalled = [not shrank(a, b) for a, b in zip([*totals, total], [*totals, total][1:], strict=False)]
    if level >= bound or (len(stalled) >= 2 and stalled[-1] and stalled[-2]):
        why = (f"{level} levels reached the bound of {bound} for {len(doc.plan.groups)} groups" if level >= bound
               else f"levels {level - 1} and {level} did not shrink the partials (tokens: "
                    f"{' -> '.join(map(str, [*totals, total]))}; each level must reach {MIN_SHRINK:.0%} or less)")
        raise ReduceNotConverging(f"summary {summary_id}: reduce cannot fit the {budget}-token input budget: {why}; "
                                  "the model's reduce answers do not condense their input")
    pieces = split_oversized(partials, budget)
    batches = make_batches(pieces, budget, pairwise=bool(stalled and stalled[-1]))
    check_consumed(pieces, batches)
    todo = [(store.reduce_key(summary_id, level + 1, b, budget), batch) for b, batch in enumerate(batches)
            if not deps.blobs.exists(store.reduce_key(summary_id, level + 1, b, budget))]
    with ThreadPoolExecutor(max_workers=max(1, min(deps.settings.summary_reduce_concurrency, len(todo)))) as pool:
        for future in [pool.submit(_reduce_batch, deps, doc, key, batch) for key, batch in todo]:
            future.result()
    return {"summary_id": summary_id, "level": level + 1, "status": "CONTINUE", "partials": len(batches)}


def synthesize(deps: SummaryDeps, summary_id: str, level: int, on_text: Callable[[str], None]) -> dict[str, Any]:
    """The final call, streamed to ``on_text``; stores the result and marks the summary SUCCEEDED.

    The result records its coverage (:func:`longdoc.summarize.result.coverage`) and is
    ``partial`` when a group was not summarised. Raises :class:`~longdoc.core.errors.EmptySummary`
    when no statement is verified (no group gave one, or the final call kept none): a failure, whose
    dropped statements are kept with their reasons (:func:`_keep_dropped`) for its FAILED status.

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
    finals = (level_partials(deps.blobs, summary_id, level, doc.plan, deps.settings.summary_reduce_input_tokens)
              if doc.plan.mode == "map" else [])
    with _metered(deps, key) as model:
        if doc.plan.mode == "single":
            pieces = doc.index.pieces_for([c for g in doc.plan.groups for c in g.chunk_ids])
            values = group_values([], pieces, doc.index)
            checker = Checker(doc.index, {p.section_id for p in pieces}, _terms(values))
            outcome = streamed_call(model, map_request(pieces, doc.record.source, length, focus, final=True),
                                    checker, on_text)
        else:
            values = merge_values(finals)
            inputs = [p for p in finals if p.statements]
            if not inputs:
                dropped = _keep_dropped(deps, summary_id, doc.plan, level, [])
                raise EmptySummary(f"summary {summary_id}: no group gave a verified statement "
                                   f"({coverage_line(coverage(doc.plan, finals))}; {dropped} dropped)")
            statements = [s for p in inputs for s in p.statements]
            outcome = streamed_call(model, final_request([p.statements for p in inputs], length, focus),
                                    _checker(doc, statements, values), on_text)
        outcome.usage = outcome.usage.add(store.load_spent(deps.blobs, key))
        if not outcome.statements:
            dropped = _keep_dropped(deps, summary_id, doc.plan, level, outcome.dropped)
            raise EmptySummary(f"summary {summary_id}: the final call kept no verified statement "
                               f"({dropped} dropped); nothing is stored as a summary")
        result = build_result(deps.blobs, doc.record, doc.plan, level, outcome, values, deps.settings, finals)
        store.save_result(deps.blobs, summary_id, result)
    store.save_record(deps.blobs, doc.record.model_copy(update={"status": "SUCCEEDED", "model": result["model"]}))
    if doc.plan.mode == "single":
        reporter().advance(groups_stage(doc.record))
    reporter().finish(groups_stage(doc.record))
    return {"summary_id": summary_id, "status": "SUCCEEDED", "statements": len(result["statements"]),
            "dropped": len(result["dropped"])}


def _keep_dropped(deps: SummaryDeps, summary_id: str, plan: Plan, level: int, final: list[Dropped]) -> int:
    """Keep every statement a summary without a kept one dropped, with its reason
    (:func:`longdoc.summarize.result.dropped_so_far`, :func:`longdoc.summarize.store.save_dropped`), for
    its FAILED status; returns how many."""
    dropped = dropped_so_far(deps.blobs, summary_id, plan, level, deps.settings.summary_reduce_input_tokens, final)
    store.save_dropped(deps.blobs, summary_id, dropped)
    return len(dropped)


def fail(deps: SummaryDeps, summary_id: str, error: str, cause: str) -> SummaryRecord:
    """Record a failed run (status FAILED with the error); its stored partials stay for the resume.

    The cause is stored as its readable part (:func:`longdoc.core.errors.short_cause`: the
    Lambda error payload's ``"errorType: errorMessage"``, stack trace dropped, at most 2,000
    characters), so the record, the API and the CLI show one line.
    """
    record = store.load_record(deps.blobs, summary_id)
    reporter().finish(groups_stage(record), ok=False)
    return store.save_record(deps.blobs, record.model_copy(update={"status": "FAILED", "error": error,
                                                                   "cause": short_cause(cause)[:2000]}))
