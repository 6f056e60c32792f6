"""One summary call and its correction round: ask, check every statement, send failures back once, drop the rest.

Map and reduce calls answer with ``record_summary`` tool calls; the final synthesis is
streamed text (``- statement [3.2]`` lines) whose failing lines are corrected through the
same tool. Corrections are positional: the model returns one statement per failed one, in
order, an empty text withdrawing it; a correction that still fails, or is withdrawn or
missing, is dropped and reported, never stored as verified.

No request replays a thinking block behind a changed prefix. A returned thinking block is
checked against everything before it (top-level ``system``, ``tools`` and the earlier
``messages``); when that changed, the block is invalid: a 400, or dropped (enforced by default
for accounts created on or after 31 August 2026,
https://platform.claude.com/docs/en/build-with-claude/preserved-thinking). So:

* a map or reduce correction extends the request that got the answer (same ``system``, same
  ``tools``, the messages only appended to) and carries the reply's blocks as received,
  thinking included: it must, since the reply ends in ``tool_use`` and the next turn holds its
  ``tool_result`` (thinking goes back with tool results;
  https://platform.claude.com/docs/en/build-with-claude/context-windows);
* the final synthesis is streamed with no tools (a text answer), and its correction has to add
  ``record_summary``: a changed prefix. Its correction therefore replays the reply as its
  visible text only (thinking and any other block left out: a text turn followed by a new user
  turn need not carry its thinking, which the API strips from earlier turns anyway) and quotes
  the failed statements in the user turn after it. The other way, giving the final request
  the tool too, was not taken: the model could then answer the final in a tool call instead of
  the streamed text the reader watches, and the tool's own description says to answer through it.

A reply cut by a ``max_tokens`` or ``model_context_window_exceeded`` stop never passes its last
block on (:func:`longdoc.core.messages.cut_block`, the rule of every job that reads a reply): a
map or reduce answer's cut ``record_summary`` call is never read (the call is asked again with more
room, :func:`longdoc.core.tool_answer.ask_for_tool`) and never replayed in a correction turn; the
final synthesis, one streamed text block, loses its last line, the statement the limit stopped in
(never checked, stored or sent for correction; listed in ``dropped`` with the stop reason), its
complete lines before it checked as usual. Every cut is counted (:attr:`Outcome.cut_blocks`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from longdoc.core.conversation import check_conversation
from longdoc.core.errors import ConversationMalformed, ModelAnswerMissing, ModelRefused, StatementError
from longdoc.core.messages import (Message, ModelRequest, ModelResponse, TextBlock, ToolUseBlock, Usage,
                                   complete_blocks, cut_block)
from longdoc.core.ports import Model, StreamingModel
from longdoc.core.tool_answer import ask_for_tool, complete_uses
from longdoc.core.values import exact_values
from longdoc.summarize.checks import check_statement, resolve_cite
from longdoc.summarize.models import Dropped, ExactValue, Statement, ValueKind
from longdoc.summarize.prompt import SUMMARY_TOOL, correction_text, parse_lines, summary_tools
from longdoc.summarize.units import Piece, SectionIndex

Raw = tuple[str, list[str]]
"""A statement as the model wrote it: text and the section ids it cited."""


@dataclass
class Checker:
    """What one call is checked against: the document's pieces, the ids it was given, the known terms."""

    index: SectionIndex
    given: Collection[str]
    terms: set[str] = field(default_factory=set)
    prefer_chunks: Collection[str] = ()

    def split(self, raw: Iterable[Raw]) -> tuple[list[Statement], list[tuple[Raw, str]]]:
        """Verified statements, and the failures with their reasons (duplicates of a verified text skipped)."""
        ok: list[Statement] = []
        failed: list[tuple[Raw, str]] = []
        for text, sections in raw:
            text = " ".join(text.split())
            try:
                cites = check_statement(text, sections, self.given, self.index, self.terms, self.prefer_chunks)
            except StatementError as exc:
                failed.append(((text, sections), str(exc)))
                continue
            if all(s.text != text for s in ok):
                ok.append(Statement(text=text, citations=cites))
        return ok, failed


