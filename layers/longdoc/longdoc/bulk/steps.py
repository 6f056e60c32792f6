"""The four steps of a bulk round: Prepare -> Submit -> Poll -> Harvest (``statemachine/bulk.asl.json``).

A round carries one model turn per pending document run. Prepare builds each run's request from
its checkpoint exactly as a synchronous session would (:func:`longdoc.extract.session.first_request`);
Harvest applies each ``succeeded`` message with the same harness step as the synchronous loop
(:func:`longdoc.extract.session.apply_response`, then :func:`~longdoc.extract.session.finish_session`),
so citation verification, CASE_FACTS and checkpoints have one implementation. Only ids and
counters go into the state payloads; the items live in a :class:`~longdoc.bulk.ports.BulkStore`
(``pk = "bulk#<id>"``) and the request bodies in the blob store.

A conversation goes on across rounds: tool results (a rejected quote's "not verbatim", a
``not_found`` without the evidence the rule asks for, the chunks a ``search_chunks`` call returned,
the next page of chunks) travel in the run's next request (:mod:`longdoc.bulk.turns`).

Items: ``job`` (clause types, run count); ``run#<run_id>`` (doc id, failed round ids, last note and
the checkpoint version it applies to); ``cid#<custom_id>`` (run id, round, the checkpoint version
the request was built from, model turns of its conversation before it, the chunk ids it showed
and its clause types' initial retrieval scores); ``part#<round>#<part>`` (blob key, request
count); ``submitting#<round>#<part>`` (the intent to create a batch); ``batch#<round>#<part>``
(the batch id, written with a conditional write); ``harvested#<round>#<part>``;
``seen#<custom_id>``; ``turn#<run_id>`` (a conversation going on); ``priming#<round>`` /
``prime#<round>`` (the intent and the id of the round's priming batch); ``primeusage#<round>`` (its
billed usage, for the job's cost); ``usage#<round>#<custom_id>``
and ``cache#<round>`` (prompt-cache figures, :mod:`longdoc.bulk.cache`). A run's status is its
:class:`~longdoc.core.records.RunRecord`'s.

Tools (issue 20): a round's request carries the same registry as a synchronous session
(``extract_clause``, ``record_not_found``, ``search_chunks``; session options from the same
settings, :func:`longdoc.wiring.session_options`). Each round is one model turn with its own
search budget; the progress guard and the round cap bound a run that never gives the evidence.
"""

from __future__ import annotations

import logging
from typing import Any

from longdoc.bulk.plan import poll_wait
from longdoc.bulk.ports import BatchResult, BulkStore
from longdoc.bulk.deps import BulkDeps as BulkDeps
from longdoc.bulk.cache import record_priming, record_usage, round_cache
from longdoc.bulk.submit import create_once, prime_once
# Prepare's steps live in longdoc.bulk.slices (issue 26); re-exported for the handler and callers
from longdoc.bulk.slices import close_round as close_round, plan_round as plan_round
from longdoc.bulk.slices import prepare as prepare, prepare_slice as prepare_slice
from longdoc.bulk.turns import end_turn, keep_turn
from longdoc.core.errors import BatchNotFound, LongdocError
from longdoc.core.models_catalogue import spec_for
from longdoc.core.messages import Message
from longdoc.core.ports import StateStore
from longdoc.extract.public import (Session, apply_response, finish_session, open_session,
                                    record_failure, start_turn)

log = logging.getLogger(__name__)
TERMINAL = ("SUCCEEDED", "FAILED")


def _pk(bulk_id: str) -> str:
    return f"bulk#{bulk_id}"


def create_bulk(deps: BulkDeps, bulk_id: str, runs: list[tuple[str, str]], clause_types: list[str]) -> None:
    """Record a bulk job over ``runs`` (``(run_id, doc_id)``, runs already stored as PENDING)."""
    create_job(deps.store, bulk_id, runs, clause_types)


def create_job(store: BulkStore, bulk_id: str, runs: list[tuple[str, str]], clause_types: list[str]) -> None:
    """:func:`create_bulk` with only the bulk store (the API function has no model or index)."""
    pk = _pk(bulk_id)
    for run_id, doc_id in runs:
        store.put_if_absent(pk, f"run#{run_id}", {"run_id": run_id, "doc_id": doc_id, "failed": [], "note": None})
    # the job item last, as the commit marker (issue 26): a job never exists without all its runs
    store.put_if_absent(pk, "job", {"bulk_id": bulk_id, "clause_types": clause_types, "runs": len(runs),
                                    "rejected": 0, "counts": {"pending": len(runs), "done": 0, "failed": 0},
                                    "counted_round": None, "finished": False})


