"""The one switch and the brains of the Claude contract suite (:mod:`tests.contract.test_claude_jobs`).

:data:`AWAITING_ISSUE_25` marks the tests that need the product changes of issue 25 (requests
built from the capability table: H1; the conversation echoing thinking blocks and answering
every tool_use, summaries and triage asking with ``tool_choice: auto``: H2). Set it to False
once those are merged: the marks go away in this one place.

A *brain* plays Claude behind a strict fake: it reads the prompt the product sent and answers
sensibly; the strict fake adds what the model itself adds (thinking, usage) and refuses what
the API refuses.
"""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest

from longdoc.adapters.baseline import OfflineBaselineModel
from longdoc.core.messages import Message, ModelRequest
from longdoc.extract.prompt import NOT_FOUND_TOOL, SEARCH_TOOL
from tests.fakes.anthropic_server import Reply, message_reply, text_block, tool_use_block

AWAITING_ISSUE_25 = False
"""True until H1's and H2's changes of issue 25 are merged (module docstring)."""

pending = pytest.mark.xfail(AWAITING_ISSUE_25, strict=False,
                            reason="needs H1/H2 (issue 25): requests from the capability table, thinking echoed")


def _request(body: dict[str, Any]) -> ModelRequest:
    return ModelRequest(system=body.get("system") or [], tools=body.get("tools") or [], max_tokens=64000,
                        messages=[Message(**m) for m in body["messages"]])


def assistant_turns(body: dict[str, Any]) -> int:
    """How many assistant turns the request's conversation holds (the model's calls so far)."""
    return sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")


_ASKED_TO_SEARCH = re.compile(r"call search_chunks with your own wording for (.+?) \(naming it")


def _blocks(message: dict[str, Any] | None, kind: str) -> list[dict[str, Any]]:
    content = (message or {}).get("content")
    return [b for b in content if isinstance(b, dict) and b.get("type") == kind] if isinstance(content, list) else []


def follow_up(body: dict[str, Any]) -> list[dict[str, Any]]:
    """What the model does about the harness's answers to its last calls: a ``record_not_found``
    naming the query after its own search for a clause type, and a search for a clause type when
    the harness rejected a not-found without one (the evidence rule)."""
    messages = body.get("messages") or []
    if len(messages) < 2:
        return []
    uses = {b.get("id"): b for b in _blocks(messages[-2], "tool_use")}
    out = []
    for result in _blocks(messages[-1], "tool_result"):
        use = uses.get(result.get("tool_use_id")) or {}
        args = use.get("input") or {}
        asked = _ASKED_TO_SEARCH.search(str(result.get("content"))) if result.get("is_error") else None
        if use.get("name") == SEARCH_TOOL and args.get("clause_type"):
            out.append(tool_use_block(NOT_FOUND_TOOL, {"clause_type": args["clause_type"], "reason": "not in the "
                                                       "document after a search", "queries": [args["query"]]}))
        elif asked:
            out.append(tool_use_block(SEARCH_TOOL, {"query": f"{asked.group(1)} clause", "top_k": 3,
                                                    "clause_type": asked.group(1)}))
    return out


class ExtractBrain:
    """Plays the extraction model: searches once (``search_chunks``), then answers every pending
    clause type as the offline baseline reads the prompt, follows the harness's answers
    (:func:`follow_up`), then ends the turn."""

    def __init__(self) -> None:
        self.baseline = OfflineBaselineModel(threshold=6.0, search=False)
        self.lock = threading.Lock()
        self.searches = 0

    def content(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
        """The reply blocks and stop reason for a Messages API request ``body``."""
        calls = assistant_turns(body)
        names = {t.get("name") for t in body.get("tools") or []}
        if calls == 0 and SEARCH_TOOL in names:
            with self.lock:
                self.searches += 1
            return [tool_use_block(SEARCH_TOOL, {"query": "governing law of this agreement", "top_k": 3})], "tool_use"
        more = follow_up(body) if calls > 1 else []
        if more:
            return more, "tool_use"
        if calls <= 1:
            answer = self.baseline.create(_request(body))
            blocks = [b.model_dump() for b in answer.content if b.type == "tool_use"]
            if blocks:
                return blocks, "tool_use"
        return [text_block("All requested clause types are recorded.")], "end_turn"

    def __call__(self, body: dict[str, Any]) -> Reply:
        blocks, stop = self.content(body)
        return message_reply(blocks, stop)

    def batch_answer(self, params: dict[str, Any]) -> dict[str, Any]:
        """The same play as a Message Batches result message."""
        blocks, stop = self.content(params)
        return {"type": "message", "role": "assistant", "id": "msg_batch", "model": params.get("model"),
                "content": blocks, "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1}}


TRIAGE_ANSWER = {"decision": "refer", "reasons": ["reported 26 days after the leak was discovered"],
                 "citations": [{"clause_id": "7.2", "quote": "reported to us in writing no later than 14 days after "
                                                             "the leak is first discovered"}]}
"""A verified triage answer for the dishwasher-leak claim of :mod:`tests.functional.test_triage_claude`."""


def triage_brain(body: dict[str, Any]) -> Reply:
    """Plays the triage model: one ``record_triage`` call citing clause 7.2 verbatim; then text."""
    last = body["messages"][-1]["content"]
    if isinstance(last, list) and any(b.get("type") == "tool_result" for b in last):
        return message_reply([text_block("Recorded.")], "end_turn")
    return message_reply([tool_use_block("record_triage", dict(TRIAGE_ANSWER))], "tool_use")
