"""From a run's result to review items, and from items plus decisions to the reviewed answer.

Pure functions over the run result's JSON (``longdoc.extract.public.run_result``): nothing is read
or written here. The model output is only read; a reviewed answer is always a new dict.
"""

from __future__ import annotations

from typing import Any

from longdoc.core.reviews import STATUS_OF, Decision, ItemKind, ReviewItem, item_id_for, utc_now

UNSCORED = 0.5
"""Confidence given to an extraction stored before confidence existed (no evidence recorded): mid-way,
so it is below any sensible accept threshold and reaches the queue."""


def items_of_result(result: dict[str, Any], doc_type: str | None = None, inferred: bool = False) -> list[ReviewItem]:
    """One :class:`ReviewItem` per extraction of ``result`` (a run result dict), in its order.

    ``index`` counts per clause type from 0 (list order), so ids are stable (:func:`item_id_for`).
    A ``not_found`` whose confidence says ``possible_omission`` becomes kind ``possible_omission``,
    with its candidate chunk (``chunk_id``, ``page``) in the item. ``doc_type`` is the document's
    (metadata, for accuracy strata; ``inferred``: guessed from its name). Raises ``KeyError`` for a result without ``run_id``/``doc_id``.
    """
    counts: dict[str, int] = {}
    items: list[ReviewItem] = []
    for e in result.get("extractions") or []:
        clause = e["clause_type"]
        index = counts.get(clause, 0)
        counts[clause] = index + 1
        conf = e.get("confidence") or {"score": UNSCORED, "reasons": ["no confidence recorded (stored before it existed)"]}
        cites = e.get("citations") or []
        first = cites[0] if cites else {}
        kind: ItemKind = "extraction" if e["status"] == "found" else (
            "possible_omission" if conf.get("possible_omission") else "not_found")
        candidate = conf.get("candidate") or {}
        items.append(ReviewItem(
            item_id=item_id_for(result["run_id"], clause, index), run_id=result["run_id"], doc_id=result["doc_id"],
            doc_version=result.get("doc_version", ""), clause_type=clause, index=index, kind=kind,
            value=e.get("clause_text"), quote=first.get("quote"),
            chunk_id=first.get("chunk_id") or candidate.get("chunk_id"),
            page=first.get("page") if first else candidate.get("page"), page_label=first.get("page_label"),
            section_id=first.get("section_id"), confidence=float(conf["score"]), reasons=list(conf.get("reasons") or []),
            doc_type=doc_type, doc_type_inferred=inferred and doc_type is not None, model=e.get("model") or result.get("model", ""), created_at=utc_now()))
    return items


def with_history(item: ReviewItem, decisions: list[Decision]) -> ReviewItem:
    """``item`` with ``status`` (the latest decision's, or ``pending``) and ``version`` (decisions so far)."""
    if not decisions:
        return item.model_copy(update={"status": "pending", "version": 0})
    return item.model_copy(update={"status": STATUS_OF[decisions[-1].action], "version": decisions[-1].version})


def current_value(item: ReviewItem, decisions: list[Decision]) -> str | None:
    """The quote in force: the latest correction's (or cited ``mark_present``'s), else the model's; None when absent."""
    for d in reversed(decisions):
        if d.citation is not None:
            return d.citation.quote
        if d.action in ("mark_absent", "reject"):
            return None
    return item.quote if item.kind == "extraction" else None


def reviewed_answer(item: ReviewItem, model: dict[str, Any], decisions: list[Decision]) -> dict[str, Any]:
    """One entry of :meth:`~longdoc.review.ReviewService.reviewed_result`: the answer after the latest decision.

    ``model`` is the extraction as the model gave it (kept under ``"model"``). ``status``: ``found``
    (model accepted, corrected, or marked present), ``not_found`` (accepted absent or marked absent),
    ``rejected`` (the model's answer is withdrawn and no replacement given) or the model's own when pending.
    """
    latest = decisions[-1] if decisions else None
    entry: dict[str, Any] = {
        "item_id": item.item_id, "clause_type": item.clause_type, "kind": item.kind,
        "review_status": STATUS_OF[latest.action] if latest else "pending", "reviewed": latest is not None,
        "confidence": item.confidence, "decision": latest.model_dump(mode="json") if latest else None,
        "status": model["status"], "clause_text": model.get("clause_text"), "citations": model.get("citations") or [],
        "model": {k: model.get(k) for k in ("status", "clause_text", "citations")}}
    if latest is None or latest.action == "accept":
        return entry
    if latest.action in ("correct", "mark_present"):
        cites = [latest.citation.model_dump(mode="json")] if latest.citation else []
        return entry | {"status": "found", "citations": cites,
                        "clause_text": latest.citation.quote if latest.citation else None}
    if latest.action == "mark_absent":
        return entry | {"status": "not_found", "clause_text": None, "citations": []}
    return entry | {"status": "rejected", "clause_text": None, "citations": []}