@dataclass
class Outcome:
    """What one call produced: verified statements and values, dropped statements, usage and request counts;
    ``cut_blocks`` counts reply blocks cut by a ``max_tokens`` or context-window stop (never read)."""

    statements: list[Statement] = field(default_factory=list)
    values: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    calls: int = 0
    corrections: int = 0
    model: str = ""
    text: str = ""
    cut_blocks: int = 0

    def add(self, response: ModelResponse) -> None:
        """Count one model response."""
        self.usage = self.usage.add(response.usage)
        self.calls += 1
        self.model = response.model


class Meter:
    """A :class:`~longdoc.core.ports.StreamingModel` that adds up the usage of every reply it returns.

    A step runs its calls through one, so when a follow-up call fails (a correction or re-ask
    answered by a non-JSON 200: ``ModelUnavailable``, the step retried) the replies already
    billed are still known (``usage``, tokens) and can be recorded
    (:func:`longdoc.summarize.store.add_spent`). Errors of the wrapped model propagate unchanged.
    """

    def __init__(self, model: StreamingModel) -> None:
        self.model = model
        self.name = model.name
        self.usage = Usage()

    def create(self, request: ModelRequest) -> ModelResponse:
        """The wrapped model's reply, its usage counted."""
        response = self.model.create(request)
        self.usage = self.usage.add(response.usage)
        return response

    def stream(self, request: ModelRequest, on_text: Callable[[str], None]) -> ModelResponse:
        """The wrapped model's streamed reply, its usage counted."""
        response = self.model.stream(request, on_text)
        self.usage = self.usage.add(response.usage)
        return response


def _tool_inputs(response: ModelResponse, request: ModelRequest) -> list[dict[str, Any]]:
    """The inputs of the reply's complete ``record_summary`` calls (a call cut by ``max_tokens`` is
    never read: :func:`longdoc.core.tool_answer.complete_uses`)."""
    inputs = [b.input for b in complete_uses(response, request, SUMMARY_TOOL)]
    if not inputs and response.stop_reason == "refusal":
        raise ModelRefused("the model refused to summarise this text")
    return inputs


def _raw(inputs: list[dict[str, Any]]) -> list[Raw]:
    out: list[Raw] = []
    for data in inputs:
        for item in data.get("statements") or []:
            if isinstance(item, dict):
                sections = item.get("sections") or []
                out.append((str(item.get("text") or ""), [str(s) for s in sections if isinstance(s, str | int)]))
    return out


