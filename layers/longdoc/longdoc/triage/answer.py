"""The triage answer: one ``record_triage`` tool call, verified, corrected, or the labelled baseline.

The harness checks every citation before anything is returned: its ``clause_id`` must be
one of the clauses sent in the prompt (a number read from a clause's body, ``14 days after
the leak``, is not a clause id), and its quote must occur verbatim in that clause's text
(whitespace aside, :func:`longdoc.search.quotes.find_quote`). ``covered`` and
``not_covered`` need at least one citation. A reason must keep the polarity of the quotes it
rests on: one that cuts a negation, exception or modal verb out of a cited quote's words
("shall otherwise increase" for "shall not otherwise increase") is rejected (extraction's rule,
:func:`longdoc.core.polarity.polarity_problem`; only dropped words, since a reason explains the
decision in its own words and may say "not" itself). A reply stopped by ``max_tokens`` or
``model_context_window_exceeded`` has its last block cut whatever its input looks like
(:func:`longdoc.core.messages.cut_block`): a ``record_triage`` call there is never read
(:func:`longdoc.core.tool_answer.complete_uses`; the call is asked again with more room), never
answered nor replayed in a correction turn, and counted (``cut_blocks`` in the answer). Two or more calls in one turn with different inputs contradict each
other: none is read, the turn is sent back (every call answered with that problem) and counts
as a rejected answer; identical calls are read once. A rejected call goes back to the model as an
``is_error`` tool result saying what is wrong (every ``tool_use`` of the turn gets its
``tool_result``); after :data:`MAX_CORRECTIONS` rejected corrections the answer is ``refer``
with ``verified: false`` (never a decision the harness could not check). The tool is asked for
with ``tool_choice: auto``; an answer without the call is re-asked once, then
:class:`~longdoc.core.errors.ModelAnswerMissing`. Offline, :func:`baseline_answer` makes no
decision at all.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from longdoc.core.conversation import check_conversation
from longdoc.core.errors import AnswerRejected
from longdoc.core.messages import Message, ModelRequest, ModelResponse, ToolUseBlock, Usage, complete_blocks
from longdoc.core.ports import Model
from longdoc.core.polarity import polarity_problem
from longdoc.core.tool_answer import ask_for_tool, complete_uses
from longdoc.search.quotes import find_quote
from longdoc.triage.clauses import Clause
from longdoc.triage.prompt import TOOL_NAME

MAX_CORRECTIONS = 2
"""Correction rounds after a rejected answer (so at most 3 model calls per claim)."""
BASELINE_LABEL = "triage-offline-baseline-v1"
"""The name the offline answer carries: ranked clauses and ``refer``, no model, no decision."""
DECISIONS = ("covered", "not_covered", "refer")


@dataclass
class Answer:
    """A triage answer: ``decision``, ``reasons``, verified ``citations``, and how it was reached
    (``cut_blocks``: reply blocks cut by a ``max_tokens`` or context-window stop, never read)."""

    decision: str
    reasons: list[str]
    citations: list[dict[str, Any]]
    model: str
    baseline: bool = False
    verified: bool = True
    corrections: int = 0
    usage: Usage = field(default_factory=Usage)
    cut_blocks: int = 0

    def to_json(self) -> dict[str, Any]:
        """The answer as JSON (usage as token counts)."""
        return {"decision": self.decision, "reasons": self.reasons, "citations": self.citations,
                "model": self.model, "baseline": self.baseline, "verified": self.verified,
                "corrections": self.corrections, "cut_blocks": self.cut_blocks, "usage": self.usage.model_dump()}


def _citation(raw: Any, by_id: dict[str, list[Clause]]) -> dict[str, Any]:
    if not isinstance(raw, dict) or not isinstance(raw.get("clause_id"), str) or not isinstance(raw.get("quote"), str):
        raise AnswerRejected(f"a citation must be {{clause_id, quote}} strings, got {raw!r}")
    cid, quote = raw["clause_id"].strip(), raw["quote"]
    if cid not in by_id:
        raise AnswerRejected(f"clause_id {cid!r} was not sent to you; cite one of: {', '.join(by_id)}")
    for clause in by_id[cid]:
        found = find_quote(clause.text, quote)
        if found:
            return {"clause_id": cid, "doc_id": clause.doc_id, "chunk_id": clause.chunk_id,
                    "heading_path": list(clause.heading_path), "quote": clause.text[found[0]:found[1]]}
    raise AnswerRejected(f"quote not found verbatim in clause {cid}: {quote[:100]!r}; copy it word for word")


def verify(tool_input: dict[str, Any], clauses: list[Clause]) -> tuple[str, list[str], list[dict[str, Any]]]:
    """Check one ``record_triage`` input against the clauses sent; return decision, reasons, citations.

    Citations come back with the clause's own text of the quote, its document, chunk and
    heading path. Raises :class:`AnswerRejected` listing every problem found.
    """
    by_id: dict[str, list[Clause]] = {}
    for clause in clauses:
        by_id.setdefault(clause.clause_id, []).append(clause)
    problems: list[str] = []
    decision = tool_input.get("decision")
    if decision not in DECISIONS:
        problems.append(f"decision must be one of {', '.join(DECISIONS)}, got {decision!r}")
    reasons = tool_input.get("reasons")
    if not isinstance(reasons, list) or not reasons or not all(isinstance(r, str) and r.strip() for r in reasons):
        problems.append("reasons must be a non-empty list of short strings")
    citations: list[dict[str, Any]] = []
    for raw in tool_input.get("citations") or []:
        try:
            citations.append(_citation(raw, by_id))
        except AnswerRejected as exc:
            problems.append(str(exc))
    if decision in ("covered", "not_covered") and not citations and not problems:
        problems.append(f"a {decision} decision needs at least one citation of a clause sent to you")
    quoted = [str(c["quote"]) for c in citations]
    for reason in reasons if isinstance(reasons, list) and quoted else []:
        problem = polarity_problem(str(reason), quoted, f"the reason {str(reason)[:80]!r}", added=False)
        if problem:
            problems.append(problem)
    if problems:
        raise AnswerRejected("\n".join(problems))
    return str(decision), [r.strip() for r in reasons or []], citations


def _tool_call(response: ModelResponse, request: ModelRequest) -> tuple[ToolUseBlock | None, str]:
    """The turn's one complete ``record_triage`` call, or None with the problem: no complete call
    (a refusal), or complete calls with different inputs (contradictory: none is read)."""
    calls = complete_uses(response, request, TOOL_NAME)
    if not calls:
        return None, f"the model stopped with {response.stop_reason} before answering"
    distinct = {json.dumps(c.input, sort_keys=True, default=str) for c in calls}
    if len(distinct) > 1:
        decisions = ", ".join(str(c.input.get("decision")) for c in calls)
        return None, (f"{len(calls)} {TOOL_NAME} calls with different answers in one turn ({decisions}): none is "
                      f"read; answer with exactly one {TOOL_NAME} call")
    return calls[0], ""


def _correction(request: ModelRequest, response: ModelResponse, call: ToolUseBlock | None,
                problem: str) -> ModelRequest:
    """The request extended with the model's turn as received (thinking blocks included; a block cut by
    a ``max_tokens`` or context-window stop left out, :func:`longdoc.core.messages.complete_blocks`) and the
    harness's answer to it: an ``is_error`` ``tool_result`` for every ``tool_use`` of the turn,
    first in the user turn (the Messages API rule: each ``tool_use`` has its ``tool_result`` in
    the next message, https://platform.claude.com/docs/en/agents-and-tools/tool-use/implement-tool-use).
    The call that was verified (``call``) gets ``problem``; a further ``record_triage`` call is told
    only one is read (an identical repeat); with ``call`` None (contradictory calls) every
    ``record_triage`` call gets ``problem``; any other name is an unknown tool.
    Raises :class:`~longdoc.core.errors.ConversationMalformed` if the result breaks the rules."""
    blocks = complete_blocks(response)
    assistant = Message(role="assistant", content=[b.model_dump() for b in blocks])
    results: list[dict[str, Any]] = []
    for block in blocks:
        if not isinstance(block, ToolUseBlock):
            continue
        if (call is not None and block.id == call.id) or (call is None and block.name == TOOL_NAME):
            text = f"Rejected, correct and call {TOOL_NAME} again:\n{problem}"
        elif block.name == TOOL_NAME:
            text = f"Not read: it repeats the {TOOL_NAME} call before it; answer with one call."
        else:
            text = f"unknown tool {block.name!r}; answer with one {TOOL_NAME} call."
        results.append({"type": "tool_result", "tool_use_id": block.id, "is_error": True, "content": text})
    reply = Message(role="user", content=results or f"Answer with one {TOOL_NAME} tool call. {problem}".strip())
    corrected = request.model_copy(update={"messages": [*request.messages, assistant, reply]})
    check_conversation(corrected.messages, "triage correction")
    return corrected


def run_model(model: Model, request: ModelRequest, clauses: list[Clause],
              max_corrections: int = MAX_CORRECTIONS) -> Answer:
    """Ask ``model`` for one ``record_triage`` call, verify it, and ask for corrections when it fails.

    Each answer is asked for with :func:`longdoc.core.tool_answer.ask_for_tool` (``tool_choice``
    auto: one re-ask when no ``record_triage`` call comes back). Returns the verified answer;
    after ``max_corrections`` rejected corrections (or a refusal) returns ``refer`` with
    ``verified: false`` and the last problem as its reason. Raises
    :class:`~longdoc.core.errors.ModelAnswerMissing` when no call comes back after the re-ask;
    model errors (:class:`~longdoc.core.errors.ModelThrottled` ...) propagate.
    """
    usage = Usage()
    problem = ""
    cut = 0
    for attempt in range(max_corrections + 1):
        answer = ask_for_tool(model, request, TOOL_NAME, "triage")
        usage = usage.add(answer.usage)
        cut += answer.cut_blocks
        request, response = answer.request, answer.response
        call, problem = _tool_call(response, request)
        if call is None and response.stop_reason == "refusal":  # ask_for_tool returns without a call only then
            break
        if call is None:  # contradictory calls: sent back, counted as a rejected answer
            request = _correction(request, response, None, problem)
            continue
        try:
            decision, reasons, citations = verify(call.input, clauses)
        except AnswerRejected as exc:
            problem = str(exc)
            request = _correction(request, response, call, problem)
            continue
        return Answer(decision, reasons, citations, model.name, corrections=attempt, usage=usage, cut_blocks=cut)
    return Answer("refer", [f"no verified answer: {problem.splitlines()[0] if problem else 'unknown'}"], [],
                  model.name, verified=False, corrections=max_corrections, usage=usage, cut_blocks=cut)


def baseline_answer() -> Answer:
    """The offline answer: ``refer`` and no citations; the ranked clauses travel beside it, labelled."""
    return Answer("refer", ["offline baseline: no model was called and no decision is made; "
                            "the ranked clauses of the wording in force are listed for a handler"],
                  [], BASELINE_LABEL, baseline=True)
