"""Prepare in slices (issue 26): a round's requests built by many small, resumable invocations.

``statemachine/bulk.asl.json`` runs Prepare as three steps. :func:`plan_round` (state ``Prepare``)
cuts the job's runs into slices of ``limits.slice_docs`` run ids (``slice#<round>#<slice>`` items,
written once per round, so a retry or redrive sees the same slices) and returns only the slice
numbers. The inline Map ``PrepareSlices`` runs :func:`prepare_slice` per slice (at most its
``MaxConcurrency`` at once); each returns counts only. :func:`close_round` (state ``Prepared``) adds
the slices' counts into ``prepared#<round>``, the item the later steps read.

Within a slice the open runs are built ``limits.piece_docs`` at a time, their retrieval
(chunk list, BM25, the index's queries) in a pool of ``limits.query_pool`` threads. Each window's
requests are written as a JSONL *piece* blob and committed by a ``piece#<round>#<slice>#<pos>``
item listing its run ids; a run in a committed piece is done for the round. A killed slice, run
again, skips those runs (nothing re-embedded, re-queried or re-written) and loses at most one
window. At the end the slice's pieces are packed into batch parts (``part#<round>#<slice>-<n>``,
``blobs``: the piece keys in order) under the batch limits (:data:`~longdoc.bulk.plan.MAX_BATCH_REQUESTS`,
:data:`~longdoc.bulk.plan.MAX_BATCH_BYTES`) and the slice is marked ``sliced#<round>#<slice>``.
Memory holds one window of requests, never the round: flat in the job's size.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from longdoc.bulk.deps import BulkDeps
from longdoc.bulk.plan import custom_id, split
from longdoc.bulk.requests import batch_params
from longdoc.bulk.turns import Continuation, continued_params, load_continuations
from longdoc.core.batching import pack
from longdoc.core.errors import LongdocError
from longdoc.extract.public import Session, finish_session, first_request, open_session, start_turn

TERMINAL = ("SUCCEEDED", "FAILED")


def _pk(bulk_id: str) -> str:
    return f"bulk#{bulk_id}"


def plan_round(deps: BulkDeps, bulk_id: str, round_number: int) -> dict[str, Any]:
    """Cut the job's runs into slices for round ``round_number`` (once; idempotent) and return
    ``{"bulk_id", "round", "slices": [0, 1, ...]}``: slice numbers only (10,000 runs at the default
    250 a slice are 40 numbers, far below Step Functions' 256 KB payload quota)."""
    pk, r = _pk(bulk_id), f"{round_number:04d}"
    planned = deps.store.get(pk, f"slices#{r}")
    if planned is None:
        run_ids = [item["run_id"] for _, item in deps.store.query(pk, "run#")]
        size = max(1, deps.limits.slice_docs)
        count = 0
        for count, start in enumerate(range(0, len(run_ids), size), start=1):
            deps.store.put(pk, f"slice#{r}#{count - 1:04d}", {"runs": run_ids[start:start + size]})
        planned = {"count": count}
        deps.store.put(pk, f"slices#{r}", planned)
    return {"bulk_id": bulk_id, "round": round_number, "slices": list(range(int(planned["count"])))}


def _request_params(deps: BulkDeps, session: Session, carried: Continuation | None,
                    note: str | None) -> tuple[dict[str, Any], int, list[str] | None, dict[str, Any] | None]:
    """``(params, turns, shown, scores)``: the run's request body for this round, the model turns
    already in its conversation, the chunk ids it shows and the initial retrieval scores: the
    conversation carried from the last round (its tool results travel) while the checkpoint is
    where that round left it, else a fresh request from the checkpoint (retrieval, CASE_FACTS)."""
    if carried is not None and carried.version == session.checkpoint.version:
        return continued_params(carried, session.max_tokens, note), carried.turns, carried.shown, carried.scores
    start_turn(deps.extract, session)
    request = first_request(deps.extract, session, deps.options)
    return (batch_params(deps.extract.model.name, request, note), 0, sorted(session.shown or ()),
            dict(session.facts.retrieval_scores or {}))


def _build(deps: BulkDeps, round_number: int, item: dict[str, Any],
           carried: dict[str, Continuation]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """One open run's ``(request, cid item)`` for the round, or None when it has nothing pending
    (its session is finished here). Runs in the slice's thread pool: reads only, except that finish."""
    session = open_session(deps.extract, item["run_id"])
    if not session.facts.pending:
        finish_session(deps.extract, session, deps.options)
        return None
    version = session.checkpoint.version
    note = item.get("note") if item.get("note_version", version) == version else None
    continued = carried.get(item["run_id"])
    params, turns, shown, scores = _request_params(deps, session, continued, note)
    conversation_from = continued.conversation_from if continued is not None and turns else None
    cid = custom_id(item["run_id"], round_number)
    return ({"custom_id": cid, "params": params},
            {"run_id": item["run_id"], "round": round_number, "version": version, "turns": turns,
             "shown": shown, "scores": scores, "conversation_from": conversation_from})


def _open_items(deps: BulkDeps, bulk_id: str, run_ids: list[str]) -> list[dict[str, Any]]:
    """The ``run#`` items of ``run_ids`` whose run has not ended, in order."""
    out = []
    for run_id in run_ids:
        run = deps.extract.state.get_run(run_id)
        item = deps.store.get(_pk(bulk_id), f"run#{run_id}")
        if run is not None and item is not None and run.status not in TERMINAL:
            out.append(item)
    return out


def _commit_window(deps: BulkDeps, bulk_id: str, label: str, position: int,
                   built: list[tuple[dict[str, Any], tuple[dict[str, Any], dict[str, Any]] | None]]) -> None:
    """Write one window's requests as piece blobs (split under the batch limits), then commit each
    piece with its ``piece#`` item; runs with nothing pending go into the window's first commit."""
    pk = _pk(bulk_id)
    requests = [b for _, b in built if b is not None]
    finished = [item["run_id"] for item, b in built if b is None]
    pieces = list(split((request for request, _ in requests), deps.limits)) or [[]]
    by_cid = {request["custom_id"]: (request, cid) for request, cid in requests}
    for sub, piece in enumerate(pieces):
        key = f"bulk/{bulk_id}/round-{label.replace('#', '/slice-')}/piece-{position:05d}-{sub:02d}.jsonl"
        body = "\n".join(json.dumps(r, ensure_ascii=False) for r in piece).encode()
        for request in piece:
            deps.store.put(pk, f"cid#{request['custom_id']}", {**by_cid[request["custom_id"]][1], "blob": key})
        if piece:
            deps.extract.blobs.put(key, body)
        runs = [by_cid[r["custom_id"]][1]["run_id"] for r in piece] + (finished if sub == 0 else [])
        deps.store.put(pk, f"piece#{label}#{position:05d}-{sub:02d}",
                       {"runs": runs, "blob": key if piece else None, "requests": len(piece), "bytes": len(body)})


def prepare_slice(deps: BulkDeps, bulk_id: str, round_number: int, slice_number: int) -> dict[str, Any]:
    """Build slice ``slice_number``'s requests for the round (see the module docstring); idempotent
    and resumable. Returns ``{"slice", "requests", "batches"}``. Raises :class:`LongdocError` for a
    slice :func:`plan_round` did not write, and what retrieval and the stores raise (the state
    machine retries the slice, which resumes after its last committed piece)."""
    pk, label = _pk(bulk_id), f"{round_number:04d}#{slice_number:04d}"
    done = deps.store.get(pk, f"sliced#{label}")
    if done is not None:
        return {"slice": slice_number, "requests": done["requests"], "batches": done["batches"]}
    planned = deps.store.get(pk, f"slice#{label}")
    if planned is None:
        raise LongdocError(f"bulk {bulk_id}: round {round_number} has no slice {slice_number} (Prepare did not plan it)")
    run_ids = list(planned["runs"])
    committed = {rid for _, p in deps.store.query(pk, f"piece#{label}#") for rid in p["runs"]}
    todo = [(pos, rid) for pos, rid in enumerate(run_ids) if rid not in committed]
    items = {i["run_id"]: i for i in _open_items(deps, bulk_id, [rid for _, rid in todo])}
    todo = [(pos, rid) for pos, rid in todo if rid in items]
    carried = load_continuations(deps.extract.blobs, deps.store, bulk_id, set(items))
    window = max(1, deps.limits.piece_docs)
    with ThreadPoolExecutor(max_workers=max(1, deps.limits.query_pool)) as pool:
        for start in range(0, len(todo), window):
            chunk = [items[rid] for _, rid in todo[start:start + window]]
            built = list(pool.map(lambda item: _build(deps, round_number, item, carried), chunk))
            _commit_window(deps, bulk_id, label, todo[start][0], list(zip(chunk, built, strict=True)))
    return _close_slice(deps, bulk_id, label, slice_number)


def _close_slice(deps: BulkDeps, bulk_id: str, label: str, slice_number: int) -> dict[str, Any]:
    """Pack the slice's committed pieces into batch parts under the limits, mark the slice done."""
    pk = _pk(bulk_id)
    pieces = [p for _, p in deps.store.query(pk, f"piece#{label}#") if p.get("blob")]
    limit = deps.limits.max_requests

    def over(current: list[dict[str, Any]], _cost: int, piece: dict[str, Any]) -> bool:
        return sum(int(p["requests"]) for p in current) + int(piece["requests"]) > limit

    parts = total = 0
    for parts, group in enumerate(pack(pieces, lambda p: int(p["bytes"]) + 2, max_cost=deps.limits.max_bytes - 2,
                                       split_before=over), start=1):
        requests = sum(int(p["requests"]) for p in group)
        deps.store.put(pk, f"part#{label}-{parts - 1:03d}", {"blobs": [p["blob"] for p in group], "requests": requests})
        total += requests
    deps.store.put(pk, f"sliced#{label}", {"requests": total, "batches": parts})
    return {"slice": slice_number, "requests": total, "batches": parts}


def close_round(deps: BulkDeps, bulk_id: str, round_number: int) -> dict[str, Any]:
    """Add the round's slices into ``prepared#<round>`` (once) and return it: ``{"bulk_id", "round",
    "batches", "requests"}``. Raises :class:`LongdocError` when a planned slice is not done."""
    pk, r = _pk(bulk_id), f"{round_number:04d}"
    prepared = deps.store.get(pk, f"prepared#{r}")
    if prepared is not None:
        return prepared
    count = int((deps.store.get(pk, f"slices#{r}") or {"count": 0})["count"])
    done = [item for _, item in deps.store.query(pk, f"sliced#{r}#")]
    if len(done) != count:
        raise LongdocError(f"bulk {bulk_id}: round {round_number} has {len(done)} of {count} slices prepared")
    out = {"bulk_id": bulk_id, "round": round_number, "batches": sum(int(d["batches"]) for d in done),
           "requests": sum(int(d["requests"]) for d in done)}
    deps.store.put(pk, f"prepared#{r}", out)
    return out


def prepare(deps: BulkDeps, bulk_id: str, round_number: int) -> dict[str, Any]:
    """The whole of a round's Prepare in one process (the CLI's local rounds, tests): :func:`plan_round`,
    every slice in turn, :func:`close_round`. Idempotent. Returns :func:`close_round`'s dict."""
    prepared = deps.store.get(_pk(bulk_id), f"prepared#{round_number:04d}")
    if prepared is not None:
        return prepared
    for number in plan_round(deps, bulk_id, round_number)["slices"]:
        prepare_slice(deps, bulk_id, round_number, number)
    return close_round(deps, bulk_id, round_number)
