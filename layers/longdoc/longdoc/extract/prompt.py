"""Prompt assembly for one extraction session.

Order (Messages API): tools, then system (both static, with ``cache_control`` on the last
tool and the system block so they form the cached prefix), then one user message with the
CASE_FACTS block first, then the retrieved chunks, then the task restated. CASE_FACTS is
rendered from the harness's :class:`~longdoc.core.records.CaseFacts` as JSON, so exact values are
copied byte for byte and never paraphrased.
"""

from __future__ import annotations

import json
import re
from html import escape, unescape

from longdoc.extract.catalogue import ClauseType
from longdoc.core.records import CaseFacts
from longdoc.core.models import Chunk
from longdoc.core.messages import Message, ModelRequest

EXTRACT_TOOL = "extract_clause"
NOT_FOUND_TOOL = "record_not_found"

SYSTEM_PROMPT = """You extract clauses from one long document for an auditor.

Rules:
1. Work only from the retrieved chunks in the user message. Each chunk is fenced as <chunk id="..." pages="..." section="...">...</chunk>.
2. For every pending clause type listed in the task, call a tool:
   - extract_clause when the clause is in the chunks: give clause_text and at least one citation whose quote is copied verbatim (character for character) from the cited chunk, with that chunk's id and the page the quote is on. A clause type may occur several times (e.g. several termination rights): call extract_clause once per separate occurrence, and set more_instances to true while further occurrences may exist; the harness then sends the next retrieved chunks for that clause type.
   - record_not_found when none of the chunks contains the clause, or, for a clause type with occurrences already recorded, when no further occurrence exists. Never guess, never invent text, never cite a chunk that does not contain the quote.
3. CASE_FACTS is maintained by the harness, not by you. Treat it as authoritative: values in exact_values must be reproduced byte for byte, never rounded, reformatted or paraphrased. Clause types listed under resolved are done; do not extract them again.
4. Keep clause_text short: the operative words of the clause, in the document's own words. Quotes should be the smallest verbatim span that supports clause_text; every number, amount and date in clause_text must appear in a quote.
6. A tool result marked as an error says what was wrong with your call (for example a quote that is not verbatim); correct it and call the tool again.
5. When every pending clause type has been handled, stop."""


def tool_definitions(strict: bool = False) -> list[dict]:
    """Return the two extraction tools (JSON Schema input), citations required on extract.

    ``extract_clause.citations`` has ``minItems: 1`` and each item requires ``chunk_id``,
    ``page`` and ``quote``; ``record_not_found`` takes no citations at all.
    ``extract_clause.more_instances`` (optional boolean) asks the harness for the next page
    of retrieved chunks for that clause type.

    ``strict=True`` adds ``"strict": true`` to each tool (grammar-constrained tool inputs,
    https://docs.claude.com/en/docs/agents-and-tools/tool-use/strict-tool-use) and drops
    ``minLength``, which the strict JSON Schema subset does not support (``minItems`` 0/1,
    ``required`` and ``additionalProperties: false`` are supported); the harness checks
    non-empty strings itself. Strict mode works with ``tool_choice: auto``.
    """
    citation = {
        "type": "object",
        "properties": {
            "chunk_id": {"type": "string", "description": "id of the chunk the quote is copied from"},
            "page": {"type": ["integer", "null"], "description": "page the quote is on (null if the document has no pages)"},
            "quote": {"type": "string", "minLength": 1, "description": "verbatim text from the chunk"},
        },
        "required": ["chunk_id", "page", "quote"],
        "additionalProperties": False,
    }
    tools = [
        {
            "name": EXTRACT_TOOL,
            "description": "Record a clause that is present in the document, with verbatim citations.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "clause_type": {"type": "string", "description": "one pending clause type, spelled as in the task"},
                    "clause_text": {"type": "string", "minLength": 1},
                    "citations": {"type": "array", "minItems": 1, "items": citation},
                    "more_instances": {
                        "type": "boolean",
                        "description": "true if the document may hold another, separate occurrence of this clause type",
                    },
                },
                "required": ["clause_type", "clause_text", "citations"],
                "additionalProperties": False,
            },
        },
        {
            "name": NOT_FOUND_TOOL,
            "description": "Record that a clause type is not in the document, or that no further occurrence exists "
            "of a clause type whose occurrences are already recorded (no citations).",
            "input_schema": {
                "type": "object",
                "properties": {
                    "clause_type": {"type": "string"},
                    "reason": {"type": "string", "description": "why the retrieved chunks do not contain it"},
                },
                "required": ["clause_type"],
                "additionalProperties": False,
            },
            "cache_control": {"type": "ephemeral"},
        },
    ]
    if strict:
        tools = [_strict(tool) for tool in tools]
    return tools


