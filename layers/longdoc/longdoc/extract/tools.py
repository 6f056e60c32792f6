"""The extraction session's tools, one object each: definition, screening and handling, in one registry.

Each tool the model is offered (``extract_clause``, ``record_not_found``, ``search_chunks``) is
a :class:`SessionTool`: its ``definition`` (the JSON Schema tool sent to the model), its
``screen`` (the checks run before the harness proper, :mod:`longdoc.extract.search_calls`) and its
``handle`` (what the call does to the session and what it answers). :data:`TOOLS` holds them
by name; a tool call is routed by one lookup (:func:`tool_for`), and a name not in it goes to
:data:`UNKNOWN_TOOL`, which answers ``unknown tool '<name>'`` (never a clause type check: the
call is not one of ours). :func:`input_problems` checks a call's input against its schema.

The list is the same in every session and on every transport (synchronous loop, batch rounds),
in the order of :data:`TOOLS`, so the cached prefix stays byte-identical
(:func:`tool_definitions`).
"""

from __future__ import annotations

from typing import Any

from longdoc.core.messages import ToolUseBlock
from longdoc.core.schema import schema_problems
from longdoc.core.records import Confidence, Extraction, NotFoundEvidence
from longdoc.extract.context import page, session_retriever
from longdoc.extract.confidence import Rankings, found_confidence, not_found_confidence
from longdoc.extract.harness import ToolOutcome, apply_extraction, extract_outcome, not_found_outcome
from longdoc.extract.prompt import (CACHE_BREAKPOINT, EXTRACT_TOOL, MAX_QUERY_CHARS, MAX_SEARCH_TOP_K, NOT_FOUND_TOOL,
                                    SEARCH_TOOL, render_next_page)
from longdoc.extract.search_calls import run_search, screen_not_found, unseen_citation
from longdoc.extract.session_types import Deps, Session, SessionOptions

_CITATION = {
    "type": "object",
    "properties": {
        "chunk_id": {"type": "string", "description": "id of the chunk the quote is copied from"},
        "page": {"type": ["integer", "null"], "description": "page the quote is on (null if the document has no pages)"},
        "quote": {"type": "string", "minLength": 1, "description": "verbatim text from the chunk"},
    },
    "required": ["chunk_id", "page", "quote"],
    "additionalProperties": False,
}
"""One citation of ``extract_clause`` (JSON Schema): ``chunk_id``, ``page`` and ``quote``, all required."""


class SessionTool:
    """One tool of the extraction session: ``name``, :meth:`definition`, :meth:`screen` and :meth:`handle`.

    :meth:`run` is what the session calls for one ``tool_use`` block of this tool.
    """

    name: str = ""

    def definition(self) -> dict[str, Any]:
        """The tool as sent to the model (name, description, JSON Schema ``input_schema``; not strict)."""
        raise NotImplementedError

    def screen(self, s: Session, block: ToolUseBlock,
               options: SessionOptions) -> tuple[str | None, NotFoundEvidence | None]:
        """Checks run before the harness proper: ``(rejection text or None, not_found evidence or None)``."""
        return None, None

    def handle(self, deps: Deps, s: Session, block: ToolUseBlock, model: str,
               options: SessionOptions) -> tuple[str, bool]:
        """Run one call on the session; returns ``(tool_result text, is_error)`` (never raises)."""
        raise NotImplementedError

    def run(self, deps: Deps, s: Session, block: ToolUseBlock, model: str, options: SessionOptions) -> dict[str, Any]:
        """The ``tool_result`` block answering ``block`` (:meth:`handle`'s text and error flag)."""
        text, is_error = self.handle(deps, s, block, model, options)
        return {"type": "tool_result", "tool_use_id": block.id, "content": text, "is_error": is_error}


