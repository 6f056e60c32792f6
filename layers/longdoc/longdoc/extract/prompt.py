"""Prompt assembly for one extraction session.

Order (Messages API): tools, then system (both static, with ``cache_control`` on the last
tool and the system block so they form the cached prefix, byte-identical in every session;
the system text is :func:`longdoc.extract.guide.system_prompt`), then one user message of two
text blocks laid out so that a run's later sessions read most of their input from the prompt
cache (issue 25, docs/decisions.md "A prompt layout that caches"):

1. the stable CASE_FACTS (what never changes during a run: run id, document id and version,
   clause types, the run's own exact values) then the run's stable chunk context (the same
   chunks in the same order in every session, :func:`longdoc.extract.context.session_chunks`),
   ending on the third cache breakpoint;
2. what the session changes: chunks only this session is shown (later retrieval pages, earlier
   sessions' search results), the CASE_FACTS progress block (resolved, pending, searched,
   decisions, exact values pinned from verified quotes), then the task restated.

CASE_FACTS is rendered from the harness's :class:`~longdoc.core.records.CaseFacts` as JSON, so
exact values are copied byte for byte and never paraphrased, and the run's own exact values come
ahead of every chunk.

Fencing: every part of the user message is fenced with tags ending in one code,
``<chunk-3f9a0c1b2d4e ...>`` ... ``</chunk-3f9a0c1b2d4e>``, derived from a hash of the
content and checked to occur in none of it (:func:`fence_code`), so no document text can
close a chunk or open a task; the system prompt says chunk content is data, never
instructions, and the offline baseline reads only tags carrying the code
(:func:`parse_prompt`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from html import escape, unescape

from longdoc.extract.catalogue import ClauseType
from longdoc.core.records import CaseFacts
from longdoc.core.models import Chunk
from longdoc.core.messages import Message, ModelRequest
from longdoc.extract.guide import system_prompt

EXTRACT_TOOL = "extract_clause"
NOT_FOUND_TOOL = "record_not_found"
SEARCH_TOOL = "search_chunks"
"""The session's tool names; each tool's definition, screening and handling is one object in
:data:`longdoc.extract.tools.TOOLS`."""
MAX_QUERY_CHARS = 300
"""Longest ``search_chunks`` query (characters)."""
MAX_SEARCH_TOP_K = 10

SYSTEM_PROMPT = system_prompt()
"""The static system prompt (:func:`longdoc.extract.guide.system_prompt`)."""

FENCE_CODE_CHARS = 12
"""Hex characters of a fence code (48 bits)."""

CACHE_BREAKPOINT = {"type": "ephemeral"}
"""``cache_control`` of a block that ends a cached prefix (5-minute TTL)."""


def fence_code(*parts: str) -> str:
    """A fence code that none of ``parts`` contains: :data:`FENCE_CODE_CHARS` hex of SHA-256.

    Hashes a counter (0, 1, ...) and ``parts`` joined by NUL, and takes the first counter whose
    code occurs in no part, so the same content always gets the same code (prompts stay
    byte-identical, and cacheable, across sessions) and no fenced text can hold its own
    closing tag. Never raises; ``parts`` are the texts placed between the fences.
    """
    joined = "\x00".join(parts).encode("utf-8")
    salt = 0
    while True:
        code = hashlib.sha256(f"{salt}\x00".encode() + joined).hexdigest()[:FENCE_CODE_CHARS]
        if not any(code in part for part in parts):
            return code
        salt += 1


STABLE_FACT_KEYS = ("schema_version", "run_id", "doc_id", "doc_version", "clause_types")
"""CASE_FACTS fields that never change during a run; with the run's own exact values they form the
stable CASE_FACTS block ahead of the chunks (:func:`build_request`)."""


def _facts_body(facts: CaseFacts, pending: list[str] | None) -> dict:
    """CASE_FACTS as the model sees it: the schema's fields in order, values verbatim, ``pending`` and
    ``searched`` (the searches run for pending clause types, or for none named) added."""
    body = facts.model_dump(mode="json", exclude={"refusals", "retrieval_scores", "searches"})
    body["pending"] = facts.pending if pending is None else pending
    names = set(body["pending"])
    body["searched"] = [{"query": r.query, "clause_type": r.clause_type, "chunk_ids": r.chunk_ids}
                        for r in facts.searches if r.clause_type is None or r.clause_type in names]
    return body


def _facts_json(facts: CaseFacts, pending: list[str] | None) -> str:
    """CASE_FACTS as JSON (keys in schema order, values verbatim), ``pending`` added (default: facts.pending)."""
    return json.dumps(_facts_body(facts, pending), indent=1, ensure_ascii=False)


def split_facts(facts: CaseFacts, pending: list[str] | None, pinned: Mapping[str, str] | None) -> tuple[str, str]:
    """CASE_FACTS split for caching: ``(stable JSON, progress JSON)``, together exactly :func:`_facts_json`'s keys.

    The stable part holds what never changes during a run (:data:`STABLE_FACT_KEYS` and
    ``exact_values`` whose key is in ``pinned``, the run's own facts, :attr:`RunRecord.facts`;
    ``pinned=None``: every exact value); the progress part everything a session changes
    (``extracted_count``, ``resolved``, ``decisions``, ``open``, ``retrieval_pages``, ``pending``,
    ``searched``, and the exact values the harness pinned from verified quotes, under
    ``exact_values``). Values are copied verbatim (``ensure_ascii=False``, never reformatted).
    """
    body = _facts_body(facts, pending)
    values = body.pop("exact_values")
    own = {k: v for k, v in values.items() if pinned is None or k in pinned}
    stable = {k: body.pop(k) for k in STABLE_FACT_KEYS} | {"exact_values": own}
    found = {k: v for k, v in values.items() if k not in own}
    progress = {"extracted_count": body.pop("extracted_count"), "exact_values": found, **body}
    return json.dumps(stable, indent=1, ensure_ascii=False), json.dumps(progress, indent=1, ensure_ascii=False)


def _stable_code(hashed: list[str], avoided: list[str]) -> str:
    """A fence code derived from ``hashed`` alone (so it stays the same while they do) that none of
    ``hashed + avoided`` contains; in the (48-bit) case where an ``avoided`` text holds it, the code of
    all the parts (:func:`fence_code`), still safe but a new prefix. Never raises."""
    code = fence_code(*hashed)
    if any(code in part for part in avoided):
        return fence_code(*hashed, *avoided)
    return code


def render_case_facts(facts: CaseFacts, code: str, pending: list[str] | None = None) -> str:
    """Render CASE_FACTS as a JSON block fenced with ``code`` (see :func:`fence_code`)."""
    return f"<CASE_FACTS-{code}>\n{_facts_json(facts, pending)}\n</CASE_FACTS-{code}>"


def _pages(chunk: Chunk) -> str:
    if chunk.page_start is None:
        return "n/a"
    if chunk.page_start == chunk.page_end:
        return str(chunk.page_start)
    return f"{chunk.page_start}-{chunk.page_end}"


def _attrs(chunk: Chunk) -> str:
    """A chunk's fence attributes: id, page range, section and heading path (HTML-escaped)."""
    return (f'id="{escape(chunk.chunk_id)}" pages="{_pages(chunk)}" '
            f'section="{escape(chunk.section_id or "")}" heading="{escape(" > ".join(chunk.heading_path))}"')