def _correct(model: Model, request: ModelRequest, turn: list[Message], failed: list[tuple[Raw, str]],
             checker: Checker, outcome: Outcome, stage: str) -> None:
    """One correction round for ``failed``; verified corrections join ``outcome``, the rest are dropped.

    The correction is asked for through the tool like the first answer
    (:func:`longdoc.core.tool_answer.ask_for_tool`: one re-ask when no call comes back); when
    none comes back at all, every failed statement is dropped with that reason (reported, never
    stored as verified). A request without tools (the final synthesis) gets ``record_summary``
    here, so ``turn`` must then hold no thinking block (module docstring): raises
    :class:`~longdoc.core.errors.ConversationMalformed` (a harness bug) when it does.
    """
    if not request.tools and any(isinstance(m.content, list) and any(
            isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking") for b in m.content)
            for m in turn):
        raise ConversationMalformed(f"summary {stage}: correction: a request that adds tools must not replay "
                                    "thinking blocks (their prefix changed)")
    retry = request.model_copy(update={"messages": [*request.messages, *turn],
                                       "tools": request.tools or summary_tools(), "tool_choice": {"type": "auto"}})
    check_conversation(retry.messages, f"summary {stage}: correction")
    try:
        answer = ask_for_tool(model, retry, SUMMARY_TOOL, f"summary {stage} correction")
    except ModelAnswerMissing as exc:
        outcome.corrections += 1
        outcome.dropped += [Dropped(text=t, sections=s, reason=f"{r}; no correction came back ({exc})", stage=stage)
                            for (t, s), r in failed]
        return
    for response in answer.responses:
        outcome.add(response)
    outcome.cut_blocks += answer.cut_blocks
    outcome.corrections += 1
    corrected = _raw(_tool_inputs(answer.response, answer.request))
    for i, ((text, sections), reason) in enumerate(failed):
        if i >= len(corrected) or not corrected[i][0].strip():
            outcome.dropped.append(Dropped(text=text, sections=sections, reason=f"{reason}; withdrawn in the "
                                           "correction", stage=stage))
            continue
        ok, still = checker.split([corrected[i]])
        fresh = [s for s in ok if all(s.text != o.text for o in outcome.statements)]
        outcome.statements += fresh
        if ok and not fresh:  # the correction only repeated a statement already kept: report the failed one
            outcome.dropped.append(Dropped(text=text, sections=sections, reason=f"{reason}; the correction "
                                           "repeated a statement already kept", stage=stage))
        outcome.dropped += [Dropped(text=t, sections=s, reason=f"still failing after a correction: {r}", stage=stage)
                            for (t, s), r in still]


def tool_call(model: Model, request: ModelRequest, checker: Checker, stage: str) -> Outcome:
    """A map or reduce call: statements through the tool, checked, failures corrected once.

    The answer is asked for with :func:`longdoc.core.tool_answer.ask_for_tool` (``tool_choice``
    auto; one re-ask when no ``record_summary`` call comes back). The correction turn answers
    every ``tool_use`` of the reply (the first with the failures, the others ``recorded``) before
    anything else, and carries the reply's blocks as received, thinking included, minus a block cut
    by a ``max_tokens`` or context-window stop (:func:`longdoc.core.messages.complete_blocks`).
    Raises :class:`~longdoc.core.errors.ModelAnswerMissing` when no call comes back after the
    re-ask, :class:`~longdoc.core.errors.ModelRefused` on a refusal.
    """
    outcome = Outcome()
    answer = ask_for_tool(model, request, SUMMARY_TOOL, f"summary {stage}")
    for reply in answer.responses:
        outcome.add(reply)
    outcome.cut_blocks += answer.cut_blocks
    request, response = answer.request, answer.response
    inputs = _tool_inputs(response, request)
    outcome.values = [v for data in inputs for v in (data.get("exact_values") or []) if isinstance(v, dict)]
    outcome.statements, failed = checker.split(_raw(inputs))
    if failed:
        kept = complete_blocks(response)
        uses = [b for b in kept if isinstance(b, ToolUseBlock)]
        results: list[dict[str, Any]] = [
            {"type": "tool_result", "tool_use_id": b.id, "is_error": i == 0,
             "content": correction_text([(t, r) for (t, _), r in failed]) + _positional(len(failed))
             if i == 0 else "recorded"} for i, b in enumerate(uses)]
        turn = [Message(role="assistant", content=[b.model_dump() for b in kept]),
                Message(role="user", content=results or correction_text([(t, r) for (t, _), r in failed]))]
        _correct(model, request, turn, failed, checker, outcome, stage)
    return outcome


def _positional(n: int) -> str:
    return (f"\nReturn exactly {n} statement(s), the i-th correcting the i-th above; give an empty text to "
            "withdraw one.")


def streamed_call(model: StreamingModel, request: ModelRequest, checker: Checker,
                  on_text: Callable[[str], None]) -> Outcome:
    """The final synthesis: streamed text (each delta to ``on_text`` as it arrives), parsed into lines, checked, corrected.

    The correction request adds the ``record_summary`` tool to a request that had none, a
    changed prefix, so its assistant turn is the reply's visible text only (``(no text)`` when
    empty), never its thinking block (module docstring), and the user turn after it quotes the
    failed statements with their reasons. On a ``max_tokens`` or context-window stop the text's
    last line is cut (:func:`_cut_line`): dropped with the stop reason, never checked nor sent back.
    """
    outcome = Outcome()
    response = model.stream(request, on_text)
    outcome.add(response)
    outcome.text = "".join(b.text for b in response.content if isinstance(b, TextBlock))
    if not outcome.text.strip() and response.stop_reason == "refusal":
        raise ModelRefused("the model refused to summarise this text")
    kept, cut = _cut_line(response, outcome.text)
    if cut is not None:
        outcome.cut_blocks += 1
        outcome.dropped += [Dropped(text=t, sections=c, stage="final", reason=f"cut by {response.stop_reason}: "
                                    "the reply stopped inside this line, so it is never checked nor stored")
                            for t, c in parse_lines(cut)]
    outcome.statements, failed = checker.split(parse_lines(kept))
    if failed:
        text = correction_text([(t, r) for (t, _), r in failed]) + _positional(len(failed))
        shown = outcome.text if cut is None else kept
        turn = [Message(role="assistant", content=shown or "(no text)"), Message(role="user", content=text)]
        _correct(model, request, turn, failed, checker, outcome, "final")
    return outcome


def _cut_line(response: ModelResponse, text: str) -> tuple[str, str | None]:
    """``(complete text, cut line)`` of a streamed final: on a stop in
    :data:`~longdoc.core.messages.CUT_STOPS` whose last block is the text, the limit stopped inside
    it, so its last non-blank line is cut, whatever it looks like (a line cut after its ``[3.2]``
    reads as complete); the lines before it closed. Otherwise ``(text, None)``. A cut block that
    is not text (a thinking block after the text) leaves the text whole: ``(text, "")``."""
    cut = cut_block(response)
    if cut is None:
        return text, None
    if not isinstance(cut, TextBlock):
        return text, ""
    head, _, tail = text.rstrip().rpartition("\n")
    return head.rstrip(), tail


def _kind(value: str, declared: Any) -> ValueKind:
    if declared in ("amount", "date", "percentage", "number", "defined_term", "party", "other"):
        return declared
    if "%" in value or "per cent" in value.lower() or "percent" in value.lower():
        return "percentage"
    if any(ch.isdigit() for ch in value) and any(ch.isalpha() for ch in value) and not any(s in value for s in "$€£¥₹"):
        return "date"
    return "amount" if any(ch.isdigit() for ch in value) else "other"


def group_values(declared: list[dict[str, Any]], pieces: list[Piece], index: SectionIndex) -> list[ExactValue]:
    """The group's exact values: every amount, date and percentage its text states (found by
    :func:`longdoc.core.values.exact_values`), then the model's declared values (defined terms, parties, ...)
    that appear verbatim in the section they name. Each value once per section."""
    out: dict[tuple[str, str], ExactValue] = {}
    given = {p.section_id for p in pieces}
    for piece in pieces:
        chunk = index.chunks[piece.chunk_id]
        for value in exact_values(piece.text):
            at = piece.offset + piece.text.find(value)
            out.setdefault((value, piece.section_id), ExactValue(value=value, kind=_kind(value, None),
                                                                 section_id=piece.section_id, page=chunk.page_of(at)))
    for item in declared:
        value, section = str(item.get("value") or "").strip(), resolve_cite(str(item.get("section") or ""), given)
        if not value or section is None or (value, section) in out:
            continue
        hit = next(((p, p.text.find(value)) for p in pieces if p.section_id == section and value in p.text), None)
        if hit is not None:
            page = index.chunks[hit[0].chunk_id].page_of(hit[0].offset + hit[1])
            out[(value, section)] = ExactValue(value=value, kind=_kind(value, item.get("kind")), section_id=section,
                                               page=page)
    return list(out.values())