class _ClauseTool(SessionTool):
    """A tool that resolves a clause type through the harness (:mod:`longdoc.extract.harness`).

    :meth:`handle` screens the call, asks the harness (:meth:`decide`), then acts on its
    :class:`~longdoc.extract.harness.ToolOutcome`: stores the extraction, closes a clause type
    or appends its next page. ``counts_rejection``: a screening rejection counts as a rejected
    citation.
    """

    counts_rejection = False

    def decide(self, s: Session, block: ToolUseBlock, model: str) -> ToolOutcome:
        """The harness's outcome for this call (``s`` is only read)."""
        raise NotImplementedError

    def handle(self, deps: Deps, s: Session, block: ToolUseBlock, model: str,
               options: SessionOptions) -> tuple[str, bool]:
        """Screen, decide, and act on the outcome; returns ``(tool_result text, is_error)``."""
        rejection, evidence = self.screen(s, block, options)
        clause = block.input.get("clause_type")
        if rejection is not None:
            s.rejected += self.counts_rejection
            if self.counts_rejection and isinstance(clause, str):
                s.rejections[clause] = s.rejections.get(clause, 0) + 1
            return rejection, True
        outcome = self.decide(s, block, model)
        s.rejected += outcome.rejected_citation
        if outcome.rejected_citation and isinstance(clause, str):
            s.rejections[clause] = s.rejections.get(clause, 0) + 1
        text = outcome.text
        if outcome.extraction is not None:
            extra: dict[str, Any] = {"evidence": evidence} if outcome.extraction.status == "not_found" else {}
            extra["confidence"] = confidence(deps, s, block, outcome.extraction, evidence)
            store(deps, s, outcome.extraction.model_copy(update=extra))
        if outcome.close:
            close(deps, s, outcome.close, "the model found no further occurrence")
        if outcome.next_page:
            text = text + "\n" + next_page(deps, s, outcome.next_page)
        return text, outcome.is_error


class ExtractTool(_ClauseTool):
    """``extract_clause``: one verified occurrence of a clause type, with verbatim citations.

    ``citations`` has ``minItems: 1``, each item requiring ``chunk_id``, ``page`` and ``quote``;
    ``more_instances`` (optional boolean) asks for the next page of retrieved chunks for that
    clause type. A citation of a chunk the session was not shown is rejected before the harness
    (:func:`~longdoc.extract.search_calls.unseen_citation`) and counted as a rejected citation.
    """

    name = EXTRACT_TOOL
    counts_rejection = True

    def definition(self) -> dict[str, Any]:
        """The ``extract_clause`` tool (JSON Schema input)."""
        return {
            "name": EXTRACT_TOOL,
            "description": "Record a clause that is present in the document, with verbatim citations.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "clause_type": {"type": "string", "description": "one pending clause type, spelled as in the task"},
                    "clause_text": {"type": "string", "minLength": 1},
                    "citations": {"type": "array", "minItems": 1, "items": _CITATION},
                    "more_instances": {
                        "type": "boolean",
                        "description": "true if the document may hold another, separate occurrence of this clause type",
                    },
                },
                "required": ["clause_type", "clause_text", "citations"],
                "additionalProperties": False,
            },
        }

    def screen(self, s: Session, block: ToolUseBlock,
               options: SessionOptions) -> tuple[str | None, NotFoundEvidence | None]:
        """Reject a citation of a chunk never shown to the session."""
        return unseen_citation(s, block), None

    def decide(self, s: Session, block: ToolUseBlock, model: str) -> ToolOutcome:
        """Verify the call (:func:`~longdoc.extract.harness.extract_outcome`)."""
        return extract_outcome(block, s.facts, s.chunks, model, s.number)