def render_chunk(chunk: Chunk, code: str) -> str:
    """Fence one chunk with ``code``, its id, page range, section and heading path (text verbatim)."""
    return f"<chunk-{code} {_attrs(chunk)}>\n{chunk.text}\n</chunk-{code}>"


def _chunk_parts(chunks: list[Chunk]) -> list[str]:
    """What the chunk fences enclose (attributes and text), for :func:`fence_code`."""
    return [f"{_attrs(c)}\n{c.text}" for c in chunks]


def _chunk_block(chunks: list[Chunk], code: str, tag: str = "retrieved_chunks") -> str:
    return "\n\n".join([f"<{tag}-{code}>", *(render_chunk(c, code) for c in chunks), f"</{tag}-{code}>"])


def build_request(
    facts: CaseFacts, pending: list[ClauseType], chunks: list[Chunk], max_tokens: int, *, tools: list[dict],
    later_chunks: Sequence[Chunk] = (), pinned: Mapping[str, str] | None = None,
) -> ModelRequest:
    """Assemble one session's request: static prefix, then one user message of two text blocks.

    Block 1 is the stable CASE_FACTS (run id, document id and version, clause types and the run's
    own exact values, ``pinned``; see :func:`split_facts`) then ``chunks``, the run's stable chunk
    context; it carries the third cache breakpoint (after tools and system), so it is the same bytes
    in every session of a run and later sessions read it from the cache. Block 2 is what a session
    changes: ``later_chunks`` (next retrieval pages, earlier sessions' search results; omitted when
    empty), the CASE_FACTS progress counters (``<CASE_FACTS_PROGRESS-CODE>``: resolved, pending,
    searched, decisions, exact values pinned from quotes) and the task (``pending``, in order). Every
    part is fenced with one code derived from block 1 alone and contained in no part
    (:func:`_stable_code`). ``tools`` are the session's tool definitions
    (:func:`longdoc.extract.tools.tool_definitions`, strict or not), sent first.
    """
    definitions = json.dumps([{"name": c.name, "description": c.description, "hints": c.hints,
                               "answer_kind": c.answer_kind} | ({"alternatives": c.alternatives} if c.alternatives
                                                                else {}) for c in pending],
                             indent=1, ensure_ascii=False)
    stable_json, progress_json = split_facts(facts, [c.name for c in pending], pinned)
    later = list(later_chunks)
    code = _stable_code([stable_json, *_chunk_parts(chunks)], [progress_json, definitions, *_chunk_parts(later)])
    context = f"<CASE_FACTS-{code}>\n{stable_json}\n</CASE_FACTS-{code}>\n\n{_chunk_block(chunks, code)}"
    more = f"\n\n{_chunk_block(later, code, 'session_chunks')}" if later else ""
    progress = f"\n\n<CASE_FACTS_PROGRESS-{code}>\n{progress_json}\n</CASE_FACTS_PROGRESS-{code}>"
    task = (f"\n\n<task-{code}>\nPending clause types (handle each, in this order):\n{definitions}\n"
            "Call extract_clause or record_not_found for each. Quote verbatim; cite the chunk id"
            " and the page the quote is on. When the chunks do not hold a clause type, call search_chunks"
            f" with your own wording before recording not_found.\n</task-{code}>")
    return ModelRequest(
        system=[{"type": "text", "text": SYSTEM_PROMPT, "cache_control": dict(CACHE_BREAKPOINT)}],
        tools=tools,
        messages=[Message(role="user", content=[
            {"type": "text", "text": context, "cache_control": dict(CACHE_BREAKPOINT)},
            {"type": "text", "text": more + progress + task}])],
        max_tokens=max_tokens,
    )