def _strict(node: dict) -> dict:
    """Copy a tool (or schema node) for strict mode: ``strict: true`` on the tool, no ``minLength``."""
    out = {k: (_strict(v) if isinstance(v, dict) else v) for k, v in node.items() if k != "minLength"}
    if "input_schema" in node:
        out["strict"] = True
    return out


def render_case_facts(facts: CaseFacts) -> str:
    """Render CASE_FACTS as a fenced JSON block (keys in schema order, values verbatim)."""
    body = facts.model_dump(mode="json")
    body["pending"] = facts.pending
    return "<CASE_FACTS>\n" + json.dumps(body, indent=1, ensure_ascii=False) + "\n</CASE_FACTS>"


def _pages(chunk: Chunk) -> str:
    if chunk.page_start is None:
        return "n/a"
    if chunk.page_start == chunk.page_end:
        return str(chunk.page_start)
    return f"{chunk.page_start}-{chunk.page_end}"


def render_chunk(chunk: Chunk) -> str:
    """Fence one chunk with its id, page range, section and heading path (text verbatim)."""
    attrs = (
        f'id="{escape(chunk.chunk_id)}" pages="{_pages(chunk)}" '
        f'section="{escape(chunk.section_id or "")}" heading="{escape(" > ".join(chunk.heading_path))}"'
    )
    return f"<chunk {attrs}>\n{chunk.text}\n</chunk>"


def build_request(
    facts: CaseFacts, pending: list[ClauseType], chunks: list[Chunk], max_tokens: int, *, strict: bool = False
) -> ModelRequest:
    """Assemble one session's request: static prefix, CASE_FACTS, chunks, then the task.

    ``strict`` selects strict tool schemas (see :func:`tool_definitions`).
    """
    definitions = [
        {"name": c.name, "description": c.description, "hints": c.hints, "answer_kind": c.answer_kind}
        for c in pending
    ]
    task = (
        "<task>\nPending clause types (handle each, in this order):\n"
        + json.dumps(definitions, indent=1, ensure_ascii=False)
        + "\nCall extract_clause or record_not_found for each. Quote verbatim; cite the chunk id"
        " and the page the quote is on.\n</task>"
    )
    content = "\n\n".join(
        [render_case_facts(facts), "<retrieved_chunks>", *map(render_chunk, chunks), "</retrieved_chunks>", task]
    )
    return ModelRequest(
        system=[{"type": "text", "text": SYSTEM_PROMPT, "cache_control": {"type": "ephemeral"}}],
        tools=tool_definitions(strict),
        messages=[Message(role="user", content=content)],
        max_tokens=max_tokens,
    )


_CHUNK_RE = re.compile(r'<chunk id="([^"]*)" pages="([^"]*)" section="([^"]*)" heading="[^"]*">\n(.*?)\n</chunk>', re.S)


def parse_prompt(content: str) -> tuple[dict, list[tuple[str, str, str]], list[dict]]:
    """Read back a rendered prompt: ``(case_facts, [(chunk_id, pages, text)], clause definitions)``.

    Used by the offline baseline model, which sees only what Claude would see.
    Raises ValueError when a part is missing.
    """
    facts = re.search(r"<CASE_FACTS>\n(.*?)\n</CASE_FACTS>", content, re.S)
    task = re.search(r"<task>\nPending clause types[^\n]*\n(.*?)\nCall extract_clause", content, re.S)
    if not facts or not task:
        raise ValueError("prompt lacks CASE_FACTS or task block")
    chunks = [(unescape(m.group(1)), m.group(2), m.group(4)) for m in _CHUNK_RE.finditer(content)]
    return json.loads(facts.group(1)), chunks, json.loads(task.group(1))


def render_next_page(clause_type: str, chunks: list[Chunk]) -> str:
    """Tool-result text carrying the next page of retrieved chunks for one clause type."""
    if not chunks:
        return f"no further retrieved chunks for {clause_type}; it is closed with the occurrences recorded"
    body = "\n\n".join(map(render_chunk, chunks))
    return (f"next retrieved chunks for {clause_type} (extract further occurrences, or call "
            f"record_not_found if there is none):\n<retrieved_chunks>\n{body}\n</retrieved_chunks>")


def prefix_tokens(request: ModelRequest) -> int:
    """Estimated tokens of the cached prefix (tools + system), see :mod:`longdoc.core.tokens`."""
    from longdoc.core.tokens import estimate_tokens

    return estimate_tokens(json.dumps(request.tools) + json.dumps(request.system))
