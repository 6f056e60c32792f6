"""Pydantic schemas shared by every layer of longdoc.

All offsets are character offsets (``str`` indices) into :attr:`ParsedDocument.text`;
all token counts are estimates from :func:`longdoc.domain.tokens.estimate_tokens`;
pages are 1-based physical page indexes (``None`` for formats without pages).
Exact values (money, ids, dates) are strings end to end and never floats.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

CASE_FACTS_SCHEMA_VERSION = 2
"""Version of the :class:`CaseFacts` schema written into checkpoints.

History: 1 = first release; 2 adds multi-instance clause types (``open``,
``ResolvedClause.instances``) and the per-clause retrieval cursor (``retrieval_pages``).
A version-1 checkpoint is migrated on load by :func:`migrate_checkpoint_data`; any other
version is refused (:class:`longdoc.errors.CheckpointSchemaError`).
"""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PageSpan(_Frozen):
    """One page of a parsed document: ``text[char_start:char_end]`` is its text.

    ``page`` is the 1-based physical page index; ``None`` for formats without pages (text,
    Markdown, HTML, DOCX). ``label`` is the printed page number (``"iv"``, ``"14"``) from the
    PDF's page labels or, failing those, from the running header or footer; ``None`` when
    the page prints none.
    """

    page: int | None
    char_start: int = Field(ge=0)
    char_end: int = Field(ge=0)
    label: str | None = None


class Furniture(_Frozen):
    """A running header or footer line removed from a PDF page's text (kept for reference).

    ``page`` is the 1-based physical page; ``position`` is ``"header"`` (top of the page)
    or ``"footer"`` (bottom); ``text`` is the line as extracted.
    """

    page: int
    position: Literal["header", "footer"]
    text: str


class HeadingMark(_Frozen):
    """A line whose role the format itself marks.

    ``kind``: ``heading`` (HTML ``<h1>``-``<h6>``, a DOCX heading style; always a section
    heading), ``list_item`` (an HTML ``<li>``: never a heading, whatever its number) or
    ``numbered`` (a DOCX paragraph numbered by Word's decimal list numbering: a section
    when its number fits the document's sequence, title or not). ``text[char_start:char_end]``
    is the line; ``level`` is 1 (top) to 9.
    """

    char_start: int = Field(ge=0)
    char_end: int = Field(ge=0)
    level: int = Field(ge=1, le=9)
    kind: Literal["heading", "list_item", "numbered"] = "heading"


class ParsedDocument(_Frozen):
    """A document decoded once into one text with a page map.

    Shapes: ``text`` is the whole document text (PDF pages joined by ``"\\n"``), the one
    text every later offset refers to; for PDFs it is the *cleaned* text (running headers
    and footers removed, soft line-end hyphens joined, ligatures spelt out), and the
    removed lines are kept in ``furniture``. ``pages`` lists one :class:`PageSpan` per page
    in order (one span with ``page=None`` for formats without pages). ``headings`` lists
    headings the format marks itself (HTML, DOCX); empty for PDF and text, where the
    chunker detects them. ``pages_needing_ocr`` lists 1-based pages that carry an image
    but no text layer. ``content_sha256`` is the hex digest of the source bytes;
    ``doc_version`` is its first 16 hex characters.
    """

    source: str
    media_type: str
    content_sha256: str
    text: str
    pages: list[PageSpan]
    furniture: list[Furniture] = Field(default_factory=list)
    headings: list[HeadingMark] = Field(default_factory=list)
    pages_needing_ocr: list[int] = Field(default_factory=list)

    @property
    def doc_version(self) -> str:
        """First 16 hex characters of the source bytes' SHA-256."""
        return self.content_sha256[:16]

    @property
    def page_count(self) -> int:
        """Number of physical pages (0 for formats without pages)."""
        return sum(1 for p in self.pages if p.page is not None)

    def page_at(self, offset: int) -> int | None:
        """Return the page holding character ``offset`` of :attr:`text` (``None`` without pages)."""
        for span in self.pages:
            if span.char_start <= offset < span.char_end:
                return span.page
        if self.pages and offset >= self.pages[-1].char_end:
            return self.pages[-1].page
        # Offset falls on a page separator: attribute it to the next page.
        for span in self.pages:
            if offset < span.char_start:
                return span.page
        return None

    def label_at(self, offset: int) -> str | None:
        """Return the printed page label of the page holding ``offset`` (``None`` if unlabelled)."""
        page = self.page_at(offset)
        return next((p.label for p in self.pages if p.page == page and page is not None), None)


METADATA_VALUE_MAX_CHARS = 200
"""Longest accepted document metadata value, in characters (our own rule: these are short
labels copied onto every chunk; S3 itself caps all user metadata of an object at 2 KB,
https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingMetadata.html)."""


class DocumentMetadata(_Frozen):
    """Optional business metadata of a document, copied onto each of its chunks.

    Sources: S3 object metadata (``x-amz-meta-doc-type`` etc.) and/or a ``<file>.metadata.json``
    sidecar; the sidecar wins key by key (see :func:`longdoc.domain.ingest.document_metadata`).
    All values are free strings (``term`` e.g. ``"2024-01-01/2024-12-31"``) of 1 to
    :data:`METADATA_VALUE_MAX_CHARS` characters without control characters; anything else
    (including a non-finite number such as JSON ``1e400`` or ``NaN``, which Python's JSON
    reader turns into ``inf``/``nan``) raises :class:`pydantic.ValidationError` naming the field.
    """

    doc_type: str | None = Field(default=None, min_length=1, max_length=METADATA_VALUE_MAX_CHARS)
    line_of_business: str | None = Field(default=None, min_length=1, max_length=METADATA_VALUE_MAX_CHARS)
    term: str | None = Field(default=None, min_length=1, max_length=METADATA_VALUE_MAX_CHARS)

    @field_validator("doc_type", "line_of_business", "term", mode="before")
    @classmethod
    def _finite(cls, value: Any) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("must be a finite number (not infinity or NaN)")
        return value

    @field_validator("doc_type", "line_of_business", "term")
    @classmethod
    def _printable(cls, value: str | None) -> str | None:
        if value is not None and any(ord(ch) < 32 or 127 <= ord(ch) <= 159 or ch in "\u2028\u2029" for ch in value):
            raise ValueError("must not contain control characters or line separators "
                             "(line breaks, tabs, NUL, U+0085, U+2028, U+2029)")
        return value

    @classmethod
    def from_mapping(cls, values: dict[str, Any] | None) -> "DocumentMetadata":
        """Build from a dict whose keys may use ``-`` or ``_`` and any case (S3 metadata keys
        arrive lower-cased with dashes); unknown keys are ignored; ``None`` or blank values
        mean "not set". Strings are stripped and numbers (JSON ``"term": 2024``) become
        strings; any other type (list, object, true/false) and a non-finite float (``inf``,
        ``nan``) are left for validation to reject.
        Raises :class:`pydantic.ValidationError` naming the field for a bad value."""
        wanted = {"doc_type", "line_of_business", "term"}
        picked: dict[str, Any] = {}
        for key, value in (values or {}).items():
            name = str(key).strip().lower().replace("-", "_")
            if name not in wanted or value is None:
                continue
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                value = str(value)
            if isinstance(value, str):
                value = value.strip()
                if not value:
                    continue
            picked[name] = value
        return cls(**picked)


class SectionSpan(_Frozen):
    """A numbered section (or the preamble, ``section_id=None``) as a range of document text."""

    section_id: str | None
    heading_path: list[str] = Field(default_factory=list)
    char_start: int = Field(ge=0)
    char_end: int = Field(ge=0)


class Chunk(_Frozen):
    """A retrievable piece of a document, cut at its real joints.

    ``chunk_id`` is ``"{doc_id}:{doc_version[:8]}:{ordinal:04d}"`` and is stable while the
    document bytes do not change. ``text == document.text[char_start:char_end]``.
    ``section_id`` is the number people cite (``"4.2"``), with ``#n`` when a section is
    split (``"4.2#2"``), or ``None`` when the text precedes any numbered section.
    ``page_spans`` and ``section_spans`` (absolute offsets) list the pages and whole
    sections the chunk touches, so a quote resolves to exactly one page and one section.
    ``token_count`` is an estimate; ``content_hash`` is SHA-256 hex of ``text``.
    ``page_labels`` are the printed labels of pages ``page_start..page_end`` in order
    (``None`` for an unlabelled page; empty without pages). ``overlap_chars`` is how many
    leading characters repeat the end of the previous chunk (a split section's
    continuation); ``overlap_missing`` is True on a continuation that could not repeat
    any whole sentence because the previous chunk's last one is over the overlap budget.
    ``doc_type``, ``line_of_business`` and ``term`` are optional document metadata (S3
    object metadata or a ``<file>.metadata.json`` sidecar) copied onto every chunk.
    """

    chunk_id: str
    doc_id: str
    doc_version: str
    ordinal: int = Field(ge=0)
    source: str
    page_start: int | None
    page_end: int | None
    section_id: str | None
    heading_path: list[str] = Field(default_factory=list)
    text: str
    char_start: int = Field(ge=0)
    char_end: int = Field(ge=0)
    token_count: int = Field(ge=0)
    content_hash: str
    oversize: bool = False
    page_spans: list[PageSpan] = Field(default_factory=list)
    section_spans: list[SectionSpan] = Field(default_factory=list)
    page_labels: list[str | None] = Field(default_factory=list)
    overlap_chars: int = Field(0, ge=0)
    overlap_missing: bool = False
    doc_type: str | None = None
    line_of_business: str | None = None
    term: str | None = None

    @property
    def section_ids(self) -> list[str]:
        """Every section id in the chunk, in order (several when small sections share it)."""
        return [s.section_id for s in self.section_spans if s.section_id]

    def page_of(self, offset_in_chunk: int) -> int | None:
        """Return the page of a chunk-relative character offset (``None`` without pages)."""
        absolute = self.char_start + offset_in_chunk
        page = self.page_start
        for span in self.page_spans:
            if absolute >= span.char_start:
                page = span.page
        return page

    def label_of(self, offset_in_chunk: int) -> str | None:
        """Return the printed page label of a chunk-relative offset (``None`` if unlabelled)."""
        absolute = self.char_start + offset_in_chunk
        label = self.page_spans[0].label if self.page_spans else None
        for span in self.page_spans:
            if absolute >= span.char_start:
                label = span.label
        return label

    def heading_path_of(self, offset_in_chunk: int) -> list[str]:
        """Return the heading path of the section holding a chunk-relative offset."""
        absolute = self.char_start + offset_in_chunk
        path = self.heading_path
        for span in self.section_spans:
            if absolute >= span.char_start:
                path = span.heading_path
        return list(path)

    def section_of(self, offset_in_chunk: int) -> str | None:
        """Return the section id (with split suffix) of a chunk-relative character offset."""
        if len(self.section_spans) <= 1:
            return self.section_id
        absolute = self.char_start + offset_in_chunk
        found = self.section_spans[0].section_id
        for span in self.section_spans:
            if absolute >= span.char_start:
                found = span.section_id
        return found


class DocumentRecord(BaseModel):
    """Registry entry for one ingested document version.

    ``status``: ``INGESTING`` while work is under way (or was cut short and awaits the
    redelivery that resumes it), ``READY`` when chunks are stored and indexed, ``FAILED``
    with ``reason`` (a document error is final; any other error is retried by SQS and
    resumes from the recorded progress), ``DELETED`` once the source object was removed
    (vectors gone; registry entry and chunk list kept for past citations).

    Progress of the current attempt, so a redelivered message continues instead of
    starting over: ``stage`` (``chunked``, ``embedding``, ``upserting``, ``done``),
    ``embedded`` (chunks with a vector stored in the embedding cache), ``upserted``
    (chunks whose vectors are in the index, in ordinal order), ``reused`` (vectors taken
    from the previous version's cache instead of embedding again), ``attempts``.
    ``source_key`` is the full object key; ``previous_version`` the version that was
    latest when this one started; ``metadata`` the document metadata its chunks carry
    (empty for records written before it was kept). Durations are seconds as decimal strings
    (``duration_seconds``; ``timings`` per stage of the last attempt).
    """

    doc_id: str
    doc_version: str
    source: str
    status: Literal["INGESTING", "READY", "FAILED", "DELETED"]
    reason: str | None = None
    pages: int = 0
    chunks: int = 0
    content_sha256: str = ""
    embedding_model: str | None = None
    updated_at: str = ""
    duration_seconds: str | None = None
    pages_needing_ocr: list[int] = Field(default_factory=list)
    source_key: str | None = None
    previous_version: str | None = None
    stage: str | None = None
    embedded: int = 0
    upserted: int = 0
    reused: int = 0
    embedding_tokens: int = 0
    attempts: int = 0
    timings: dict[str, str] = Field(default_factory=dict)
    metadata: DocumentMetadata = Field(default_factory=DocumentMetadata)


class Citation(BaseModel):
    """Where an extraction comes from: a chunk, the page of the quote, and the verbatim quote.

    After verification ``page`` (physical, 1-based), ``page_label`` (printed), ``section_id``
    and ``heading_path`` all describe the quote's first character.
    """

    model_config = ConfigDict(extra="forbid")

    chunk_id: str = Field(min_length=1)
    page: int | None = None
    section_id: str | None = None
    quote: str = Field(min_length=1)
    page_label: str | None = None
    heading_path: list[str] = Field(default_factory=list)


class Extraction(BaseModel):
    """One clause instance: ``found`` with at least one citation, or ``not_found`` with none.

    ``instance`` identifies one occurrence of a clause type (several termination rights are
    several instances); it is derived by the harness from the first citation (see
    :func:`longdoc.domain.session.instance_key`) and is ``""`` for ``not_found``. ``final``
    is True when this instance closed its clause type (no further instance exists).
    Stores key extractions by :attr:`key`, so writing the same instance twice overwrites.
    """

    model_config = ConfigDict(extra="forbid")

    clause_type: str
    status: Literal["found", "not_found"]
    clause_text: str | None = None
    citations: list[Citation] = Field(default_factory=list)
    model: str = ""
    session: int = 0
    instance: str = ""
    final: bool = True

    @property
    def key(self) -> str:
        """Store key: the clause type, plus ``#instance`` for a found instance."""
        return f"{self.clause_type}#{self.instance}" if self.instance else self.clause_type

    @model_validator(mode="after")
    def _citations_match_status(self) -> "Extraction":
        if self.status == "found" and not self.citations:
            raise ValueError("a found extraction needs at least one citation")
        if self.status == "not_found" and self.citations:
            raise ValueError("a not_found extraction carries no citations")
        return self


class Usage(BaseModel):
    """Token usage summed over model calls (all values are tokens)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def add(self, other: "Usage") -> "Usage":
        """Return the element-wise sum of two usages."""
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens
            + other.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
        )


class ResolvedClause(BaseModel):
    """CASE_FACTS summary of one clause type (pages, sections, instance ids; never the text)."""

    status: Literal["found", "not_found"]
    pages: list[int] = Field(default_factory=list)
    section_ids: list[str] = Field(default_factory=list)
    instances: list[str] = Field(default_factory=list)


class CaseFacts(BaseModel):
    """The immutable-by-the-model facts pinned at the top of every session's prompt.

    Only the harness changes it (after each verified tool call). ``exact_values`` are
    verbatim strings (``"$247.83"``), copied byte for byte into every prompt.
    ``schema_version`` guards checkpoints written by other code versions.
    """

    schema_version: int = CASE_FACTS_SCHEMA_VERSION
    run_id: str
    doc_id: str
    doc_version: str
    clause_types: list[str]
    extracted_count: int = 0
    resolved: dict[str, ResolvedClause] = Field(default_factory=dict)
    decisions: list[str] = Field(default_factory=list)
    exact_values: dict[str, str] = Field(default_factory=dict)
    open: dict[str, ResolvedClause] = Field(default_factory=dict)
    retrieval_pages: dict[str, int] = Field(default_factory=dict)

    @property
    def pending(self) -> list[str]:
        """Requested clause types not yet resolved (including open multi-instance ones), in request order."""
        return [c for c in self.clause_types if c not in self.resolved]

    def progress_marker(self) -> tuple[int, int]:
        """``(resolved clause types, found instances)``: grows whenever a session makes progress."""
        instances = sum(len(r.instances) for r in self.resolved.values()) + sum(
            len(r.instances) for r in self.open.values()
        )
        return len(self.resolved), instances


def migrate_checkpoint_data(data: dict[str, Any]) -> dict[str, Any]:
    """Bring a stored checkpoint (parsed JSON) to :data:`CASE_FACTS_SCHEMA_VERSION`.

    Version 1 -> 2: the new fields (``open``, ``retrieval_pages``, ``instances``) start
    empty, which is exactly what a version-1 run had (one instance per clause type).
    Raises ``ValueError`` naming the version for anything else (missing, newer, unknown).
    """
    facts = data.get("case_facts") or {}
    stored = facts.get("schema_version")
    if stored == CASE_FACTS_SCHEMA_VERSION:
        return data
    if stored == 1:
        return {**data, "case_facts": {**facts, "schema_version": CASE_FACTS_SCHEMA_VERSION}}
    raise ValueError(f"CASE_FACTS schema_version {stored!r} cannot be read; this code reads "
                     f"{CASE_FACTS_SCHEMA_VERSION} and migrates 1")


class CallRecord(BaseModel):
    """Usage of one model call (tokens), as recorded on the run's checkpoint."""

    session: int
    model: str
    stop_reason: str
    usage: Usage


CHECKPOINT_TTL_SECONDS = 30 * 24 * 60 * 60
"""A checkpoint's lifetime after its run ends, in seconds (30 days; DynamoDB TTL attribute ``expires_at``)."""

MAX_CALL_RECORDS = 300
"""Per-call usage records kept on a checkpoint (about 150 bytes each, far below DynamoDB's 400 KB item limit)."""


class Checkpoint(BaseModel):
    """Durable state between sessions; ``version`` increases by one per save (optimistic concurrency).

    ``stalled_sessions`` counts consecutive sessions without progress (see
    :func:`longdoc.domain.session.run_session`); ``rejected_citations`` counts tool calls
    refused by citation verification; ``calls`` keeps the usage of the last
    :data:`MAX_CALL_RECORDS` model calls (``usage`` is the total over all of them);
    ``expires_at`` (epoch seconds) is set only once the run has ended, and becomes the
    DynamoDB TTL attribute.
    """

    run_id: str
    version: int = Field(ge=0)
    case_facts: CaseFacts
    sessions: int = 0
    last_stop_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    updated_at: str = ""
    stalled_sessions: int = 0
    rejected_citations: int = 0
    calls: list[CallRecord] = Field(default_factory=list)
    expires_at: int | None = None


class RunRecord(BaseModel):
    """One extraction run as the API and CLI report it."""

    run_id: str
    doc_id: str
    doc_version: str
    clause_types: list[str]
    status: Literal["PENDING", "RUNNING", "SUCCEEDED", "FAILED"] = "PENDING"
    model: str = ""
    max_tokens: int = 4096
    top_k: int = 5
    facts: dict[str, str] = Field(default_factory=dict)
    execution_arn: str | None = None
    error: str | None = None
    cause: str | None = None
    created_at: str = ""
    updated_at: str = ""
    executions: list[str] = Field(default_factory=list)
    checkpoint_version: int | None = None
    failed_state_entered: str | None = None
    request_hash: str | None = None


# --- Messages-API-shaped model exchange (our own types; the Claude adapter converts) ---


class TextBlock(BaseModel):
    """A text content block (Messages API shape)."""

    type: Literal["text"] = "text"
    text: str


class ToolUseBlock(BaseModel):
    """A tool call emitted by the model (Messages API shape); ``input`` is the parsed JSON."""

    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any]


