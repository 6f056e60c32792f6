"""The tool harness: what happens to one ``tool_use`` block, without touching any store.

The model proposes; the harness decides. For each clause tool call (routed to it by the tool's
object, :mod:`longdoc.extract.tools`) it checks the clause type is
requested and still pending, verifies every citation against the document version's chunks
(:func:`longdoc.extract.citations.verify_citation`) and that ``clause_text`` is supported by
the quotes, and says what to store and what to answer (:class:`ToolOutcome`). Only
:func:`apply_extraction` writes CASE_FACTS, and only from verified extractions.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from longdoc.core.errors import CitationError
from longdoc.core.messages import ToolUseBlock
from longdoc.core.models import Chunk
from longdoc.core.records import CaseFacts, Citation, Extraction, ResolvedClause
from longdoc.core.values import EXACT_VALUE
from longdoc.extract.citations import check_clause_support, quote_span, verify_citation

def _whole_values(citation: Citation, chunk: Chunk | None) -> list[str]:
    """The exact values of one verified quote that lie whole inside it, verbatim, in order.

    Values are matched on the chunk's text (:data:`longdoc.core.values.EXACT_VALUE`), so a
    value the quote cuts (``"$10"`` of ``"$10 million"``) extends past the quote and is left
    out. Without the chunk, only values that touch neither end of the quote are kept.
    """
    span = quote_span(citation, chunk) if chunk is not None else None
    if chunk is not None and span is not None:
        start, end = span
        return [m.group(0).strip() for m in EXACT_VALUE.finditer(chunk.text) if m.start() >= start and m.end() <= end]
    quote = citation.quote
    return [m.group(0).strip() for m in EXACT_VALUE.finditer(quote) if m.start() > 0 and m.end() < len(quote)]


def exact_values(citations: list[Citation], chunks: dict[str, Chunk] | None = None) -> list[str]:
    """The exact values of ``citations``' quotes (amounts with currency and scale, percentages,
    ranges, dates; :mod:`longdoc.core.values`), each the whole span of the document, in order,
    duplicates once. ``chunks`` maps chunk_id to chunk (None: quotes alone, see :func:`_whole_values`).

    ``"... up to $10 million ... and $30 million in the aggregate"`` -> ``["$10 million", "$30 million"]``.
    """
    out: list[str] = []
    for citation in citations:
        for value in _whole_values(citation, (chunks or {}).get(citation.chunk_id)):
            if value not in out:
                out.append(value)
    return out


def instance_key(citation: Citation, chunk: Chunk | None = None) -> str:
    """Deterministic id of one clause instance: 12 hex of SHA-256 over its first citation's position.

    The position is the quote's first character in the document (``chunk.char_start`` plus
    its offset in the chunk, :func:`~longdoc.extract.citations.quote_span`), so one sentence
    cited through either of two overlapping chunks is one instance, and the same occurrence
    extracted again (a retried invocation) gets the same key and overwrites. Without the
    chunk (or the quote in it), ``chunk_id``, a newline and the whitespace-collapsed quote.
    """
    span = quote_span(citation, chunk) if chunk is not None else None
    if chunk is not None and span is not None:
        seed = f"doc@{chunk.char_start + span[0]}"
    else:
        seed = f"{citation.chunk_id}\n{' '.join(citation.quote.split())}"
    return hashlib.sha256(seed.encode()).hexdigest()[:12]


def _record_instance(facts: CaseFacts, entry: ResolvedClause, extraction: Extraction,
                     chunks: dict[str, Chunk] | None) -> None:
    """Add a new found instance to ``entry``: pages, sections, a decision line and its exact values.

    Exact values are pinned only whole (:func:`exact_values`), under ``"<clause> value <n>"``
    (``"<clause> #<k> value <n>"`` for the k-th instance); a key already pinned is kept.
    """
    clause = extraction.clause_type
    entry.instances.append(extraction.instance or clause)
    cites = extraction.citations
    entry.pages = sorted(set(entry.pages) | {c.page for c in cites if c.page is not None})
    entry.section_ids = list(dict.fromkeys([*entry.section_ids, *(c.section_id for c in cites if c.section_id)]))
    facts.extracted_count += 1
    where = ", ".join(f"p. {c.page}" + (f" §{c.section_id}" if c.section_id else "") for c in cites)
    count = len(entry.instances)
    facts.decisions.append(f"{clause}: found ({where})" if count == 1 else f"{clause}: found instance {count} ({where})")
    base = f"{clause} value" if count == 1 else f"{clause} #{count} value"
    for n, value in enumerate(exact_values(cites, chunks), 1):
        facts.exact_values.setdefault(f"{base} {n}", value)


def apply_extraction(facts: CaseFacts, extraction: Extraction, chunks: dict[str, Chunk] | None = None) -> None:
    """Record a verified extraction in CASE_FACTS (harness-side; never model-written); idempotent.

    ``chunks`` (chunk_id -> chunk of the run's document version) lets exact values be
    checked against the document around each quote (see :func:`exact_values`).

    ``not_found`` resolves the clause type; a found instance is added once (by its
    ``instance`` key) to the clause type's entry, which stays open until an extraction with
    ``final=True`` resolves it. A clause type already resolved is left as it is.
    """
    clause = extraction.clause_type
    if clause in facts.resolved:
        return
    if extraction.status == "not_found":
        facts.resolved[clause] = ResolvedClause(status="not_found")
        facts.decisions.append(f"{clause}: not_found")
        return
    entry = facts.open.get(clause) or ResolvedClause(status="found")
    if (extraction.instance or clause) not in entry.instances:
        _record_instance(facts, entry, extraction, chunks)
    if extraction.final:
        facts.resolved[clause] = entry
        facts.open.pop(clause, None)
    else:
        facts.open[clause] = entry


@dataclass
class ToolOutcome:
    """What the harness did with one tool call.

    ``text`` is the ``tool_result`` content sent back (``is_error`` marks it an error);
    ``extraction`` is what to store and apply (None: nothing); ``rejected_citation`` is
    True when citation verification refused the call; ``close`` names an open
    multi-instance clause type the model closed; ``next_page`` names a clause type whose
    next page of retrieved chunks the model asked for (``more_instances: true``).
    """

    text: str
    extraction: Extraction | None = None
    is_error: bool = False
    rejected_citation: bool = False
    close: str | None = None
    next_page: str | None = None


def refused_clause(block: ToolUseBlock, facts: CaseFacts) -> ToolOutcome | None:
    """The answer to a tool call whose ``clause_type`` was not requested or is already resolved (else None).

    Every tool call that names a clause type goes through this first (an unknown tool's too,
    :mod:`longdoc.extract.tools`); ``facts`` is only read.
    """
    clause = block.input.get("clause_type")
    if not isinstance(clause, str) or clause not in facts.clause_types:
        return ToolOutcome(f"clause_type {clause!r} was not requested; pending: {facts.pending}", is_error=True)
    if clause in facts.resolved:
        return ToolOutcome(f"{clause} is already resolved; do not repeat it", is_error=True)
    return None


def not_found_outcome(block: ToolUseBlock, facts: CaseFacts, model: str, session: int) -> ToolOutcome:
    """``record_not_found`` (never raises): close an open multi-instance clause type, or record ``not_found``.

    ``model`` and ``session`` are recorded on the extraction; ``facts`` is only read.
    """
    refused = refused_clause(block, facts)
    if refused is not None:
        return refused
    clause = block.input["clause_type"]
    if clause in facts.open:
        return ToolOutcome(f"closed {clause}: {len(facts.open[clause].instances)} occurrence(s) recorded", close=clause)
    return ToolOutcome(f"recorded {clause}: not_found",
                       Extraction(clause_type=clause, status="not_found", model=model, session=session))


def _verified(tool_input: dict[str, Any], chunks: dict[str, Chunk]) -> tuple[list[Citation], str]:
    """The verified citations and the supported ``clause_text`` of an ``extract_clause`` call.

    Raises :class:`CitationError` (no citation, a citation not verbatim in its chunk, a blank
    or unsupported ``clause_text``) or :class:`pydantic.ValidationError` (a malformed citation).
    """
    raw = tool_input.get("citations") or []
    if not raw:
        raise CitationError("citations must hold at least one {chunk_id, page, quote}")
    cites = [verify_citation(Citation.model_validate(c), chunks) for c in raw]
    text = tool_input.get("clause_text")
    if not isinstance(text, str) or not text.strip():
        raise CitationError("clause_text must be a non-empty string")
    check_clause_support(text, [c.quote for c in cites])
    return cites, text


def extract_outcome(block: ToolUseBlock, facts: CaseFacts, chunks: dict[str, Chunk], model: str,
                    session: int) -> ToolOutcome:
    """``extract_clause`` (never raises): verify it and say what to store and what to answer.

    ``chunks`` maps chunk_id to the run's document version's chunks; ``model`` and
    ``session`` are recorded on the extraction. ``facts`` is only read.
    """
    refused = refused_clause(block, facts)
    if refused is not None:
        return refused
    clause = block.input["clause_type"]
    try:
        cites, text = _verified(block.input, chunks)
    except (CitationError, ValidationError) as exc:
        return ToolOutcome(f"rejected: {exc}", is_error=True, rejected_citation=True)
    instance = instance_key(cites[0], chunks.get(cites[0].chunk_id))
    if instance in (facts.open.get(clause) or ResolvedClause(status="found")).instances:
        return ToolOutcome(f"this occurrence of {clause} is already recorded; do not repeat it", is_error=True)
    more = block.input.get("more_instances") is True
    extraction = Extraction(clause_type=clause, status="found", clause_text=text, citations=cites, model=model,
                            session=session, instance=instance, final=not more)
    return ToolOutcome(f"recorded {clause}: found", extraction, next_page=clause if more else None)
