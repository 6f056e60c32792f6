"""The extraction loop: one fresh model session per call of :func:`run_session`.

A session loads the run's checkpoint (or starts one), reconciles it with the extractions
already stored (so an invocation re-run from an old checkpoint never duplicates work),
retrieves a page of top-K chunks for each pending clause type, and runs the tool-use loop.
The harness, not the model, verifies every citation and updates CASE_FACTS after each tool
call (:mod:`longdoc.extract.harness`), and decides whether the run is done. Stop reasons (Stop reasons
and fallback, https://platform.claude.com/docs/en/build-with-claude/handling-stop-reasons):

==================================  ==========================================================
``tool_use``                        run the tools, continue the same session (while pending)
``pause_turn``                      send the assistant turn back as is, continue the session
``max_tokens``                      the reply's last block is cut whatever its schema says (never
                                    run, stored, answered or sent back, counted as ``cut_blocks``);
                                    the complete calls before it run and are stored; the session
                                    ends: checkpoint, CONTINUE, the next session starts fresh. A cut
                                    tool call or a turn of thinking only doubles max_tokens first
``model_context_window_exceeded``   the same: last block cut, complete calls stored, session ends
``end_turn`` / ``stop_sequence``    DONE only if the harness finds nothing pending, else CONTINUE
``refusal``                         record it per clause type, CONTINUE with the others (see below)
==================================  ==========================================================

Why every ``max_tokens`` stop ends the session (rather than answering the complete calls and going
on in the same conversation): on ``max_tokens`` the state is checkpointed to the store and the next
session starts fresh. A Lambda that timed out in the middle of a long conversation would lose every
call since the last checkpoint, and one state-machine iteration per session lets the console show
where the run stood at each stop (docs/architecture.md, "The extraction session").

A clause type may occur several times: each verified ``extract_clause`` call stores one
instance (keyed by :func:`instance_key`); ``more_instances: true`` makes the harness answer
with the next page of retrieved chunks for that clause type, until the model calls
``record_not_found`` for it (no further instance) or retrieval runs out.

Progress guard: a session that resolves nothing new counts as stalled; after
``no_progress_limit`` stalled sessions in a row (default :data:`NO_PROGRESS_LIMIT` = 3:
one retry with the same prompt shape could be bad luck, three in a row means the model
cannot resolve what is left with this budget) the run fails with :class:`NoProgress`
instead of looping until the iteration cap.
"""

from __future__ import annotations

import logging
import time

from longdoc.core.documents import load_chunks
from longdoc.core.run_fence import run_fence
from longdoc.core.errors import ModelRefused, NoProgress, NotFound
from longdoc.core.conversation import append_turn, check_conversation
from longdoc.core.messages import (AssistantBlock, Message, ModelRequest, ModelResponse, TextBlock, ToolUseBlock,
                                   block_label, complete_blocks, cut_block)
from longdoc.core.models import Chunk
from longdoc.core.records import (CHECKPOINT_TTL_SECONDS, MAX_CALL_RECORDS, CallRecord, CaseFacts, Checkpoint,
                                  Extraction)
from longdoc.extract.context import initial_scores, session_chunks
from longdoc.core.cost import warn_if_prefix_uncacheable
from longdoc.extract.harness import apply_extraction
from longdoc.extract.prompt import build_request, prefix_tokens
from longdoc.extract.refusals import askable, record_refusal, unanswerable
from longdoc.core.clock import utc_now
from longdoc.extract.runs import record_session
from longdoc.extract.tools import run_tool, tool_definitions
# Re-exported for callers not yet moved to longdoc.extract.runs (longdoc.eval.extraction imports them here).
from longdoc.extract.runs import run_result as run_result, start_run as start_run
# The session's types and limits live in longdoc.extract.session_types; re-exported here for callers.
from longdoc.extract.session_types import MAX_CALLS_PER_SESSION as MAX_CALLS_PER_SESSION
from longdoc.extract.session_types import Deps as Deps
from longdoc.extract.session_types import Session as Session
from longdoc.extract.session_types import SessionOptions as SessionOptions
from longdoc.extract.session_types import SessionOutcome as SessionOutcome

log = logging.getLogger(__name__)


