"""A model conversation carried from one bulk round to the next: the tool results travel.

A round carries one model turn per document run. When the harness has answered a turn's tool
calls and the session goes on (``stop_reason`` ``tool_use`` or ``pause_turn`` with clause types
still pending: a quote rejected as not verbatim, the next page of chunks a multi-instance clause
type asked for), the synchronous loop sends the tool results in its next call; in bulk they go
in the next round's request, which is the answered request plus the assistant turn and the user
message of ``tool_result`` blocks (:func:`longdoc.extract.session.apply_response` appends both).
The assistant turn is the reply's blocks as received, in order: thinking, redacted_thinking and
unknown blocks travel with the text and tool calls, unchanged (signature included), as the
Messages API asks of a tool loop (https://platform.claude.com/docs/en/build-with-claude/thinking);
batch requests obey the same rules. They live in the turn blob, never in a store item, so their
size (an omitted-display thinking block is its signature, about a kilobyte) does not approach
the 400 KB item limit.

Harvest keeps that continuation (:func:`keep_turn`): the two messages as the blob
``bulk/<bulk_id>/turns/<custom_id>.json`` and the item ``turn#<run_id>``: the ``custom_id``
answered, its round, the checkpoint version the harvest saves, and the model turns in the
conversation so far. Prepare (:func:`load_continuations`) reads the answered requests' params
back from their rounds' part blobs and builds the next request from them
(:func:`continued_params`) when the run's checkpoint is still at that version; otherwise the
turn is stale (the run went on afresh, e.g. after ``max_tokens``) and a fresh request is built
from the checkpoint. Like a synchronous session, a conversation holds at most
:data:`~longdoc.extract.session_types.MAX_CALLS_PER_SESSION` model turns; the request after
that starts fresh. Items hold ids and counters only; the messages live in blobs.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from longdoc.bulk.parts import part_lines
from longdoc.bulk.ports import BulkStore
from longdoc.bulk.requests import add_retry_note
from longdoc.core.conversation import check_conversation, join_turns
from longdoc.core.messages import Message
from longdoc.core.ports import BlobStore
from longdoc.extract.public import MAX_CALLS_PER_SESSION

_CUSTOM_ID = re.compile(r'^\{"custom_id": "([A-Za-z0-9_-]{1,64})"')
"""The ``custom_id`` at the head of a part blob's line (Prepare writes ``json.dumps({"custom_id", "params"})``)."""


@dataclass(frozen=True)
class Continuation:
    """The next request of a run's conversation: ``params`` (a Messages API body: the answered
    request's, messages extended), valid while the run's checkpoint is at ``version``; ``turns``:
    model turns already in it. ``shown``: the chunk ids the conversation's context showed, and
    ``scores``: each clause type's initial retrieval score (cosine similarity) over them, both
    carried so the next round's harness judges ``not_found`` on the same evidence (None: not kept).
    ``conversation_from``: the session number the conversation began in, whose searches count
    against its one search budget (:attr:`longdoc.extract.session_types.Session.conversation_from`;
    None: not kept, each round has its own)."""

    version: int
    turns: int
    params: dict[str, Any]
    shown: list[str] | None = None
    scores: dict[str, Any] | None = None
    conversation_from: int | None = None


def keep_turn(blobs: BlobStore, store: BulkStore, bulk_id: str, answered: dict[str, Any], custom_id: str,
              version: int, delta: list[Message], shown: list[str] | None = None,
              scores: dict[str, Any] | None = None, conversation_from: int | None = None) -> None:
    """Keep the continuation of the request ``custom_id`` (its ``cid#`` item is ``answered``):
    ``delta`` (the assistant turn and the tool results) as a blob, and the ``turn#`` item pointing
    at it for the checkpoint ``version`` the harvest saves, with the chunk ids the conversation has
    shown so far (``shown``: its request's context plus what its searches returned) and the initial
    retrieval ``scores``, which the next round's harvest checks citations against, and the session
    number the conversation began in (``conversation_from``: its search budget spans the rounds).
    Idempotent."""
    key = f"bulk/{bulk_id}/turns/{custom_id}.json"
    blobs.put(key, json.dumps([m.model_dump() for m in delta], ensure_ascii=False).encode())
    store.put(f"bulk#{bulk_id}", f"turn#{answered['run_id']}",
              {"run_id": answered["run_id"], "cid": custom_id, "round": answered["round"], "version": version,
               "turns": int(answered.get("turns", 0)) + 1, "blob": key, "shown": shown, "scores": scores,
               "conversation_from": conversation_from})


