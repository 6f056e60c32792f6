"""The stored result of a summary: statements with citations, exact values, what was dropped, usage and cost.

Shape (JSON)::

    {"summary_id", "doc_id", "doc_version", "source", "status": "SUCCEEDED", "model", "baseline", "label",
     "focus", "length", "mode": "single"|"map", "groups", "map_calls", "reduce_calls", "correction_calls",
     "model_calls", "reduce_depth", "cut_blocks",
     "statements": [{"text", "citations": [{"section_id", "page", "pages", "page_label", "chunk_id", "heading_path"}]}],
     "exact_values": [{"value", "kind", "section_id", "page"}],
     "dropped": [{"text", "sections", "reason", "stage"}],
     "partial": bool, "coverage": {"groups", "groups_used", "groups_not_used": [{"group", "sections",
                                   "page_start", "page_end", "reason"}],
                                   "sections_not_summarised", "pages_not_summarised"},
     "text",                                   # the final synthesis as streamed
     "usage": {...tokens}, "usage_by_stage": {"map", "reduce", "final"},
     "cost_usd", "cost_by_stage": {"map", "reduce", "final"}}

``cut_blocks`` counts reply blocks cut by a ``max_tokens`` or context-window stop over every call
(never read: :mod:`longdoc.summarize.calls`). ``partial`` is True when any group's text did not reach the final call (a map call that failed
for good, a reduce that answered nothing); ``coverage`` names those groups by their sections and
pages. Usage is in tokens (what the model reported), cost in USD as decimal strings from the price
table (:mod:`longdoc.core.cost`; None for a model without a price, e.g. the baseline).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from longdoc.core.messages import Usage
from longdoc.core.ports import BlobStore
from longdoc.core.cost import estimate_cost, load_prices
from longdoc.summarize import store
from longdoc.summarize.models import Dropped, ExactValue, Partial, Plan, SummaryRecord
from longdoc.config import SummarizeSettings

if TYPE_CHECKING:  # pragma: no cover - typing only
    from longdoc.summarize.calls import Outcome

BASELINE_LABEL = "offline extractive baseline (LexRank sentences, verbatim): not an LLM summary"


def _sum(partials: list[Partial]) -> Usage:
    total = Usage()
    for p in partials:
        total = total.add(p.usage)
    return total


def _reduce_partials(blobs: BlobStore, summary_id: str, depth: int, budget: int) -> list[Partial]:
    out: list[Partial] = []
    for level in range(1, depth + 1):
        batch = 0
        while blobs.exists(store.reduce_key(summary_id, level, batch, budget)):
            out.append(store.load_partial(blobs, store.reduce_key(summary_id, level, batch, budget)))
            batch += 1
    return out


def coverage(plan: Plan, finals: list[Partial]) -> dict[str, Any]:
    """What the final call's inputs ``finals`` cover of ``plan``'s groups (module docstring's ``coverage``).

    A group is used when a final input carries it (:attr:`Partial.groups`); every other group
    is listed with its sections, pages and the reason found on the partial that lost it.
    A single-call plan covers every group.
    """
    if plan.mode == "single":
        used = {g.index for g in plan.groups}
    else:
        used = {g for p in finals if p.statements for g in p.groups}
    reasons = {g: r for p in finals for g, r in p.why.items()}
    missing = [g for g in plan.groups if g.index not in used]
    pages = sorted({n for g in missing if g.page_start is not None
                    for n in range(g.page_start, (g.page_end or g.page_start) + 1)})
    return {"groups": len(plan.groups), "groups_used": len(plan.groups) - len(missing),
            "groups_not_used": [{"group": g.index, "sections": g.section_ids, "page_start": g.page_start,
                                 "page_end": g.page_end, "reason": reasons.get(g.index, "no verified statement")}
                                for g in missing],
            "sections_not_summarised": list(dict.fromkeys(s for g in missing for s in g.section_ids)),
            "pages_not_summarised": pages}


def _where(group: dict[str, Any]) -> str:
    """``sections 4, 4.1; pages 7-8``; sections only for a document without pages (``.txt``, ``.md``)."""
    where = f"sections {', '.join(group['sections'])}"
    start, end = group.get("page_start"), group.get("page_end")
    if start is None and end is None:
        return where
    return f"{where}; pages {start}-{end}" if start != end else f"{where}; page {start}"


def coverage_line(cov: dict[str, Any]) -> str:
    """One line of a :func:`coverage` dict naming the groups not summarised (the first five):
    ``2 of 19 groups not summarised: group 3 (sections 4, 4.1; pages 7-8): ModelRefused: ...``."""
    if not cov["groups_not_used"]:
        return f"all {cov['groups']} groups summarised"
    named = "; ".join(f"group {g['group']} ({_where(g)}): {g['reason']}" for g in cov["groups_not_used"][:5])
    return f"{len(cov['groups_not_used'])} of {cov['groups']} groups not summarised: {named}"


def dropped_so_far(blobs: BlobStore, summary_id: str, plan: Plan, depth: int, budget: int,
                   final: list[Dropped]) -> list[dict[str, Any]]:
    """Every statement the summary dropped (``{"text", "sections", "reason", "stage"}``): its map
    calls', its reduce levels' up to ``depth`` (cut for a ``budget``-token reduce input), then the
    ``final`` call's; a map partial not stored yet counts none."""
    maps = [store.load_partial(blobs, store.map_key(summary_id, g.index)) for g in plan.groups
            if blobs.exists(store.map_key(summary_id, g.index))] if plan.mode == "map" else []
    reduces = _reduce_partials(blobs, summary_id, depth, budget) if plan.mode == "map" else []
    return [d.model_dump() for p in [*maps, *reduces] for d in p.dropped] + [d.model_dump() for d in final]


def build_result(blobs: BlobStore, record: SummaryRecord, plan: Plan, depth: int, outcome: Outcome,
                 values: list[ExactValue], settings: SummarizeSettings, finals: list[Partial]) -> dict[str, Any]:
    """Assemble the result (module docstring) from the stored partials and the final call's outcome
    (``depth``: the reduce level whose partials ``finals`` went to the final call; none in single mode)."""
    from longdoc.summarize.baseline import SUMMARY_BASELINE_NAME

    maps = [store.load_partial(blobs, store.map_key(record.summary_id, g.index)) for g in plan.groups] \
        if plan.mode == "map" else []
    reduces = (_reduce_partials(blobs, record.summary_id, depth, settings.summary_reduce_input_tokens)
               if plan.mode == "map" else [])
    by_stage = {"map": _sum(maps), "reduce": _sum(reduces), "final": outcome.usage}
    total = by_stage["map"].add(by_stage["reduce"]).add(by_stage["final"])
    model = outcome.model or record.model
    prices = load_prices(str(settings.price_table) if settings.price_table else None)
    calls = [*maps, *reduces]
    cov = coverage(plan, finals)
    return {
        "summary_id": record.summary_id, "doc_id": record.doc_id, "doc_version": record.doc_version,
        "source": record.source, "status": "SUCCEEDED", "model": model,
        "baseline": model == SUMMARY_BASELINE_NAME,
        "label": BASELINE_LABEL if model == SUMMARY_BASELINE_NAME else f"{model} summary",
        "focus": record.request.focus, "length": record.request.length, "mode": plan.mode,
        "groups": len(plan.groups), "map_calls": sum(p.calls - p.corrections for p in maps),
        "reduce_calls": sum(p.calls - p.corrections for p in reduces),
        "correction_calls": sum(p.corrections for p in calls) + outcome.corrections,
        "model_calls": sum(p.calls for p in calls) + outcome.calls,
        "reduce_depth": depth if plan.mode == "map" else 0,
        "cut_blocks": sum(p.cut_blocks for p in calls) + outcome.cut_blocks,
        "statements": [s.model_dump() for s in outcome.statements],
        "exact_values": [v.model_dump() for v in values],
        "dropped": [d.model_dump() for p in calls for d in p.dropped] + [d.model_dump() for d in outcome.dropped],
        "partial": bool(cov["groups_not_used"]), "coverage": cov,
        "text": outcome.text,
        "usage": total.model_dump(), "usage_by_stage": {k: u.model_dump() for k, u in by_stage.items()},
        "cost_usd": estimate_cost(total, model, prices),
        "cost_by_stage": {k: estimate_cost(u, model, prices) for k, u in by_stage.items()},
    }