def open_session(deps: Deps, run_id: str) -> Session:
    """Load the run and its checkpoint (or a fresh one) and fold the stored extractions into CASE_FACTS.

    Folding them in makes an invocation re-run from an older checkpoint see the work a
    lost invocation already stored. The session's fence (the run lease's generation) is read
    first, so a process that stalls past its lease has every later write refused
    (:class:`~longdoc.core.errors.RunLeaseLost`). Raises :class:`NotFound` for an unknown run.
    """
    fence = run_fence(deps.state, run_id)
    run = deps.state.get_run(run_id)
    if run is None:
        raise NotFound(f"run {run_id} does not exist")
    checkpoint = deps.state.load_checkpoint(run_id) or Checkpoint(
        run_id=run_id, version=0,
        case_facts=CaseFacts(run_id=run_id, doc_id=run.doc_id, doc_version=run.doc_version,
                             clause_types=run.clause_types, exact_values=dict(run.facts)),
    )
    facts = checkpoint.case_facts.model_copy(deep=True)
    last: dict[str, Extraction] = {}
    for stored in deps.state.list_extractions(run_id):
        apply_extraction(facts, stored)
        last[stored.clause_type] = stored
    return Session(run=run, checkpoint=checkpoint, facts=facts, last=last, usage=checkpoint.usage,
                    calls=list(checkpoint.calls), number=checkpoint.sessions,
                    stop_reason=checkpoint.last_stop_reason, stalled=checkpoint.stalled_sessions,
                    max_tokens=checkpoint.max_tokens or run.max_tokens, fence=fence)


def _save(deps: Deps, s: Session, options: SessionOptions, done: bool) -> int:
    """Save the next checkpoint version and the run's progress; returns that version.

    A finished run's checkpoint gets ``expires_at`` (now + 30 days, the DynamoDB TTL).
    Raises :class:`~longdoc.core.errors.CheckpointConflict` when another invocation saved first,
    :class:`~longdoc.core.errors.RunLeaseLost` when another process took the run's lease over.
    """
    version = s.checkpoint.version + 1
    deps.state.save_checkpoint(Checkpoint(
        run_id=s.run.run_id, version=version, case_facts=s.facts, sessions=s.number, last_stop_reason=s.stop_reason,
        usage=s.usage, updated_at=utc_now(), stalled_sessions=s.stalled, calls=s.calls[-MAX_CALL_RECORDS:],
        rejected_citations=s.checkpoint.rejected_citations + s.rejected, max_tokens=s.max_tokens,
        cut_blocks=s.checkpoint.cut_blocks + len(s.cut),
        expires_at=int(time.time()) + CHECKPOINT_TTL_SECONDS if done else None), s.fence)
    record_session(deps.state, s.run, model=deps.model.name, execution=options.execution,
                   checkpoint_version=version, done=done, fence=s.fence)
    return version


def _out_of_time(options: SessionOptions) -> bool:
    """Whether no model call may start: the deadline has passed, or less than ``min_call_seconds``
    are left before ``call_deadline`` (never without them)."""
    now_ = options.clock()
    if options.call_deadline is not None and options.call_deadline - now_ < options.min_call_seconds:
        return True
    return options.deadline is not None and now_ >= options.deadline


def _call(deps: Deps, s: Session, options: SessionOptions, request: ModelRequest,
          messages: list[Message]) -> ModelResponse:
    """One model call with the conversation so far, its time budget bounded by ``call_deadline``."""
    budget = None if options.call_deadline is None else max(1.0, options.call_deadline - options.clock())
    check_conversation(messages, f"run {s.run.run_id} session {s.number}",
                       paused=len(messages) > 1 and s.stop_reason == "pause_turn")
    return deps.model.create(turn_request(s, request, messages, budget))


def turn_request(s: Session, request: ModelRequest, messages: list[Message],
                 timeout_seconds: float | None = None) -> ModelRequest:
    """The request of the session's next model call: ``request`` with ``messages`` and the
    session's current output cap (tokens, after escalation); ``timeout_seconds`` its time budget."""
    return ModelRequest(**{**request.model_dump(), "messages": messages, "max_tokens": s.max_tokens,
                           "timeout_seconds": timeout_seconds})


def _record_call(s: Session, response: ModelResponse, cut: AssistantBlock | None) -> None:
    """Count one model call's usage (tokens), stop reason and cut block (``cut``, if any) on the session."""
    s.model_calls += 1
    s.cache_read += response.usage.cache_read_input_tokens
    s.usage = s.usage.add(response.usage)
    s.stop_reason = response.stop_reason
    label = None if cut is None else block_label(cut)
    if label is not None:
        s.cut.append(label)
        log.info("run %s session %d: the reply stopped on %s; its last block (%s) is cut: not run, not stored",
                    s.run.run_id, s.number, response.stop_reason, label)
    s.calls.append(CallRecord(session=s.number, model=response.model, stop_reason=response.stop_reason,
                              usage=response.usage, cut=label))