def prompt_text(content: str | list[dict]) -> str:
    """A message's text: the string itself, or its text blocks concatenated in order."""
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


_FACTS_OPEN = re.compile(r"<CASE_FACTS-([0-9a-f]{%d})>\n" % FENCE_CODE_CHARS)


def parse_prompt(content: str) -> tuple[dict, list[tuple[str, str, str]], list[dict]]:
    """Read back a rendered prompt: ``(case_facts, [(chunk_id, pages, text)], clause definitions)``.

    Used by the offline baseline model, which sees only what Claude would see. Only the
    harness's own structure is read: the fence code comes from the opening CASE_FACTS tag at
    the very start, and only tags carrying it count, so chunk text cannot forge a chunk,
    a task or the end of a block. ``case_facts`` is the stable block merged with the
    ``CASE_FACTS_PROGRESS`` block when there is one (``exact_values`` of both joined; a prompt
    of the older one-block layout reads as before); chunks come in prompt order, the stable
    context's then the session's. Raises ValueError when a part is missing.
    """
    head = _FACTS_OPEN.match(content)
    code = re.escape(head.group(1)) if head else ""
    facts = re.match(rf"<CASE_FACTS-{code}>\n(.*?)\n</CASE_FACTS-{code}>", content, re.S) if head else None
    task = re.search(rf"<task-{code}>\nPending clause types[^\n]*\n(.*?)\nCall extract_clause", content, re.S)
    if not facts or not task or not head:
        raise ValueError("prompt lacks CASE_FACTS or task block")
    progress = re.search(rf"<CASE_FACTS_PROGRESS-{code}>\n(.*?)\n</CASE_FACTS_PROGRESS-{code}>", content, re.S)
    read = json.loads(facts.group(1))
    if progress:
        more = json.loads(progress.group(1))
        read = {**read, **more, "exact_values": {**read.get("exact_values", {}), **more.get("exact_values", {})}}
    chunk_re = re.compile(
        rf'<chunk-{code} id="([^"]*)" pages="([^"]*)" section="([^"]*)" heading="[^"]*">\n(.*?)\n</chunk-{code}>', re.S)
    chunks = [(unescape(m.group(1)), m.group(2), m.group(4)) for m in chunk_re.finditer(content)]
    return read, _document_order(chunks), json.loads(task.group(1))