class ToolResultBlock(BaseModel):
    """The harness's answer to one tool call (Messages API shape)."""

    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str
    is_error: bool = False


ContentBlock = TextBlock | ToolUseBlock | ToolResultBlock

StopReason = Literal[
    "end_turn",
    "max_tokens",
    "tool_use",
    "pause_turn",
    "refusal",
    "stop_sequence",
    "model_context_window_exceeded",
]


class Message(BaseModel):
    """One conversation turn. ``content`` is a string or a list of blocks."""

    role: Literal["user", "assistant"]
    content: str | list[dict[str, Any]]


class ModelRequest(BaseModel):
    """Everything one model call needs, in Messages API order.

    ``system`` and ``tools`` are the static, cacheable prefix (blocks may carry
    ``cache_control``); ``messages`` carry CASE_FACTS, retrieved chunks and the task.
    ``max_tokens`` caps output tokens for this call.
    """

    system: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    messages: list[Message]
    max_tokens: int = Field(gt=0)
    tool_choice: dict[str, Any] = Field(default_factory=lambda: {"type": "auto"})
    timeout_seconds: float | None = Field(
        None, gt=0, description="wall-clock budget for this call, retries included (seconds); None: the client's default"
    )


class ModelResponse(BaseModel):
    """A model's reply in Messages API shape, whichever model produced it."""

    id: str
    model: str
    content: list[TextBlock | ToolUseBlock]
    stop_reason: StopReason
    usage: Usage