def only_thinking(response: ModelResponse) -> bool:
    """Whether a ``max_tokens`` stop holds no text and no tool call: the output cap went on thinking
    (``max_tokens`` caps thinking and answer together, https://platform.claude.com/docs/en/build-with-claude/thinking)."""
    return response.stop_reason == "max_tokens" and not any(
        isinstance(b, TextBlock | ToolUseBlock) for b in response.content)


def _escalate(s: Session, options: SessionOptions, response: ModelResponse) -> None:
    """Double the output cap (up to the ceiling) after a ``max_tokens`` stop that cut a tool call
    (the reply's last block, :func:`longdoc.core.messages.cut_block`) or held only thinking
    (:func:`only_thinking`).

    The stop-reason page says to raise ``max_tokens`` after a ``max_tokens`` stop
    (https://platform.claude.com/docs/en/build-with-claude/handling-stop-reasons); a turn that
    spent the whole cap thinking needs the same. The session ends there (checkpoint,
    ``CONTINUE``); the new cap is checkpointed, so the next session retries with it, and a growth
    counts as progress (never :class:`NoProgress`). A cut text block leaves the cap as it is.
    """
    if response.stop_reason != "max_tokens":
        return
    cut_call = isinstance(cut_block(response), ToolUseBlock)
    if not (cut_call or only_thinking(response)):
        return
    grown = min(s.max_tokens * 2, options.max_tokens_ceiling)
    if grown > s.max_tokens:
        why = "a tool call cut" if cut_call else "a turn of thinking only stopped"
        log.info("%s by max_tokens=%d; the next session gets %d", why, s.max_tokens, grown)
        s.max_tokens, s.escalated = grown, True


def _exchange(deps: Deps, s: Session, options: SessionOptions, request: ModelRequest,
              messages: list[Message]) -> bool:
    """One synchronous model call and :func:`apply_response`; returns whether the session goes on."""
    return apply_response(deps, s, options, _call(deps, s, options, request, messages), messages)


def apply_response(deps: Deps, s: Session, options: SessionOptions, response: ModelResponse,
                   messages: list[Message]) -> bool:
    """THE harness step of both transports: one Messages response -> verified extractions (stored),
    CASE_FACTS, refusals, max_tokens escalation and the next turn; returns whether the session goes on.

    Usage is recorded; on a stop in :data:`~longdoc.core.messages.CUT_STOPS` the reply's last block
    is cut (:func:`longdoc.core.messages.cut_block`, whatever its schema says): never run, stored or
    sent back, counted on the session (``cut``) and the call's record, logged. Each complete tool
    call runs through its tool object (:func:`longdoc.extract.tools.run_tool`); a refusal is
    recorded against the clause type being worked on (:mod:`longdoc.extract.refusals`) and ends
    the session; a cut stop ends the session too (the next one starts fresh from the checkpoint,
    module docstring), a cut tool call doubling the next session's room (:func:`_escalate`).
    ``messages`` is extended with the assistant turn (every block of the reply as received, thinking
    included; joined to a paused assistant turn before it, :func:`longdoc.core.conversation.append_turn`)
    and the tool results only when the session goes on (``tool_use`` / ``pause_turn`` with clause
    types pending). The synchronous loop calls it after each ``Model.create``; the batch harvest
    (:func:`longdoc.bulk.steps.harvest`) with each ``succeeded`` batch result.
    """
    cut = cut_block(response)
    _record_call(s, response, cut)
    if s.shown is None:  # a batch round: recompute what its request showed (same checkpoint, same context)
        session_context(deps, s, options)
    blocks = complete_blocks(response)
    results = [run_tool(deps, s, b, response.model, options) for b in blocks if isinstance(b, ToolUseBlock)]
    if s.stop_reason == "refusal":
        s.refused = record_refusal(s.facts, s.asked, response, s.number) is not None
        return False
    _escalate(s, options, response)
    if s.stop_reason not in ("pause_turn", "tool_use") or not s.facts.pending or not blocks:
        return False
    append_turn(messages, Message(role="assistant", content=[b.model_dump() for b in blocks]))
    if results:
        messages.append(Message(role="user", content=results))
    return True


def start_turn(deps: Deps, s: Session) -> None:
    """Begin the session's model turn: count the session, fix the clause types asked and load the chunks."""
    s.number += 1
    s.asked = askable(s.facts)
    s.chunks = {c.chunk_id: c for c in load_chunks(deps.blobs, s.run.doc_id, s.run.doc_version)}
    s.ranker = None  # built again over these chunks on first use (longdoc.extract.context.session_retriever)