class NotFoundTool(_ClauseTool):
    """``record_not_found``: a clause type is absent, or an open multi-instance one has no further occurrence.

    It takes no citations; it carries its evidence (``queries`` searched, ``chunk_ids``
    examined), checked against the evidence rule before the harness
    (:func:`~longdoc.extract.search_calls.screen_not_found`) and stored on the extraction.
    """

    name = NOT_FOUND_TOOL

    def definition(self) -> dict[str, Any]:
        """The ``record_not_found`` tool (JSON Schema input)."""
        return {
            "name": NOT_FOUND_TOOL,
            "description": "Record that a clause type is not in the document, or that no further occurrence exists "
            "of a clause type whose occurrences are already recorded (no citations). Name the search_chunks "
            "queries you ran for it and the chunk ids you examined.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "clause_type": {"type": "string"},
                    "reason": {"type": "string", "description": "why the retrieved chunks do not contain it"},
                    "queries": {"type": "array", "items": {"type": "string"},
                                "description": "the search_chunks queries you ran for this clause type"},
                    "chunk_ids": {"type": "array", "items": {"type": "string"},
                                  "description": "ids of the chunks you examined for it"},
                },
                "required": ["clause_type"],
                "additionalProperties": False,
            },
        }

    def screen(self, s: Session, block: ToolUseBlock,
               options: SessionOptions) -> tuple[str | None, NotFoundEvidence | None]:
        """The evidence rule (:func:`~longdoc.extract.search_calls.screen_not_found`)."""
        return screen_not_found(s, block, options)

    def decide(self, s: Session, block: ToolUseBlock, model: str) -> ToolOutcome:
        """Record ``not_found`` or close the clause type (:func:`~longdoc.extract.harness.not_found_outcome`)."""
        return not_found_outcome(block, s.facts, model, s.number)


class SearchTool(SessionTool):
    """``search_chunks``: the model's own search of the document (:func:`~longdoc.extract.search_calls.run_search`).

    ``query`` of at most :data:`~longdoc.extract.prompt.MAX_QUERY_CHARS` characters, ``top_k``
    1-:data:`~longdoc.extract.prompt.MAX_SEARCH_TOP_K` (default 5), optional ``clause_type``.
    Its definition carries the prefix's cache breakpoint (it is the last tool).
    """

    name = SEARCH_TOOL

    def definition(self) -> dict[str, Any]:
        """The ``search_chunks`` tool (JSON Schema input, with the prefix's ``cache_control``)."""
        return {
            "name": SEARCH_TOOL,
            "description": "Search this document's chunks with your own words when the chunks you were given do "
            "not hold a clause type; answers with chunks not shown to you yet (citable like the others).",
            "input_schema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS,
                              "description": "wording the clause may use in this document"},
                    "top_k": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_TOP_K,
                              "description": "how many chunks to return (default 5)"},
                    "clause_type": {"type": "string", "description": "the pending clause type searched for"},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
            "cache_control": dict(CACHE_BREAKPOINT),
        }

    def handle(self, deps: Deps, s: Session, block: ToolUseBlock, model: str,
               options: SessionOptions) -> tuple[str, bool]:
        """Run the search on the session's retriever; records it and adds its chunks to the shown set."""
        return run_search(deps, s, block, options)


class UnknownTool(SessionTool):
    """Any tool name not in :data:`TOOLS`: answers ``unknown tool '<name>'`` (``is_error``), whatever
    its input holds (a clause type or not), and changes nothing on the session.

    Never offered to the model (no definition).
    """

    def definition(self) -> dict[str, Any]:
        """Not offered: raises ``LookupError``."""
        raise LookupError("the unknown tool has no definition")

    def handle(self, deps: Deps, s: Session, block: ToolUseBlock, model: str,
               options: SessionOptions) -> tuple[str, bool]:
        """The error naming the tool and the tools there are."""
        return f"unknown tool {block.name!r}; the tools are: {', '.join(TOOLS)}", True


TOOLS: dict[str, SessionTool] = {tool.name: tool for tool in (ExtractTool(), NotFoundTool(), SearchTool())}
"""The session's tools by name, in the order they are sent."""

UNKNOWN_TOOL = UnknownTool()
"""Where a call of a name not in :data:`TOOLS` goes."""


def tool_for(name: str) -> SessionTool:
    """The tool object a ``tool_use`` block's ``name`` is routed to (:data:`UNKNOWN_TOOL` when not offered)."""
    return TOOLS.get(name, UNKNOWN_TOOL)


def input_problems(block: ToolUseBlock) -> list[str]:
    """What keeps ``block``'s input from validating against its tool's ``input_schema``
    (:func:`longdoc.core.schema.schema_problems`: required fields missing, wrong types, unexpected
    fields, too few items); ``[]`` when it validates or the tool is not one of :data:`TOOLS`
    (nothing to check against). Length and range bounds are left to the harness, as in strict
    mode (a complete call with a bad value is answered with an error, not dropped as cut).
    Whether a call was cut is never read from this: only the stop reason tells
    (:func:`longdoc.core.messages.cut_block`)."""
    tool = TOOLS.get(block.name)
    return [] if tool is None else schema_problems(block.input, _strict(tool.definition())["input_schema"])