def end_turn(store: BulkStore, bulk_id: str, run_id: str) -> None:
    """Mark the run's conversation ended (its last answer did not go on): no later Prepare reads it."""
    store.put(f"bulk#{bulk_id}", f"turn#{run_id}", {"run_id": run_id, "cid": None, "version": None})


def _base_params(blobs: BlobStore, store: BulkStore, bulk_id: str, wanted: dict[str, int]) -> dict[str, dict[str, Any]]:
    """``custom_id -> params`` of the requests in ``wanted`` (``custom_id -> round``), read line by
    line; only the wanted lines are decoded. A request whose ``cid#`` item names its piece blob
    (:mod:`longdoc.bulk.slices`) is read from that piece alone (each piece read once), so a slice
    reads only its own runs' pieces, never the whole round; older requests from their rounds' parts."""
    out: dict[str, dict[str, Any]] = {}
    by_blob: dict[str, set[str]] = {}
    rest: dict[str, int] = {}
    for cid, round_number in wanted.items():
        item = store.get(f"bulk#{bulk_id}", f"cid#{cid}") or {}
        if item.get("blob"):
            by_blob.setdefault(str(item["blob"]), set()).add(cid)
        else:
            rest[cid] = round_number
    for key, cids in by_blob.items():
        _pick(part_lines(blobs, {"blob": key}), cids, out)
    for round_number in sorted(set(rest.values())):
        for _, part in store.query(f"bulk#{bulk_id}", f"part#{round_number:04d}#"):
            _pick(part_lines(blobs, part), set(rest), out)
    return out


def _pick(lines: Iterator[str], cids: set[str], out: dict[str, dict[str, Any]]) -> None:
    """Put into ``out`` the params of the request lines whose ``custom_id`` is in ``cids``."""
    for line in lines:
        head = _CUSTOM_ID.match(line)
        if head and head.group(1) in cids:
            out[head.group(1)] = json.loads(line)["params"]


def load_continuations(blobs: BlobStore, store: BulkStore, bulk_id: str, run_ids: set[str]) -> dict[str, Continuation]:
    """``run_id -> Continuation`` for the runs of ``run_ids`` whose conversation goes on (fewer than
    ``MAX_CALLS_PER_SESSION`` turns). The caller checks ``version`` against the run's checkpoint."""
    turns = [t for _, t in store.query(f"bulk#{bulk_id}", "turn#")
             if t["run_id"] in run_ids and t.get("cid") and t["turns"] < MAX_CALLS_PER_SESSION]
    bases = _base_params(blobs, store, bulk_id, {t["cid"]: t["round"] for t in turns})
    out = {}
    for t in turns:
        if t["cid"] in bases:
            delta = json.loads(blobs.get(t["blob"]))
            params = {**bases[t["cid"]], "messages": join_turns(bases[t["cid"]]["messages"], delta)}
            out[t["run_id"]] = Continuation(version=t["version"], turns=t["turns"], params=params,
                                            shown=t.get("shown"), scores=t.get("scores"),
                                            conversation_from=t.get("conversation_from"))
    return out


def continued_params(continuation: Continuation, max_tokens: int, note: str | None = None) -> dict[str, Any]:
    """The request body continuing the conversation: its params with the session's current output
    cap (``max_tokens``, tokens, after any escalation); ``note`` (why the previous request of this
    turn failed) is added as a text block to the last user message, after its tool results.
    Raises :class:`~longdoc.core.errors.ConversationMalformed` when the carried conversation breaks
    the Messages API rules (:func:`longdoc.core.conversation.check_conversation`)."""
    params = copy.deepcopy(continuation.params)
    params["max_tokens"] = max_tokens
    last = params["messages"][-1]
    if note and last["role"] == "user":
        add_retry_note(last, note)
    # a conversation carried after a pause_turn ends with the paused assistant turn, sent back as is
    check_conversation(params["messages"], "bulk continuation", paused=True)
    return params