_ORDINAL = re.compile(r":(\d+)$")


def _document_order(chunks: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """``chunks`` in document order when every id ends in ``:<ordinal>`` (the chunk id format,
    ``{doc_id}:{doc_version[:8]}:{ordinal:04d}``, :mod:`longdoc.ingest.chunk.assemble`), else as given.

    The stable context and the session's further chunks are each in document order; merged, the
    reader sees the one ordered context the older one-block layout gave (a stable sort, so a
    prompt already in order is unchanged)."""
    found = [_ORDINAL.search(c[0]) for c in chunks]
    if not all(found):
        return chunks
    ordinals = [int(m.group(1)) if m else 0 for m in found]
    return [c for _, c in sorted(zip(ordinals, chunks, strict=True), key=lambda x: x[0])]


def render_next_page(clause_type: str, chunks: list[Chunk]) -> str:
    """Tool-result text carrying the next page of retrieved chunks for one clause type (fenced, own code)."""
    if not chunks:
        return f"no further retrieved chunks for {clause_type}; it is closed with the occurrences recorded"
    code = fence_code(clause_type, *_chunk_parts(chunks))
    return (f"next retrieved chunks for {clause_type} (extract further occurrences, or call "
            f"record_not_found if there is none):\n{_chunk_block(chunks, code)}")


def render_search_result(query: str, chunks: list[Chunk], seen: list[str]) -> str:
    """Tool-result text of one ``search_chunks`` call: the new chunks fenced (own code) as in the
    prompt, and the ids left out because the session was already shown them."""
    note = f"; left out, already shown to you: {', '.join(seen)}" if seen else ""
    if not chunks:
        return f"search for {query!r}: no chunk you have not seen yet{note}"
    code = fence_code(query, *_chunk_parts(chunks))
    return (f"search for {query!r}: {len(chunks)} new chunk(s){note}\n"
            + _chunk_block(chunks, code, "search_results"))


_RESULTS_OPEN = re.compile(r"<search_results-([0-9a-f]{%d})>\n" % FENCE_CODE_CHARS)


def parse_search_result(text: str) -> list[tuple[str, str, str]]:
    """The ``(chunk_id, pages, text)`` of a :func:`render_search_result` answer (only tags carrying its code)."""
    head = _RESULTS_OPEN.search(text)
    if not head:
        return []
    code = re.escape(head.group(1))
    chunk_re = re.compile(
        rf'<chunk-{code} id="([^"]*)" pages="([^"]*)" section="([^"]*)" heading="[^"]*">\n(.*?)\n</chunk-{code}>', re.S)
    return [(unescape(m.group(1)), m.group(2), m.group(4)) for m in chunk_re.finditer(text)]


def prefix_tokens(request: ModelRequest) -> int:
    """Estimated tokens of the cached static prefix (tools + system), see :mod:`longdoc.core.tokens`."""
    from longdoc.core.tokens import estimate_tokens

    return estimate_tokens(json.dumps(request.tools) + json.dumps(request.system))