def run_tool(deps: Deps, s: Session, block: ToolUseBlock, model: str, options: SessionOptions) -> dict[str, Any]:
    """Run one tool call through its object and return the ``tool_result`` block (never raises for the call)."""
    return tool_for(block.name).run(deps, s, block, model, options)


def tool_definitions(strict: bool = False) -> list[dict]:
    """Return the session's tools as sent (JSON Schema input), in :data:`TOOLS` order, citations required on extract.

    The last tool carries the prefix's cache breakpoint; the list is the same in every
    session, so the prefix stays byte-identical.

    ``strict=True`` adds ``"strict": true`` to each tool (grammar-constrained tool inputs,
    https://docs.claude.com/en/docs/agents-and-tools/tool-use/strict-tool-use) and drops
    ``minLength``/``maxLength``/``minimum``/``maximum``, which the strict JSON Schema subset does not support (``minItems`` 0/1,
    ``required`` and ``additionalProperties: false`` are supported); the harness checks
    non-empty strings itself. Strict mode works with ``tool_choice: auto``.
    """
    tools = [tool.definition() for tool in TOOLS.values()]
    if strict:
        tools = [_strict(tool) for tool in tools]
    return tools


_NOT_STRICT = frozenset({"minLength", "maxLength", "minimum", "maximum"})
"""Schema keywords left out in strict mode (the harness checks them itself)."""


def _strict(node: dict) -> dict:
    """Copy a tool (or schema node) for strict mode: ``strict: true`` on the tool, no length or range bounds."""
    out = {k: (_strict(v) if isinstance(v, dict) else v) for k, v in node.items() if k not in _NOT_STRICT}
    if "input_schema" in node:
        out["strict"] = True
    return out


# --- what the clause tools do to the session -------------------------------------------------


def confidence(deps: Deps, s: Session, block: ToolUseBlock, extraction: Extraction,
               evidence: NotFoundEvidence | None) -> Confidence:
    """The evidence score of a verified extraction or ``not_found`` (:mod:`longdoc.extract.confidence`),
    from the session's retrieval (no new embedding or index query) and its rejected calls."""
    clause = deps.catalogue.resolve(extraction.clause_type)
    rankings = Rankings(session_retriever(deps, s), clause, s.run.top_k)
    if extraction.status == "found":
        raw = [c.get("quote", "") if isinstance(c, dict) else "" for c in block.input.get("citations") or []]
        return found_confidence(extraction.citations, raw, s.chunks, clause, rankings,
                                s.rejections.get(extraction.clause_type, 0))
    return not_found_confidence(clause, s.chunks, rankings, s.shown or set(), evidence, s.facts.searches)


def store(deps: Deps, s: Session, extraction: Extraction) -> None:
    """Store a verified extraction (idempotent by its key) and apply it to CASE_FACTS."""
    deps.state.put_extraction(s.run.run_id, extraction, s.fence)
    apply_extraction(s.facts, extraction, s.chunks)
    s.last[extraction.clause_type] = extraction


def close(deps: Deps, s: Session, clause: str, why: str) -> None:
    """Close an open multi-instance clause type: re-store its last instance as final (idempotent)."""
    final = s.last[clause].model_copy(update={"final": True})
    deps.state.put_extraction(s.run.run_id, final, s.fence)
    apply_extraction(s.facts, final, s.chunks)
    s.facts.decisions.append(f"{clause}: no further occurrence ({why})")


def next_page(deps: Deps, s: Session, clause: str) -> str:
    """Advance ``clause``'s retrieval cursor and render that page for the tool result (closing it when empty)."""
    number = s.facts.retrieval_pages.get(clause, 0) + 1
    s.facts.retrieval_pages[clause] = number
    more = page(deps, s.run, deps.catalogue.resolve(clause), number, s.chunks, session_retriever(deps, s))
    s.shown = (s.shown or set()) | {c.chunk_id for c in more}
    if not more:
        close(deps, s, clause, "retrieval exhausted")
    return render_next_page(clause, more)