def _open_runs(deps: BulkDeps, bulk_id: str) -> list[dict[str, Any]]:
    """Run items whose run has not ended."""
    out = []
    for _, item in deps.store.query(_pk(bulk_id), "run#"):
        run = deps.extract.state.get_run(item["run_id"])
        if run is not None and run.status not in TERMINAL:
            out.append(item)
    return out


def _parts(deps: BulkDeps, bulk_id: str, round_number: int) -> list[tuple[str, dict[str, Any]]]:
    """``(part label "<round>#<part>", item)`` of the round's batch parts."""
    prefix = f"part#{round_number:04d}#"
    return [(sk[len("part#"):], item) for sk, item in deps.store.query(_pk(bulk_id), prefix)]


def submit(deps: BulkDeps, bulk_id: str, round_number: int) -> dict[str, Any]:
    """Create one batch per part not yet submitted; the batch id is kept with a conditional write.

    A retried Submit finds the id recorded and creates nothing; one that died between create and
    that write finds the batch it created through its write-ahead intent and the batch list
    (:func:`longdoc.bulk.submit.create_once`); of two concurrent Submits the one whose
    conditional write loses cancels the batch it created. Returns ``{"submitted"}`` (batches
    created by this call). Raises :class:`~longdoc.core.errors.BatchNotListedYet` (retried)."""
    pk = _pk(bulk_id)
    created = 0
    for label, part in _parts(deps, bulk_id, round_number):
        if deps.store.get(pk, f"batch#{label}") is not None:
            continue
        created += create_once(deps.extract.blobs, deps.store, deps.batches, bulk_id, label, part,
                               settle_seconds=deps.limits.list_settle_seconds)
    return {"submitted": created}


PRIME_MIN_REQUESTS = 2
"""Fewest requests in a round that is primed: a lone request writes the prefix once either way."""


def should_prime(deps: BulkDeps, bulk_id: str, round_number: int) -> bool:
    """Whether the round gets a priming batch: it has at least :data:`PRIME_MIN_REQUESTS` requests
    and its model is one the capability table knows (a model with a prompt cache; the offline
    baseline's local batches have none)."""
    prepared = deps.store.get(_pk(bulk_id), f"prepared#{round_number:04d}") or {}
    return int(prepared.get("requests", 0)) >= PRIME_MIN_REQUESTS and spec_for(deps.extract.model.name) is not None


def prime(deps: BulkDeps, bulk_id: str, round_number: int) -> dict[str, Any]:
    """Create the round's one-request priming batch once (:func:`longdoc.bulk.submit.prime_once`),
    before any of its batches: it writes the shared prefix (tools + system, 1-hour marks) to the
    Message Batches cache, and the round's batch goes out only after it has ended
    (:func:`poll_prime`). Returns ``{"primed", "priming_batch"}`` (False / None: the round is not
    primed, :func:`should_prime`). Raises :class:`~longdoc.core.errors.BatchNotListedYet` (retried)."""
    if not should_prime(deps, bulk_id, round_number):
        return {"primed": False, "priming_batch": None}
    parts = _parts(deps, bulk_id, round_number)
    batch_id = prime_once(deps.extract.blobs, deps.store, deps.batches, bulk_id, round_number, parts[0][1],
                          settle_seconds=deps.limits.list_settle_seconds)
    return {"primed": True, "priming_batch": batch_id}


def poll_prime(deps: BulkDeps, bulk_id: str, round_number: int, polls: int, not_found: int = 0) -> dict[str, Any]:
    """Whether the round's priming batch has ended (True when the round has none). A 404 right
    after create counts as not ended, up to ``limits.not_found_polls`` times. Once it has ended,
    its billed usage is kept for the job's cost (:func:`longdoc.bulk.cache.record_priming`, once).
    Returns ``{"ended", "polls", "not_found", "wait_seconds"}`` as :func:`poll` does."""
    recorded = deps.store.get(_pk(bulk_id), f"prime#{round_number:04d}")
    ended = True
    if recorded is not None:
        ended, not_found = _has_ended(deps, str(recorded["batch_id"]), not_found)
        if ended:
            record_priming(deps.store, deps.batches, bulk_id, round_number, deps.extract.model.name)
    return {"ended": ended, "polls": polls + 1, "not_found": not_found,
            "wait_seconds": poll_wait(polls + 1, deps.limits)}