def session_context(deps: Deps, s: Session, options: SessionOptions) -> tuple[list[Chunk], list[Chunk]]:
    """The session's chunk context ``(stable, later)`` (:func:`~longdoc.extract.context.session_chunks`:
    the run's initial retrieval, the same in every session, then what only this session is shown);
    sets the shown set and the initial retrieval scores (:func:`~longdoc.extract.context.initial_scores`)."""
    similarity: dict[str, dict[str, float]] = {}
    stable, later = session_chunks(deps, s, options.budget_tokens, similarity)
    s.shown = {c.chunk_id for c in [*stable, *later]}
    asked = set(s.asked)  # scores of the clause types this session asks for, as before
    s.facts.retrieval_scores = initial_scores({k: v for k, v in similarity.items() if k in asked}, s.shown)
    return stable, later


def first_request(deps: Deps, s: Session, options: SessionOptions) -> ModelRequest:
    """The session's first request (after :func:`start_turn`): the run's stable chunk context,
    CASE_FACTS (the run's own facts, ``run.facts``, in its stable part), this session's further
    chunks and the tools (:func:`longdoc.extract.prompt.build_request`,
    :func:`longdoc.extract.tools.tool_definitions`)."""
    stable, later = session_context(deps, s, options)
    request = build_request(s.facts, deps.catalogue.resolve_many(s.asked), stable, s.max_tokens,
                            tools=tool_definitions(options.strict_tools), later_chunks=later, pinned=s.run.facts)
    warn_if_prefix_uncacheable(deps.model.name, prefix_tokens(request))
    return turn_request(s, request, list(request.messages))


def _converse(deps: Deps, s: Session, options: SessionOptions) -> None:
    """The session proper: retrieve, build the prompt, then up to :data:`MAX_CALLS_PER_SESSION` model calls.

    Past ``options.deadline`` no model call starts (``stop_reason="time_limit"``).
    """
    if _out_of_time(options):
        s.time_limited, s.stop_reason = True, "time_limit"
        return
    start_turn(deps, s)
    request = first_request(deps, s, options)
    messages = list(request.messages)
    for _ in range(MAX_CALLS_PER_SESSION):
        if _out_of_time(options):
            s.time_limited, s.stop_reason = True, "time_limit"
            return
        if not _exchange(deps, s, options, request, messages):
            return


def finish_session(deps: Deps, s: Session, options: SessionOptions) -> SessionOutcome:
    """Count a stalled session, checkpoint, and say where the run stands.

    Raises :class:`ModelRefused` when only finally refused clause types are left (naming
    them and their categories; the others are stored) and :class:`NoProgress`.
    """
    done = not s.facts.pending
    progressed = s.facts.progress_marker() != s.checkpoint.case_facts.progress_marker()
    moved = done or progressed or s.time_limited or s.escalated or s.refused
    s.stalled = 0 if moved else s.checkpoint.stalled_sessions + 1
    version = _save(deps, s, options, done)
    refused = unanswerable(s.facts)
    if refused:
        why = "; ".join(f"{c} ({s.facts.refusals[c].category or 'no category'}): {s.facts.refusals[c].explanation or ''}"
                        for c in refused)
        raise ModelRefused(f"model refused in session {s.number} of run {s.run.run_id}: {why}")
    if not done and s.stalled >= options.no_progress_limit:
        raise NoProgress(f"run {s.run.run_id}: {s.stalled} sessions in a row resolved nothing new "
                         f"(last stop_reason {s.stop_reason}); pending: {', '.join(s.facts.pending)}")
    return SessionOutcome(run_id=s.run.run_id, doc_id=s.run.doc_id, status="DONE" if done else "CONTINUE",
                          stop_reason=s.stop_reason, sessions=s.number, checkpoint_version=version,
                          extracted=s.facts.extracted_count, pending=len(s.facts.pending),
                          rejected_citations=s.rejected, model_calls=s.model_calls,
                          cache_read_tokens=s.cache_read, max_tokens=s.max_tokens,
                          search_calls=sum(r.session == s.number for r in s.facts.searches),
                          cut_blocks=len(s.cut))


def run_session(deps: Deps, run_id: str, options: SessionOptions | None = None) -> SessionOutcome:
    """Run one fresh model session for ``run_id`` and checkpoint the result.

    Raises :class:`NotFound` for an unknown run, :class:`ModelRefused` on a refusal,
    :class:`NoProgress` after ``options.no_progress_limit`` stalled sessions in a row, the
    model port's named errors on API failures (the state machine retries those), and
    :class:`~longdoc.core.errors.CheckpointConflict` when another invocation saved first (the
    loser's stored extractions are idempotent, so nothing is duplicated).
    """
    options = options or SessionOptions()
    s = open_session(deps, run_id)
    if s.facts.pending:
        _converse(deps, s, options)
    return finish_session(deps, s, options)