def poll(deps: BulkDeps, bulk_id: str, round_number: int, polls: int, not_found: int = 0) -> dict[str, Any]:
    """Whether every batch of the round has ended. A 404 (right after create the batch may not be
    visible yet) counts as not ended, up to ``limits.not_found_polls`` times. Returns
    ``{"ended", "polls", "not_found", "wait_seconds"}`` (the wait before the next poll, seconds)."""
    pk = _pk(bulk_id)
    ended = True
    for label, _ in _parts(deps, bulk_id, round_number):
        batch = deps.store.get(pk, f"batch#{label}")
        if batch is None:
            raise LongdocError(f"bulk {bulk_id}: part {label} has no batch (Submit did not run)")
        done, not_found = _has_ended(deps, str(batch["batch_id"]), not_found)
        ended = ended and done
    return {"ended": ended, "polls": polls + 1, "not_found": not_found,
            "wait_seconds": poll_wait(polls + 1, deps.limits)}


def _has_ended(deps: BulkDeps, batch_id: str, not_found: int) -> tuple[bool, int]:
    """Whether batch ``batch_id`` has ended, and the 404 count so far: a 404 (a batch just created
    may not be visible yet) counts as not ended, up to ``limits.not_found_polls`` in the round.
    Raises :class:`BatchNotFound` past that, and the client's errors."""
    try:
        return deps.batches.retrieve(batch_id).processing_status == "ended", not_found
    except BatchNotFound:
        if not_found + 1 > deps.limits.not_found_polls:
            raise
        return False, not_found + 1


def _fail(deps: BulkDeps, run_id: str, error: str, reason: str) -> None:
    record_failure(deps.extract.state, run_id, error, reason)


def _restore(session: Session, cid: dict[str, Any]) -> None:
    """What the round's request showed (chunk ids) and its initial retrieval scores, as Prepare kept
    them: no second retrieval at Harvest, and a continued conversation's citations checked against
    everything it has shown."""
    if cid.get("shown") is not None:
        session.shown = set(cid["shown"])
        session.facts.retrieval_scores = dict(cid.get("scores") or {})


def _apply_message(deps: BulkDeps, bulk_id: str, answered: dict[str, Any], result: BatchResult) -> None:
    """A ``succeeded`` result through the synchronous harness step; a refusal or stall fails the run.

    ``answered`` is the request's ``cid#`` item. When the session goes on (tool calls answered,
    clause types pending), the assistant turn and its tool results are kept for the next round's
    request (:func:`longdoc.bulk.turns.keep_turn`), before the checkpoint is saved."""
    assert result.response is not None
    run_id = answered["run_id"]
    session = open_session(deps.extract, run_id)
    start_turn(deps.extract, session)
    _restore(session, answered)
    # a conversation going on from an earlier round spends that conversation's search budget
    session.conversation_from = answered.get("conversation_from") if answered.get("turns") else None
    delta: list[Message] = []
    try:
        if apply_response(deps.extract, session, deps.options, result.response, delta):
            began = session.number if session.conversation_from is None else session.conversation_from
            keep_turn(deps.extract.blobs, deps.store, bulk_id, answered, result.custom_id,
                      session.checkpoint.version + 1, delta, sorted(session.shown or ()),
                      dict(session.facts.retrieval_scores or {}), conversation_from=began)
        elif answered.get("turns"):
            end_turn(deps.store, bulk_id, run_id)
        finish_session(deps.extract, session, deps.options)
    except LongdocError as exc:
        _fail(deps, run_id, type(exc).__name__, str(exc))


def _retry_later(deps: BulkDeps, bulk_id: str, run_id: str, result: BatchResult, version: int) -> None:
    """Count a non-succeeded result against the run's retries (once per ``custom_id``) and keep its
    reason for the next round's message (while the checkpoint stays at ``version``, the one the
    failed request was built from); past ``limits.max_retries`` the run fails."""
    pk = _pk(bulk_id)
    if not deps.store.put_if_absent(pk, f"seen#{result.custom_id}", {"type": result.type}):
        return
    item = deps.store.get(pk, f"run#{run_id}") or {"run_id": run_id, "failed": []}
    note = result.type + (f": {result.error_type}: {result.error_message}" if result.error_type else "")
    failed = sorted({*item.get("failed", []), result.custom_id})
    deps.store.put(pk, f"run#{run_id}", {**item, "failed": failed, "note": note, "note_version": version})
    if len(failed) > deps.limits.max_retries:
        _fail(deps, run_id, "BatchRequestFailed", f"{len(failed)} rounds not answered; last: {note}")


def _harvest_one(deps: BulkDeps, bulk_id: str, result: BatchResult) -> bool:
    """Join one result to its run by ``custom_id`` and act on it (skipping what was already applied).

    Returns False for a ``custom_id`` this job never sent (no ``cid#`` item): logged as a warning
    naming it, and nothing applied; True otherwise."""
    cid = deps.store.get(_pk(bulk_id), f"cid#{result.custom_id}")
    if cid is None:
        log.warning("bulk %s: result with unknown custom_id %r (%s) ignored", bulk_id, result.custom_id, result.type)
        return False
    run = deps.extract.state.get_run(cid["run_id"])
    if run is None or run.status in TERMINAL:
        return True
    if result.type == "succeeded" and result.response is not None:
        record_usage(deps.store, bulk_id, int(cid["round"]), result.custom_id, result.response.usage)
    checkpoint = deps.extract.state.load_checkpoint(run.run_id)
    if (checkpoint.version if checkpoint else 0) != cid["version"]:
        return True  # applied by an earlier (killed) Harvest
    if result.type == "succeeded":
        _apply_message(deps, bulk_id, cid, result)
    elif result.type == "errored" and result.error_type == "invalid_request_error":
        _fail(deps, run.run_id, "InvalidRequest", result.error_message or "invalid_request_error")
    else:
        _retry_later(deps, bulk_id, run.run_id, result, cid["version"])
    return True


def harvest(deps: BulkDeps, bulk_id: str, round_number: int) -> dict[str, Any]:
    """Stream each ended batch's results (one at a time), apply them, and close the round.

    Re-running a killed Harvest loses and duplicates nothing: a result whose run's checkpoint
    moved past the version its request was built from was applied already; stored extractions
    are idempotent by key; a non-succeeded result counts once (``seen#``). Past
    ``limits.max_rounds`` a run still open fails. Returns ``{"bulk_id", "round" (the next),
    "pending", "done", "failed", "cache", "unknown_results"}`` (``cache``: the round's prompt-cache figures,
    :func:`longdoc.bulk.cache.round_cache`: hit rate, read share, tokens, ``primed_miss``;
    ``unknown_results``: results of this call whose ``custom_id`` the job never sent, each logged)."""
    pk = _pk(bulk_id)
    unknown = 0
    for label, _ in _parts(deps, bulk_id, round_number):
        if deps.store.get(pk, f"harvested#{label}") is not None:
            continue
        batch = deps.store.get(pk, f"batch#{label}")
        for result in deps.batches.results(batch["batch_id"] if batch else ""):
            unknown += not _harvest_one(deps, bulk_id, result)
        deps.store.put(pk, f"harvested#{label}", {"batch_id": batch["batch_id"] if batch else None})
    record_priming(deps.store, deps.batches, bulk_id, round_number, deps.extract.model.name)  # if PollPriming did not
    if round_number + 1 >= deps.limits.max_rounds:
        for item in _open_runs(deps, bulk_id):
            _fail(deps, item["run_id"], "RoundCapReached", f"still pending after {deps.limits.max_rounds} rounds")
    cache = round_cache(deps.store, bulk_id, round_number)
    if cache["primed_miss"]:
        log.warning("bulk %s round %d was primed but its %d items read nothing from the prompt cache",
                    bulk_id, round_number, cache["items"])
    return {"bulk_id": bulk_id, "round": round_number + 1, **counts(deps, bulk_id), "cache": cache,
            "unknown_results": unknown}


def counts(deps: BulkDeps, bulk_id: str) -> dict[str, int]:
    """``{"pending", "done", "failed"}``: runs of the bulk job by their run's status."""
    return counts_in(deps.store, deps.extract.state, bulk_id)


def job_outcome(c: dict[str, int]) -> str:
    """A finished job's status from its counts (``done``, ``failed``; nothing ``pending``):
    ``SUCCEEDED`` only when every document is done, ``PARTIAL`` when some are done and some failed,
    ``FAILED`` when none is done. One rule for the CLI, the API and the state machine's output."""
    if not c.get("failed"):
        return "SUCCEEDED"
    return "PARTIAL" if c.get("done") else "FAILED"


def outcome_reason(c: dict[str, int]) -> str | None:
    """One line saying why a finished job is not ``SUCCEEDED`` (None when it is): how many
    documents failed of how many, and where each one's error is."""
    if job_outcome(c) == "SUCCEEDED":
        return None
    total = int(c.get("done", 0)) + int(c.get("failed", 0)) + int(c.get("pending", 0))
    return (f"{c.get('failed', 0)} of {total} documents failed ({c.get('done', 0)} done); each document's "
            "error is in the job's status and in results/<bulk_id>/summary.jsonl")


def counts_in(store: BulkStore, state: StateStore, bulk_id: str) -> dict[str, int]:
    """:func:`counts` with only the two stores."""
    out = {"pending": 0, "done": 0, "failed": 0}
    for _, item in store.query(_pk(bulk_id), "run#"):
        run = state.get_run(item["run_id"])
        status = run.status if run else "FAILED"
        out["done" if status == "SUCCEEDED" else "failed" if status == "FAILED" else "pending"] += 1
    return out
